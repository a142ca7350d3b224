#!/usr/bin/env python3
"""A counter the job's PML does not count is not offered as a 0: runs
dump_ping on 2 ranks under PML (mpirun's ARGS select it) with
mpi_spc_attach naming one such counter (OUT_OF_SEQUENCE) and one every PML
counts (SEND), and the finalize report on, and checks that one line names
the PML and the counter it refused, that the report names what the PML
does not count instead of rows of 0, and that the CSV has no row of them
but SEND's exact.  First the control: the same job under ob1 prints no
such line and its CSV has the OUT_OF_SEQUENCE rows.

usage: check_not_offered.py MPIRUN DUMP_PING PML [ARGS...]"""
import csv
import subprocess
import sys
import tempfile

OB1 = ["--mca", "pml", "ob1"]
# What only ob1 counts, and what each other PML does not count
# (ompi_spc_pmls.def, restated here on purpose).
OB1_ONLY = ["OUT_OF_SEQUENCE", "MATCH_TIME", "UNEXPECTED_IN_QUEUE", "OOS_IN_QUEUE", "MAX_UNEXPECTED_IN_QUEUE",
            "MAX_OOS_IN_QUEUE", "OOS_MATCH_TIME", "BYTES_PUT", "BYTES_GET"]
NOT_COUNTED = {"ucx": OB1_ONLY, "cm": OB1_ONLY + ["UNEXPECTED"]}
SENDS = 10  # dump_ping.c: rank 0's sends, 7 on MPI_COMM_WORLD and 3 on a duplicate


def run(mpirun, program, pml, dump_file):
    command = [mpirun, "-np", "2", *pml, "--mca", "mpi_spc_attach", "OUT_OF_SEQUENCE,SEND",
               "--mca", "mpi_spc_dump_enabled", "true", "--mca", "mpi_spc_dump_file", dump_file, program]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    print("$", " ".join(command), f"-> exit {result.returncode}")
    print(result.stdout + result.stderr)
    with open(dump_file) as f:
        rows = list(csv.DictReader(f))
    return result, {(r["rank"], r["counter"]): int(r["value"]) for r in rows}


def main():
    if len(sys.argv) < 4 or sys.argv[3] not in NOT_COUNTED:
        sys.exit(__doc__)
    mpirun, program, pml = sys.argv[1:4]
    pml_args = sys.argv[4:]
    refused = f"spc: mpi_spc_attach: pml {pml} does not count OMPI_SPC_OUT_OF_SEQUENCE;"
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        result, values = run(mpirun, program, OB1, folder + "/ob1.csv")
        if result.returncode != 0 or "does not count" in result.stdout + result.stderr:
            failures.append("control: under ob1 the job failed or a counter was refused")
        if ("0", "OMPI_SPC_OUT_OF_SEQUENCE") not in values:
            failures.append("control: under ob1 the CSV has no OUT_OF_SEQUENCE row")

        result, values = run(mpirun, program, pml_args, f"{folder}/{pml}.csv")
        output = result.stdout + result.stderr
        if result.returncode != 0:
            failures.append(f"under {pml} the job failed ({result.returncode})")
        if output.count(refused) != 1:
            failures.append(f"under {pml}, {output.count(refused)} lines start {refused!r}, not 1")
        named = [line for line in output.splitlines() if line.startswith(f"(not counted by pml {pml}: ")]
        missing = [name for name in NOT_COUNTED[pml] if not named or "OMPI_SPC_" + name not in named[0]]
        if len(named) != 1 or missing:
            failures.append(f"the report's line of what {pml} does not count: {named}, missing {missing}")
        rows = sorted({counter for (_, counter) in values if counter[len("OMPI_SPC_"):] in NOT_COUNTED[pml]})
        if rows:
            failures.append(f"the CSV under {pml} has rows of {rows}")
        if values.get(("0", "OMPI_SPC_SEND")) != SENDS:
            failures.append(f"SEND of rank 0 under {pml}: {values.get(('0', 'OMPI_SPC_SEND'))}, not {SENDS}")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
