"""The table of LAMMPS loop times from a campaign of netpipe_runs/lammps_runs.py:
per configuration the median loop time, and its ratio to the baseline's loop
time of the same round, median [min-max] over rounds.  Writes summary.md.

usage: /usr/bin/python3 -m analysis.lammps_report RESULTS_DIR"""
import statistics

from netpipe_runs import campaign, study


def ratio_table(out, records, seconds_of, what):
    """Per configuration of the ok RECORDS, the median of SECONDS_OF(record)
    and its ratio to the baseline's of the same round, median [min-max] over
    rounds, WHAT naming the time; runs that are missing are said below it."""
    loop = {(r["configuration"], r["round"]): seconds_of(r) for r in records}
    baseline = study.BASELINE.key
    lines = [f"| configuration | runs | {what}, median (s) | over the baseline of the same round, "
             "median [min-max] |", "|---|---:|---:|---|"]
    for config in study.CONFIGURATIONS:
        mine = sorted((rnd, seconds) for (key, rnd), seconds in loop.items() if key == config.key)
        if not mine:
            continue
        ratios = [seconds / loop[(baseline, rnd)] for rnd, seconds in mine if (baseline, rnd) in loop]
        spread = (f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]"
                  if ratios and config.key != baseline else "–")
        lines.append(f"| {config.name} | {len(mine)} | {statistics.median(s for _, s in mine):.3f} | "
                     f"{spread} |")
    missing = len(campaign.read_records(out)) - len(records)
    return "\n".join(lines) + "\n" + (f"\n{missing} run(s) not ok: see runs.jsonl\n" if missing else "")


def make(out, records):
    """The table of the ok records; runs that are missing are said below it."""
    return ratio_table(out, records, lambda r: r["result"]["loop_seconds"], "loop time")


if __name__ == "__main__":
    campaign.report_main(__doc__, make)
