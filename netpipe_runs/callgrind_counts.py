#!/usr/bin/env python3
"""Instructions per message of the send path and the receive match path, for
each build and counter configuration, counted by callgrind (repeatable to
the instruction, unlike wall time on this machine).

A 1-byte ping-pong (bench/pingpong.c) runs on 2 ranks over vader under
`valgrind --tool=callgrind`, collecting only inside PMPI_Send and
mca_pml_ob1_recv_frag_callback_match; inclusive instructions divided by the
messages each rank sent (received) give instructions per message.

usage: netpipe_runs/callgrind_counts.py [--messages N] [--out DIR]
Results: DIR/summary.csv, DIR/summary.md, DIR/meta.json and the raw
callgrind files (default DIR: results/callgrind/<UTC time>)."""
import argparse
import csv
import datetime
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import study  # noqa: E402

FUNCTIONS = {"send": "PMPI_Send", "match": "mca_pml_ob1_recv_frag_callback_match"}


def inclusive_instructions(callgrind_file):
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", callgrind_file],
                          check=True, capture_output=True, text=True).stdout
    found = {}
    for line in text.splitlines():
        for key, function in FUNCTIONS.items():
            if re.search(r"[ :]" + re.escape(function) + r"( |$)", line) and key not in found:
                found[key] = int(line.split()[0].replace(",", ""))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20000, help="messages each rank sends (default 20000)")
    parser.add_argument("--out", help="results folder (default results/callgrind/<UTC time>)")
    args = parser.parse_args()
    if args.messages < 100:
        parser.error("--messages must be at least 100")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = os.path.abspath(args.out or os.path.join(study.REPO, "results", "callgrind", stamp))
    os.makedirs(out, exist_ok=True)

    prefixes = {variant: study.build(variant) for variant in sorted({c.build for c in study.CONFIGURATIONS})}
    programs = {}
    for variant, prefix in prefixes.items():
        programs[variant] = os.path.join(out, f"pingpong-{variant}")
        subprocess.run([os.path.join(prefix, "bin", "mpicc"), "-O2",
                        os.path.join(study.REPO, "bench", "pingpong.c"), "-o", programs[variant]], check=True)

    vader = study.transport("vader")
    rows, started = [], time.time()
    for k, config in enumerate(study.CONFIGURATIONS, 1):
        elapsed = time.time() - started
        left = f", about {elapsed / (k - 1) * (len(study.CONFIGURATIONS) - k + 1):.0f} s left" if k > 1 else ""
        print(f"== configuration {k} of {len(study.CONFIGURATIONS)}: {config.name}{left}", flush=True)
        name, variant, tag = config.name, config.build, config.key
        command = study.mpirun(prefixes[variant], config, vader) + ["valgrind", "--tool=callgrind", "--collect-atstart=no",
                    f"--toggle-collect={FUNCTIONS['send']}", f"--toggle-collect={FUNCTIONS['match']}",
                    f"--callgrind-out-file={out}/{tag}.rank%q{{OMPI_COMM_WORLD_RANK}}.callgrind",
                    programs[variant], str(args.messages)]
        result = subprocess.run(command, env=study.environment(), capture_output=True, text=True)
        if result.returncode != 0:
            print(result.stdout + result.stderr)
            sys.exit(f"callgrind_counts.py: configuration '{name}' failed")
        for rank in (0, 1):
            counts = inclusive_instructions(f"{out}/{tag}.rank{rank}.callgrind")
            rows.append({"configuration": name, "build": variant, "attach": study.attach_list(config) or "-",
                         "rank": rank, "messages": args.messages,
                         "send_instructions_per_message": counts.get("send", 0) / args.messages,
                         "match_instructions_per_message": counts.get("match", 0) / args.messages})

    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    baseline = {r["rank"]: r for r in rows if r["build"] == "nospc"}
    lines = ["| configuration | PMPI_Send, instr./msg | vs baseline | receive match, instr./msg | vs baseline |",
             "|---|---:|---:|---:|---:|"]
    for name in (c.name for c in study.CONFIGURATIONS):
        mine = [r for r in rows if r["configuration"] == name]
        send = sum(r["send_instructions_per_message"] for r in mine) / len(mine)
        match = sum(r["match_instructions_per_message"] for r in mine) / len(mine)
        base_send = sum(b["send_instructions_per_message"] for b in baseline.values()) / len(baseline)
        base_match = sum(b["match_instructions_per_message"] for b in baseline.values()) / len(baseline)
        lines.append(f"| {name} | {send:.1f} | {send - base_send:+.1f} | {match:.1f} | {match - base_match:+.1f} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(table)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"command": " ".join(sys.argv), "messages": args.messages, "transport": "vader",
                   "builds": {v: study.build_info(p) for v, p in prefixes.items()},
                   "machine": study.machine(),
                   "valgrind": subprocess.run(["valgrind", "--version"], capture_output=True,
                                              text=True).stdout.strip(),
                   "date": stamp}, f, indent=2)
    print(table)
    print(f"saved: {out}")


if __name__ == "__main__":
    main()
