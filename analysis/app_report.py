"""The table of an application's wall times from a campaign of
netpipe_runs/app_runs.py: per configuration the median wall time of the job
(mpirun's start to end) and its ratio to the baseline's of the same round,
median [min-max] over rounds (analysis/lammps_report.py's table), then the
physical results of the runs (one value, or their spread per configuration).
Writes summary.md.

usage: /usr/bin/python3 -m analysis.app_report RESULTS_DIR"""
import json
import os

from analysis import lammps_report
from netpipe_runs import campaign


def make(out, records):
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    settings, machine = meta["settings"], meta["machine"]
    results = sorted({r["result"]["physical_result"] for r in records})
    head = (f"{settings['app']} ({settings['program']} {' '.join(settings['args'])}), {settings['ranks']} ranks "
            f"over {settings['transport']}, {meta['rounds']} rounds interleaved, environment pads; "
            f"{machine['cpu']}, {machine['cores']} CPUs; {meta['started']} to {meta['finished']}; builds "
            + ", ".join(f"{v} {b['content_hash']}" for v, b in sorted(meta["builds"].items())) + ".\n\n")
    table = lammps_report.ratio_table(out, records, lambda r: r["result"]["wall_seconds"], "wall time")
    if len(results) == 1:
        same = f"\nPhysical result of every ok run: {results[0]} (the same printed digits in all {len(records)})\n"
    else:
        # Some applications do not print the same digits from run to run
        # (apps.json says which, and their tolerance): the spread, per configuration.
        values = [float(v) for v in results]
        per = {}
        for r in records:
            per.setdefault(r["configuration"], set()).add(r["result"]["physical_result"])
        same = (f"\nPhysical result of the {len(records)} ok runs: {len(results)} printed values from {min(values)!r} "
                f"to {max(values)!r}, spread {max(values) - min(values):.2g}; per configuration: "
                + "; ".join(f"{k} {', '.join(sorted(v))}" for k, v in sorted(per.items())) + "\n")
    return head + table + same


if __name__ == "__main__":
    campaign.report_main(__doc__, make)
