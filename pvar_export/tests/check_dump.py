#!/usr/bin/env python3
"""Runs dump_ping on 2 ranks with the finalize report on and checks the table
on standard output and the CSV file, that a bad attach name, an unwritable
CSV path and a bad mpi_spc_timer_sampling give clear messages without
failing the job, and that sampled timers are reported as estimates; with
"traffic" attached, the message-size histograms (10 messages of 4 bytes: bin
3, 4..7 bytes) in the table and the CSV, and the per-communicator CSV:
7 sends on MPI_COMM_WORLD and 3 on the duplicate "ping dup", freed before
MPI_Finalize, on rank 0, as many receives on rank 1, 4 bytes each; with
every timer of time inside MPI on ("time"), the report's section of
time inside MPI by family and call (as the CSV of the job gives it).

Under PML (mpirun's ARGS select it; ob1 over shared memory without them)
all of that is the same but for what the PML does not count: no row of
it in either CSV, none in the table, the sampled MATCH_TIME named in the
report's one "(not counted by pml PML: ...)" line instead of estimated;
and the communicators' CSV has every counter the same job under ob1 has
but those (the control: ob1's has rows of some of them).

usage: check_dump.py MPIRUN DUMP_PING [PML ARGS...]"""
import csv
import os
import re
import subprocess
import sys
import tempfile

from check_not_offered import NOT_COUNTED

SENDS, DUP_SENDS = 7, 3  # dump_ping.c: on MPI_COMM_WORLD, on its duplicate
ALL = SENDS + DUP_SENDS


OB1_OVER_VADER = ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"]


def run(mpirun, program, pml_args, attach, dump_file, *mca):
    command = [mpirun, "-np", "2", *pml_args,
               "--mca", "mpi_spc_attach", attach, "--mca", "mpi_spc_dump_enabled", "true",
               "--mca", "mpi_spc_dump_file", dump_file, *mca, program]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    print("$", " ".join(command), f"-> exit {result.returncode}")
    print(result.stdout + result.stderr)
    return result


def row(text, counter):
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == counter:
            return fields
    return None


def comm_csv_rows(path, failures):
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError as error:
        failures.append(f"no communicators' CSV ({path}): {error}")
        return []


def check_comm_csv(path, pml, ob1_path, failures):
    """Per rank, communicator and counter: the sends and receives of each
    communicator, named, with its size; MPI_COMM_SELF carried nothing.
    The counters: ob1's (the job of ob1_path) but what pml does not count."""
    rows = comm_csv_rows(path, failures)
    values = {(r["rank"], r["comm_name"], r["counter"]): int(r["value"]) for r in rows}
    expected = {}
    for name, count in (("MPI_COMM_WORLD", SENDS), ("ping dup", DUP_SENDS)):
        expected.update({("0", name, "OMPI_SPC_SEND"): count, ("1", name, "OMPI_SPC_SEND"): 0,
                         ("0", name, "OMPI_SPC_RECV"): 0, ("1", name, "OMPI_SPC_RECV"): count,
                         ("0", name, "OMPI_SPC_BYTES_SENT_USER"): 4 * count,
                         ("1", name, "OMPI_SPC_BYTES_RECEIVED_USER"): 4 * count})
        if pml == "ob1":
            expected[("1", name, "OMPI_SPC_UNEXPECTED_IN_QUEUE")] = 0
    for rank in ("0", "1"):
        expected[(rank, "MPI_COMM_SELF", "OMPI_SPC_SEND")] = 0
    wrong = {key: values.get(key) for key, value in expected.items() if values.get(key) != value}
    if wrong:
        failures.append(f"communicators' CSV: {wrong}, expected {expected}")
    sizes = {r["comm_ranks"] for r in rows if r["comm_name"] in ("MPI_COMM_WORLD", "ping dup")}
    if sizes != {"2"}:
        failures.append(f"communicators' CSV sizes: {sizes}")
    if pml != "ob1":
        counters = {r["counter"] for r in rows}
        ob1_counters = {r["counter"] for r in comm_csv_rows(ob1_path, failures)}
        not_counted = {"OMPI_SPC_" + name for name in NOT_COUNTED[pml]}
        if not ob1_counters & not_counted:
            failures.append(f"control: ob1's communicators' CSV has no row of {sorted(not_counted)}")
        if counters != ob1_counters - not_counted:
            failures.append(f"communicators' CSV under {pml}: rows of {sorted(counters & not_counted)}, "
                            f"none of {sorted(ob1_counters - not_counted - counters)}")


BIN = re.compile(r"_BIN\d+$")  # a histogram's bin, not TUNED_BCAST_BINOMIAL
TIME_ROW = re.compile(r"^( *)(\w+_TIME) +(\d+) +([\d.]+) +(\d+) +(\d+) +([\d.]+)%$")


