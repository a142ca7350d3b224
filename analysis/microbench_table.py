#!/usr/bin/env python3
"""Turns Google Benchmark JSON files (with repetitions) of spc_bench and
spc_read_bench into a Markdown table: median ns per operation over the
repetitions, with the minimum and maximum, and the ratios the project's
targets are stated in.

usage: microbench_table.py BENCH_JSON [BENCH_JSON ...] [--out OUTPUT_MD]"""
import argparse
import json
import os
import statistics
import sys

# (row label, benchmark name, divisor): ns per operation = cpu_time / divisor.
# cpu_time is per iteration of one thread, so a two-thread row is the cost
# one thread pays per update while the other updates too.
ROWS = [
    ("update, SPC compiled out", "BM_Update_CompiledOut", 1),
    ("update, compiled in, counter off", "BM_Update_Off", 1),
    ("update on, 1 thread, sharded", "BM_Update_On_Sharded/real_time/threads:1", 1),
    ("update on, 1 thread, atomic", "BM_Update_On_Atomic/real_time/threads:1", 1),
    ("update on, 2 threads same counter, sharded", "BM_Update_On_Sharded/real_time/threads:2", 1),
    ("update on, 2 threads same counter, atomic", "BM_Update_On_Atomic/real_time/threads:2", 1),
    ("update on, 2 threads own counters, sharded", "BM_Update_On_Sharded_OwnCounter/real_time/threads:2", 1),
    ("update on, 2 threads own counters, atomic", "BM_Update_On_Atomic_OwnCounter/real_time/threads:2", 1),
    ("SPC_RECORD on (this build's storage)", "BM_Update_On_Macro", 1),
    ("timer start+stop, on", "BM_TimerPair_On", 1),
    ("timer start+stop, off", "BM_TimerPair_Off", 1),
    ("raw cycle counter pair (rdtsc x2)", "BM_RawCycleCounterPair", 1),
    ("clock_gettime pair", "BM_ClockGettimePair", 1),
    ("read all counters, 1 thread", "BM_ReadAll/1", 1),
    ("read all counters, 8 threads", "BM_ReadAll/8", 1),
    ("read all counters, 64 threads", "BM_ReadAll/64", 1),
    ("read all, per counter, 64 threads", "BM_ReadAll/64", "counters"),
    ("read one counter, 1 thread", "BM_ReadOne/1", 1),
    ("read one counter, 64 threads", "BM_ReadOne/64", 1),
    ("PAPI_read of the 7 Table 4 counters (in MPI)", "BM_Read7_PAPI", 1),
    ("7 MPI_T_pvar_read of the same (in MPI)", "BM_Read7_MPIT", 1),
    ("7 spc_read of the same, the core (in MPI)", "BM_Read7_Core", 1),
]

# (claim, numerator row, denominator row or None, limit, how the limit reads)
TARGETS = [
    ("off <= 0.5 ns", "update, compiled in, counter off", None, 0.5),
    ("on, 1 thread <= 1.5 ns", "SPC_RECORD on (this build's storage)", None, 1.5),
    ("sharded, 2 threads on one counter <= 2x 1 thread",
     "update on, 2 threads same counter, sharded", "update on, 1 thread, sharded", 2.0),
    ("timer pair <= raw pair + 2 ns", "timer start+stop, on", "raw cycle counter pair (rdtsc x2)", "+2"),
]


def per_repetition(benchmarks, name, divisor):
    values = []
    for b in benchmarks:
        if b.get("run_type") == "iteration" and b["run_name"] == name:
            scale = {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
            div = b[divisor] if isinstance(divisor, str) else divisor
            values.append(b["cpu_time"] * scale / div)
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", nargs="+", help="Google Benchmark JSON output")
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()
    benchmarks, context = [], {}
    for path in args.json:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as error:
            sys.exit(f"microbench_table.py: cannot read {path}: {error}")
        benchmarks += data.get("benchmarks", [])
        context = context or data.get("context", {})
    medians, lines = {}, []
    lines.append("| operation | median ns | min | max | runs |")
    lines.append("|---|---:|---:|---:|---:|")
    for label, name, divisor in ROWS:
        values = per_repetition(benchmarks, name, divisor)
        if not values:
            lines.append(f"| {label} | not run | | | 0 |")
            continue
        medians[label] = statistics.median(values)
        lines.append(f"| {label} | {medians[label]:.2f} | {min(values):.2f} | {max(values):.2f} | {len(values)} |")
    lines.append("")
    lines.append("| target | measured | met |")
    lines.append("|---|---|---|")
    for claim, numerator, denominator, limit in TARGETS:
        if numerator not in medians or (denominator and denominator not in medians):
            lines.append(f"| {claim} | not measured | no |")
        elif denominator is None:
            lines.append(f"| {claim} | {medians[numerator]:.2f} ns | {'yes' if medians[numerator] <= limit else 'no'} |")
        elif limit == "+2":
            diff = medians[numerator] - medians[denominator]
            lines.append(f"| {claim} | {diff:+.2f} ns | {'yes' if diff <= 2 else 'no'} |")
        else:
            ratio = medians[numerator] / medians[denominator]
            lines.append(f"| {claim} | {ratio:.2f}x | {'yes' if ratio <= limit else 'no'} |")
    atomic_two = medians.get("update on, 2 threads same counter, atomic")
    sharded_two = medians.get("update on, 2 threads same counter, sharded")
    if atomic_two and sharded_two:
        lines.append(f"| (atomic mode, 2 threads on one counter, for comparison) | "
                     f"{atomic_two / sharded_two:.1f}x the sharded cost | |")
    lines.append("")
    lines.append(f"Storage of this build: {context.get('spc_storage', '?')}; "
                 f"{context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz; "
                 f"run {context.get('date', '?')}; Google Benchmark library built as "
                 f"{context.get('library_build_type', '?')}.")
    text = "\n".join(lines) + "\n"
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
