#!/usr/bin/env python3
"""A counter the job's PML does not count is not offered as a 0: runs
dump_ping on 2 ranks under pml ucx with mpi_spc_attach naming one such
counter (OUT_OF_SEQUENCE) and one every PML counts (SEND), and the finalize
report on, and checks that one line names the PML and the counter it
refused, that the report names what ucx does not count instead of rows of
0, and that the CSV has no row of them but SEND's exact.  First the
control: the same job under ob1 prints no such line and its CSV has the
OUT_OF_SEQUENCE rows.

usage: check_not_offered.py MPIRUN DUMP_PING"""
import csv
import subprocess
import sys
import tempfile

UCX = ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any"]
OB1 = ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"]
# What only ob1 counts (ompi_spc_pmls.def, restated here on purpose).
OB1_ONLY = ["OUT_OF_SEQUENCE", "MATCH_TIME", "UNEXPECTED_IN_QUEUE", "OOS_IN_QUEUE", "MAX_UNEXPECTED_IN_QUEUE",
            "MAX_OOS_IN_QUEUE", "OOS_MATCH_TIME", "BYTES_PUT", "BYTES_GET"]
SENDS = 10  # dump_ping.c: rank 0's sends, 7 on MPI_COMM_WORLD and 3 on a duplicate
REFUSED = "spc: mpi_spc_attach: pml ucx does not count OMPI_SPC_OUT_OF_SEQUENCE;"


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
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    mpirun, program = sys.argv[1:]
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        result, values = run(mpirun, program, OB1, folder + "/ob1.csv")
        if result.returncode != 0 or "does not count" in result.stdout + result.stderr:
            failures.append("control: under ob1 the job failed or a counter was refused")
        if ("0", "OMPI_SPC_OUT_OF_SEQUENCE") not in values:
            failures.append("control: under ob1 the CSV has no OUT_OF_SEQUENCE row")

        result, values = run(mpirun, program, UCX, folder + "/ucx.csv")
        output = result.stdout + result.stderr
        if result.returncode != 0:
            failures.append(f"under ucx the job failed ({result.returncode})")
        if output.count(REFUSED) != 1:
            failures.append(f"under ucx, {output.count(REFUSED)} lines start {REFUSED!r}, not 1")
        named = [line for line in output.splitlines() if line.startswith("(not counted by pml ucx: ")]
        missing = [name for name in OB1_ONLY if not named or "OMPI_SPC_" + name not in named[0]]
        if len(named) != 1 or missing:
            failures.append(f"the report's line of what ucx does not count: {named}, missing {missing}")
        rows = sorted({counter for (_, counter) in values if counter[len("OMPI_SPC_"):] in OB1_ONLY})
        if rows:
            failures.append(f"the CSV under ucx has rows of {rows}")
        if values.get(("0", "OMPI_SPC_SEND")) != SENDS:
            failures.append(f"SEND of rank 0 under ucx: {values.get(('0', 'OMPI_SPC_SEND'))}, not {SENDS}")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