def check_time_section(stdout, path, failures):
    """The report's time section against the CSV of the same job: MPI_TIME,
    then each family that counted and under it each call that did, the
    largest first, each with its min, mean, max, max rank and share of
    MPI_TIME's sum over ranks as the CSV's values give them."""
    with open(path) as f:
        csv_rows = list(csv.DictReader(f))
    values = {}
    for r in csv_rows:
        values.setdefault(r["counter"][len("OMPI_SPC_"):], {})[int(r["rank"])] = int(r["value"])
    total = sum(values["MPI_TIME"].values())
    families = {"P2P": ["SEND", "SSEND", "RECV", "SENDRECV", "PROBE"], "COMPLETION": ["WAIT", "WAITALL", "WAITANY", "WAITSOME"],
                "COLLECTIVE": ["BARRIER", "BCAST", "REDUCE", "ALLREDUCE", "ALLGATHER", "ALLGATHERV", "ALLTOALL",
                               "ALLTOALLV", "ALLTOALLW", "GATHER", "SCATTER", "REDUCE_SCATTER"],
                "ONE_SIDED": ["WIN_FENCE", "WIN_WAIT", "WIN_UNLOCK", "WIN_UNLOCK_ALL", "WIN_FLUSH", "WIN_FLUSH_ALL"],
                "IO": ["FILE_READ_ALL", "FILE_WRITE_ALL", "FILE_READ_AT_ALL", "FILE_WRITE_AT_ALL"]}

    def total_of(name):
        return sum(values.get(name, {}).values())

    def by_size(names):  # the largest first; ties keep the catalogue's order
        return sorted((n for n in names if total_of(n) > 0), key=lambda n: -total_of(n))

    expected = [("", "MPI_TIME")]
    for family in by_size(f + "_TIME" for f in families):
        expected.append(("  ", family))
        expected += [("    ", call) for call in by_size(c + "_TIME" for c in families[family[:-5]])]
    section = stdout.split("Time inside MPI, most first (2 ranks; share: of MPI_TIME on all ranks)\n")
    lines = section[1].splitlines()[1:] if len(section) == 2 else []
    shown = []
    for line in lines:
        match = TIME_ROW.match(line)
        if not match:
            break
        shown.append(match.groups())
    if [(indent, name) for indent, name, *_ in shown] != expected:
        failures.append(f"time section rows {[(i, n) for i, n, *_ in shown]}, expected {expected}")
    for indent, name, low, mean, high, high_rank, share in shown:
        of_rank = values.get(name, {})
        want = (min(of_rank.values()), sum(of_rank.values()) / 2, max(of_rank.values()), 100.0 * sum(of_rank.values()) / total)
        got = (int(low), float(mean), int(high), float(share))
        if got[0] != want[0] or got[2] != want[2] or abs(got[1] - want[1]) > 0.051 or abs(got[3] - want[3]) > 0.051 \
                or of_rank.get(int(high_rank)) != want[2]:
            failures.append(f"time section {name}: {got} (max on rank {high_rank}), the CSV's {want}")
    if not shown:
        failures.append("no time section while MPI_TIME counted")


