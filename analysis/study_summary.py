"""Gathers the reports of one run of ./run.sh into OUT/summary.md: what was
run, on what, and every table, with the NetPIPE figures linked.

usage: /usr/bin/python3 -m analysis.study_summary OUT"""
import json
import os
import re
import sys

from analysis.netpipe_report import FIGURES
from netpipe_runs import campaign

# (heading, report inside OUT, step of run.sh that makes it)
PARTS = [
    ("Demonstration: counters through MPI_T and PAPI, and the finalize report", "demo/output.txt", "demo"),
    ("Fast path and reads: micro-benchmarks", "microbench/table.md", "microbench"),
    ("Instructions per message: callgrind", "callgrind/summary.md", "callgrind"),
    ("NetPIPE overhead sweeps", "netpipe/netpipe_summary.md", "netpipe"),
    ("Pairwise benchmark and in-process A/B", "pairwise/report.md", "pairwise"),
    ("In-process A/B", "ab/report.md", "ab"),
    ("An application: LAMMPS's loop time", "lammps/summary.md", "lammps"),
]


def demoted(markdown):
    """A report under this file's heading for it: without its own title, its
    other headings one level down."""
    markdown = re.sub(r"\A# .*\n+", "", markdown)
    return re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", markdown, flags=re.M)


def main():
    out = campaign.folder_argument(__doc__)
    if not os.path.isdir(out):
        sys.exit(__doc__)
    try:
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"study_summary.py: no readable meta.json in {out}: {error}")
    machine = meta.get("machine", {})
    builds = ", ".join(f"{v} {b.get('content_hash', '?')}" for v, b in sorted(meta.get("builds", {}).items()))
    lines = [f"# Overhead study: {os.path.basename(os.path.abspath(out))}", "",
             f"- command: `{meta.get('command', '?')}`",
             f"- machine: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, "
             f"kernel {machine.get('kernel', '?')}",
             f"- commit: {machine.get('commit', '?')}{' (with local changes)' if machine.get('dirty') else ''}",
             f"- Open MPI 4.1.4 builds (content hashes): {builds}", ""]
    for heading, report, step in PARTS:
        path = os.path.join(out, report)
        if not os.path.exists(path):
            if step != "ab":  # the A/B tables are in the pairwise report when both ran
                state = "ran but made no report" if os.path.isdir(os.path.join(out, step)) else "not run"
                lines += [f"## {heading}", "", f"Step `{step}`: {state}.", ""]
            continue
        with open(path) as f:
            body = f.read().strip()
        body = f"```\n{body}\n```" if path.endswith(".txt") else demoted(body)
        lines += [f"## {heading}", "", body, ""]
        if step == "netpipe":
            lines += [f"![{caption}](netpipe/{name})" for name, caption in FIGURES
                      if os.path.exists(os.path.join(out, "netpipe", name))] + [""]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines))
    print(os.path.join(out, "summary.md"))


if __name__ == "__main__":
    main()
