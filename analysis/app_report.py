"""The table of an application's wall times from a campaign of
netpipe_runs/app_runs.py: per configuration the median wall time of the job
(mpirun's start to end) and its ratio to the baseline's of the same round,
median [min-max] over rounds (analysis/lammps_report.py's table), then the
physical result of every run, which must be one.  Writes summary.md.

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
    table = lammps_report.ratio_table(out, records, lambda r: r["seconds"], "wall time")
    same = (f"\nPhysical result of every ok run: {results[0]} (the same printed digits in all "
            f"{len(records)})\n" if len(results) == 1 else
            f"\nPHYSICAL RESULTS DIFFER between runs: {results}\n")
    return head + table + same


if __name__ == "__main__":
    campaign.report_main(__doc__, make)