def main():
    if len(sys.argv) < 3 or (len(sys.argv) > 3 and sys.argv[3] not in ("ob1", *NOT_COUNTED)):
        sys.exit(__doc__)
    mpirun, program = sys.argv[1:3]
    pml = sys.argv[3] if len(sys.argv) > 3 else "ob1"
    pml_args = sys.argv[4:] if len(sys.argv) > 3 else OB1_OVER_VADER
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "spc.csv")
        result = run(mpirun, program, pml_args, "SEND,RECV,SNED", path)
        if result.returncode != 0:
            failures.append("the job failed")
        # counter unit min mean max max-rank
        if row(result.stdout, "OMPI_SPC_SEND") != ["OMPI_SPC_SEND", "calls", "0", f"{ALL / 2:.1f}", str(ALL), "0"]:
            failures.append(f"SEND row: {row(result.stdout, 'OMPI_SPC_SEND')}")
        if row(result.stdout, "OMPI_SPC_RECV") != ["OMPI_SPC_RECV", "calls", "0", f"{ALL / 2:.1f}", str(ALL), "1"]:
            failures.append(f"RECV row: {row(result.stdout, 'OMPI_SPC_RECV')}")
        if row(result.stdout, "OMPI_SPC_ISEND") is not None:
            failures.append("a counter that was never on is in the table")
        if result.stdout.count("Open MPI software-based performance counters") != 1:
            failures.append("the table is not printed exactly once")
        if '"SNED" (did you mean "SEND"?)' not in result.stdout + result.stderr:
            failures.append("no clear message for the unknown attach name")
        try:
            with open(path) as f:
                rows = list(csv.DictReader(f))
        except OSError as error:
            rows = []
            failures.append(f"no CSV: {error}")
        values = {(r["rank"], r["counter"]): int(r["value"]) for r in rows}
        if len(rows) != 2 * len({r["counter"] for r in rows}):
            failures.append(f"CSV has {len(rows)} rows, not one per rank and counter")
        expected = {("0", "OMPI_SPC_SEND"): ALL, ("1", "OMPI_SPC_SEND"): 0,
                    ("0", "OMPI_SPC_RECV"): 0, ("1", "OMPI_SPC_RECV"): ALL}
        for key, value in expected.items():
            if values.get(key) != value:
                failures.append(f"CSV {key}: {values.get(key)}, expected {value}")

        bad = run(mpirun, program, pml_args, "SEND", os.path.join(folder, "no", "such", "folder", "x.csv"))
        if bad.returncode != 0:
            failures.append("an unwritable CSV path failed the job")
        if "cannot write mpi_spc_dump_file" not in bad.stdout + bad.stderr:
            failures.append("no clear message for the unwritable CSV path")

        sampled = run(mpirun, program, pml_args, "MATCH_TIME", path, "--mca", "mpi_spc_timer_sampling", "4")
        estimate = re.search(r"\(OMPI_SPC_MATCH_TIME is an estimate: 1 in 4 intervals timed, "
                             r"(\d+) timed on all ranks together\)", sampled.stdout)
        if pml == "ob1" and (sampled.returncode != 0 or not estimate or int(estimate.group(1)) < 1):
            failures.append("a sampled MATCH_TIME is not reported as an estimate with its intervals")
        if pml != "ob1":
            named = [line for line in sampled.stdout.splitlines()
                     if line.startswith(f"(not counted by pml {pml}: ")]
            if sampled.returncode != 0 or estimate or len(named) != 1 or "OMPI_SPC_MATCH_TIME" not in named[0]:
                failures.append(f"MATCH_TIME under {pml}: estimated, or not named once as not counted: {named}")
        exact = run(mpirun, program, pml_args, "MATCH_TIME", path)
        if "is an estimate" in exact.stdout:
            failures.append("an exact timer is reported as an estimate")
        if "MESSAGE_SIZES" in exact.stdout or any(BIN.search(r["counter"]) for r in rows):
            failures.append("histograms reported without \"traffic\" attached")
        if os.path.exists(os.path.join(folder, "spc.comms.csv")):
            failures.append("a communicators' CSV without \"traffic\" attached")
        traffic = run(mpirun, program, pml_args, "SEND,traffic", path)
        in_table = [name for name in NOT_COUNTED.get(pml, []) if row(traffic.stdout, "OMPI_SPC_" + name)]
        if in_table:
            failures.append(f"the table under {pml} has rows of {in_table}")
        for histogram in ("OMPI_SPC_MESSAGE_SIZES_SENT", "OMPI_SPC_MESSAGE_SIZES_RECEIVED"):
            table = traffic.stdout.split(histogram + " (messages by size, 2 ranks)")
            bins = [line.split() for line in table[1].splitlines()[2:4]] if len(table) == 2 else []
            # one bin held messages: 4..7 bytes, 0 on one rank and all on the other
            if not bins or bins[0] != ["4..7", "0", f"{ALL / 2:.1f}", str(ALL)] or (len(bins) > 1 and bins[1] and bins[1][0][0].isdigit()):
                failures.append(f"{histogram} in the table: {bins}")
        with open(path) as f:
            histogram_rows = {(r["rank"], r["counter"]): int(r["value"]) for r in csv.DictReader(f)
                              if BIN.search(r["counter"])}
        expected = {("0", "OMPI_SPC_MESSAGE_SIZES_SENT_BIN3"): ALL,
                    ("1", "OMPI_SPC_MESSAGE_SIZES_RECEIVED_BIN3"): ALL}
        if len(histogram_rows) != 2 * 2 * 65 or sum(histogram_rows.values()) != 2 * ALL or \
                any(histogram_rows.get(key) != value for key, value in expected.items()):
            failures.append(f"CSV histogram rows: {len(histogram_rows)}, "
                            f"non-zero {[(k, v) for k, v in histogram_rows.items() if v]}")
        ob1_path = os.path.join(folder, "ob1.csv")
        if pml != "ob1":
            run(mpirun, program, OB1_OVER_VADER, "SEND,traffic", ob1_path)
        check_comm_csv(os.path.join(folder, "spc.comms.csv"), pml, os.path.join(folder, "ob1.comms.csv"), failures)
        if "Time inside MPI" in traffic.stdout:
            failures.append("a time section while no timer of time inside MPI was on")
        timed = run(mpirun, program, pml_args, "time", path)
        if timed.returncode != 0:
            failures.append("the job with the time inside MPI failed")
        check_time_section(timed.stdout, path, failures)
        zero = run(mpirun, program, pml_args, "SEND", path, "--mca", "mpi_spc_timer_sampling", "0")
        if zero.returncode != 0 or "mpi_spc_timer_sampling must be 1 or more, not 0" not in \
                zero.stdout + zero.stderr:
            failures.append("no clear message for mpi_spc_timer_sampling 0, or the job failed")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
