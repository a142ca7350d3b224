#!/usr/bin/env python3
"""Our own traffic is never counted (issue 36): a job that only initialises
and finalises, with every counter and communicator attached and the
finalize report on, reads 0 on every counter of every rank, in the report's
CSV and in its communicators' CSV, RUNS jobs in a row.  The report gathers
its values after a fence outside the PML (ompi_spc_report.c), so a rank
behind cannot count a rank ahead's report as an unexpected message.

First the control: the same check over dump_ping's traffic (7 + 3 sends)
must find what is not 0.

usage: check_idle.py MPIRUN DUMP_PING RUNS RANKS [MPIRUN_ARG...]"""
import csv
import os
import subprocess
import sys
import tempfile


def run_job(mpirun, program, ranks, mpirun_args, folder, *program_args):
    dump = os.path.join(folder, "idle.csv")
    for path in (dump, os.path.join(folder, "idle.comms.csv")):
        if os.path.exists(path):
            os.remove(path)
    command = [mpirun, "-np", str(ranks), *mpirun_args, "--mca", "mpi_spc_attach", "all,traffic",
               "--mca", "mpi_spc_dump_enabled", "true", "--mca", "mpi_spc_dump_file", dump,
               program, *program_args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    return command, result, dump


def not_zero(dump, ranks):
    """Rows of either CSV whose value is not 0, and what is missing."""
    problems, seen = [], set()
    for path, value_column in ((dump, "value"), (dump[:-len(".csv")] + ".comms.csv", "value")):
        if not os.path.exists(path):
            problems.append(f"no {os.path.basename(path)}")
            continue
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                seen.add(int(row["rank"]))
                if int(row[value_column]) != 0:
                    problems.append(f"{os.path.basename(path)}: rank {row['rank']} "
                                    f"{row.get('comm_name', 'process')} {row['counter']} = {row[value_column]}")
    missing = sorted(set(range(ranks)) - seen)
    if missing:
        problems.append(f"no row of ranks {missing}")
    return problems


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    mpirun, program, runs, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    mpirun_args = sys.argv[5:]
    with tempfile.TemporaryDirectory() as folder:
        command, result, dump = run_job(mpirun, program, 2, mpirun_args, folder)
        found = not_zero(dump, 2)
        if result.returncode != 0 or not any("OMPI_SPC_SEND = 7" in p for p in found):
            print("$", " ".join(command), result.stdout, result.stderr, *found, sep="\n")
            sys.exit("FAIL: the control, dump_ping's sends, was not seen as counted")
        print(f"control: dump_ping's traffic seen ({len(found)} values not 0, SEND = 7 among them)")
        for n in range(1, runs + 1):
            command, result, dump = run_job(mpirun, program, ranks, mpirun_args, folder, "--idle")
            problems = ([f"exit {result.returncode}"] if result.returncode != 0 else []) + not_zero(dump, ranks)
            if problems:
                print("$", " ".join(command), result.stdout, result.stderr, sep="\n")
                sys.exit(f"FAIL: idle job {n} of {runs}: " + "; ".join(problems[:10]))
    print(f"all {runs} idle jobs of {ranks} ranks read 0 on every counter of every rank")


if __name__ == "__main__":
    main()
