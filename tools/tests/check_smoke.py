#!/usr/bin/env python3
"""Checks what one ./run.sh left in its results folder, independently of
run.sh's own verdict: the demonstration's table agrees with its prediction
(every row: MPI_T equals PAPI equals the predicted value, MATCH_TIME above 0
where the prediction says so), and each asked step wrote its record (a
campaign: every planned run recorded and good; the others: their outputs).

usage: check_smoke.py RESULTS_DIR STEP[,STEP...]"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# the demo's rows: counter, rank, MPI_T, PAPI, predicted ("any", "> 0" or a count)
ROW = re.compile(r"^(OMPI_SPC_\w+)\s+([01])\s+(-?\d+)\s+(-?\d+)\s+(any|> 0|-?\d+)(\s+<- WRONG)?$", re.M)
DEMO_COUNTERS = 6  # bench/spc_demo.c's NUM_COUNTERS, on 2 ranks
OUTPUTS = {"demo": ["demo/output.txt", "demo/live.csv", "demo/live.txt"],
           "microbench": ["microbench/bench.json", "microbench/reads.json", "microbench/table.md"]}


def demo_problems(out):
    with open(os.path.join(out, "demo", "output.txt")) as f:
        rows = ROW.findall(f.read())
    problems = [] if len(rows) == 2 * DEMO_COUNTERS else [
        f"demo: {len(rows)} rows of the predicted table, not {2 * DEMO_COUNTERS}"]
    for counter, rank, mpit, papi, predicted, marked in rows:
        mpit, papi = int(mpit), int(papi)
        right = mpit == papi and (mpit == int(predicted) if predicted.lstrip("-").isdigit()
                                  else mpit > 0 if predicted == "> 0" else True)
        if not right or marked:
            problems.append(f"demo: {counter} rank {rank}: MPI_T {mpit}, PAPI {papi}, predicted {predicted}")
    return problems


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, steps = sys.argv[1], [s for s in sys.argv[2].split(",") if s]
    problems = []
    for step in steps:
        if step in OUTPUTS:
            missing = [p for p in OUTPUTS[step] if not os.path.isfile(os.path.join(out, p))
                       or os.path.getsize(os.path.join(out, p)) == 0]
            problems += [f"{step}: no {p}" for p in missing]
            if step == "demo" and not missing:
                problems += demo_problems(out)
        else:  # the campaigns' own reading of their records
            checked = subprocess.run([sys.executable, "-m", "netpipe_runs.campaign", "check",
                                      os.path.abspath(os.path.join(out, step))], cwd=REPO, capture_output=True,
                                     text=True)
            if checked.returncode != 0:
                problems += (checked.stdout + checked.stderr).strip().splitlines() or [f"{step}: check failed"]
    try:
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
        if "cpu" not in meta.get("machine", {}) or "spc" not in meta.get("builds", {}):
            problems.append("meta.json lacks the machine or the spc build")
    except (OSError, ValueError) as error:
        problems.append(f"no readable meta.json: {error}")
    if not os.path.isfile(os.path.join(out, "summary.md")):
        problems.append("no summary.md")
    for problem in problems:
        print("FAIL: " + problem)
    print(f"check_smoke: {len(steps)} steps in {out}: " + ("all recorded" if not problems else
                                                           f"{len(problems)} problems"))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
