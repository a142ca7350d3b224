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


def hang_lines(out):
    """The study's hangs (campaign.Campaign.execute): how many attempts of
    each step's runs hung, per build, and for each hung attempt where the
    ranks waited and where its backtraces are."""
    attempts, hung, rows = {}, {}, []
    for step in sorted(os.listdir(out)):
        for record in campaign.read_records(os.path.join(out, step)):
            key = (step, record["build"])
            attempts[key] = attempts.get(key, 0) + 1 + len(record.get("hangs", [])) - (
                record["status"] == "timeout")
            for hang in record.get("hangs", []):
                hung[key] = hung.get(key, 0) + 1
                rows.append(f"| {step} | {record['build']} | {record['key']} | {hang['attempt']} | "
                            f"{'; '.join(hang['waits']) or '?'} | {hang['backtraces']} |")
    if not attempts:
        return []
    lines = ["## Hangs of the system under study", ""]
    if not rows:
        return lines + [f"None: every one of {sum(attempts.values())} runs ended on its own.", ""]
    lines += ["A run that hung was ended after its time limit, its ranks' backtraces kept, and run "
              "again (netpipe_runs/campaign.py, HANG_ATTEMPTS); a run that hung every time failed its "
              "step. Attempts hung of attempts made:", ""]
    lines += [f"- {step}, {build}: {hung.get((step, build), 0)} of {n}" for (step, build), n in sorted(
        attempts.items()) if hung.get((step, build))]
    return lines + ["", "| step | build | run | attempt | where each rank's threads waited "
                    "| backtraces (in the step's raw/ or raw.tar.xz) |",
                    "|---|---|---|---:|---|---|", *rows, ""]


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
    lines += hang_lines(out)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines))
    print(os.path.join(out, "summary.md"))


if __name__ == "__main__":
    main()
