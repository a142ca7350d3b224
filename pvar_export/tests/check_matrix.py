#!/usr/bin/env python3
"""The job's communication matrix of the finalize report (issue 38): runs
comm_matrix on 4 ranks with mpi_spc_attach traffic and a report CSV, and
checks REPORT.matrix.csv cell by cell against the traffic comm_matrix.c
makes, in MPI_COMM_WORLD ranks:

  bcast  coll tuned's linear broadcast forced: rank 0 sends each peer 10
         internal messages of 64 bytes, and rank 1 5 user messages of 16
         bytes; nothing else, user or internal, in the whole matrix;
  ring   rank r sends r + 1 user messages of 8 (r + 1) bytes to r + 1;
  split  on a split whose ranks are not the world's (freed before
         MPI_Finalize), 3 user messages of 100 bytes each way between
         world ranks 0 and 2, and 1 and 3 (the split's own making is
         internal traffic on MPI_COMM_WORLD, not predicted here).
  one-sided  on a window whose ranks are the world's reversed, each rank's
         puts, gets, accumulates, get-accumulates, fetch-and-ops,
         compare-and-swaps, Rput and Rget (comm_matrix.c) by target, at
         the origin only: operations and bytes sent, operations that
         brought data back and their bytes; no user cell;
  one-sided-kept  the same with the window left to MPI_Finalize.

Every row's sent and received cells of point-to-point traffic agree (what
rank r sent to p, p received from r).  With --monitoring, Open MPI's own monitoring (seed 003,
pml_monitoring_enable 2, which keeps tag < 0 apart) watches the same runs:
its matrix of user messages and bytes sent ("E" lines of its per-rank
.prof files) equals ours cell for cell; its internal one ("I") also holds
MPI_Finalize's own traffic and our report's, which ours does not count (it
is read before), so each of our internal cells is at most its; its
one-sided matrices ("S" and "R") equal ours.  The heatmap script draws the bcast matrix and refuses
the report's main CSV with one line; a matrix path that cannot be written
(a folder there) gives one line naming it, and the job still exits 0.

usage: check_matrix.py [--monitoring] MPIRUN COMM_MATRIX [MPIRUN ARGS...]"""
import csv
import os
import subprocess
import sys
import tempfile

RANKS = 4
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")  # analysis.* runs from there
FORCED_LINEAR_BCAST = ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_bcast_algorithm", "1"]
FAILURES = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        FAILURES.append(what)


def run(mpirun, program, mpirun_args, pattern, report, extra=()):
    command = [mpirun, "-np", str(RANKS), *mpirun_args, "--mca", "mpi_spc_attach", "traffic",
               "--mca", "mpi_spc_dump_enabled", "true", "--mca", "mpi_spc_dump_file", report, *extra,
               program, pattern]
    print("$ " + " ".join(command), flush=True)
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def read_matrix(path):
    """{(kind, rank, peer): (messages sent, bytes sent, messages received, bytes received)}"""
    with open(path, newline="") as f:
        return {(row["kind"], int(row["rank"]), int(row["peer"])):
                (int(row["messages_sent"]), int(row["bytes_sent"]), int(row["messages_received"]),
                 int(row["bytes_received"]))
                for row in csv.DictReader(f)}


def expected(messages):
    """The cells of {(kind, sender, receiver): (messages, bytes)}."""
    cells = {}
    for (kind, sender, receiver), (count, size) in messages.items():
        for key, values in (((kind, sender, receiver), (count, size, 0, 0)),
                            ((kind, receiver, sender), (0, 0, count, size))):
            old = cells.get(key, (0, 0, 0, 0))
            cells[key] = tuple(a + b for a, b in zip(old, values))
    return cells


def one_sided_cells():
    """comm_matrix.c's one-sided operations, by world rank: window rank w is
    world rank RANKS - 1 - w; each operation (window rank offset of its
    target, bytes sent, operations back, bytes back), 4-byte ints."""
    cells = {}
    for rank in range(RANKS):
        w = RANKS - 1 - rank
        operations = [(1, 4 * (w + 1), 0, 0)] * 2 + [(2, 0, 1, 12), (3, 8, 0, 0), (1, 8, 1, 8), (1, 4, 1, 4),
                                                      (2, 4, 1, 4), (2, 16, 0, 0), (3, 0, 1, 20)]
        for offset, sent, back, back_bytes in operations:
            key = ("one-sided", rank, RANKS - 1 - (w + offset) % RANKS)
            old = cells.get(key, (0, 0, 0, 0))
            cells[key] = tuple(a + b for a, b in zip(old, (1, sent, back, back_bytes)))
    return cells


def predicted(pattern):
    if pattern.startswith("one-sided"):
        return one_sided_cells()
    if pattern == "bcast":
        messages = {("internal", 0, peer): (10, 10 * 64) for peer in range(1, RANKS)}
        messages[("user", 0, 1)] = (5, 5 * 16)
    elif pattern == "ring":
        messages = {("user", r, (r + 1) % RANKS): (r + 1, (r + 1) * 8 * (r + 1)) for r in range(RANKS)}
    else:
        messages = {("user", a, b): (3, 300) for a, b in ((0, 2), (2, 0), (1, 3), (3, 1))}
    return expected(messages)


def read_monitoring(prefix):
    """{(kind, rank, peer): (messages, bytes)} from monitoring's
    PREFIX.<rank>.prof files: user ("E") and internal ("I") sent
    (common_monitoring.c:705, :717), one-sided sent ("S") and received
    ("R", as "one-sided back") (:734, :738)."""
    kinds = {"E": "user", "I": "internal", "S": "one-sided", "R": "one-sided back"}
    cells = {}
    for rank in range(RANKS):
        with open(f"{prefix}.{rank}.prof") as f:
            for line in f:
                fields = line.split("\t")
                if fields[0] in kinds:
                    cells[(kinds[fields[0]], int(fields[1]), int(fields[2]))] = (int(fields[4].split()[0]),
                                                                                 int(fields[3].split()[0]))
    return cells


def check_monitoring(cells, prefix, pattern):
    theirs = read_monitoring(prefix)
    ours = {k: v[:2] for k, v in cells.items() if v[:2] != (0, 0)}
    user = ({k: v for k, v in ours.items() if k[0] == "user"}, {k: v for k, v in theirs.items() if k[0] == "user"})
    # the one-sided pattern has no user traffic: both empty
    check(user[0] == user[1] and (user[0] or pattern.startswith("one-sided")), f"{pattern}: monitoring's user matrix sent is ours: "
          + ("" if user[0] == user[1] else f"ours {sorted(user[0].items())}, monitoring's {sorted(user[1].items())}"))
    above = {k: (v, theirs.get(k)) for k, v in ours.items()
             if k[0] == "internal" and not all(a <= b for a, b in zip(v, theirs.get(k, (0, 0))))}
    check(not above, f"{pattern}: each internal cell of ours is at most monitoring's "
          f"({sum(1 for k in ours if k[0] == 'internal')} cells): {above}")
    if pattern.startswith("one-sided"):
        mine = {k: v[:2] for k, v in cells.items() if k[0] == "one-sided" and v[:2] != (0, 0)}
        mine.update({("one-sided back",) + k[1:]: v[2:] for k, v in cells.items()
                     if k[0] == "one-sided" and v[2:] != (0, 0)})
        others = {k: v for k, v in theirs.items() if k[0].startswith("one-sided") and v != (0, 0)}
        check(mine == others and mine, f"{pattern}: monitoring's one-sided matrices (sent, back) are ours: "
              + ("" if mine == others else f"ours {sorted(mine.items())}, monitoring's {sorted(others.items())}"))


def check_consistent(cells, pattern):
    """What r sent p is what p received from r, per kind of point-to-point
    traffic (one-sided is counted at the origin only)."""
    wrong = [(kind, rank, peer) for (kind, rank, peer), v in cells.items()
             if kind != "one-sided" and v[:2] != cells.get((kind, peer, rank), (0, 0, 0, 0))[2:]]
    check(not wrong, f"{pattern}: every cell sent is its peer's cell received: {wrong}")


def main():
    arguments = sys.argv[1:]
    monitoring = arguments[:1] == ["--monitoring"]
    arguments = arguments[1:] if monitoring else arguments
    if len(arguments) < 2:
        sys.exit(__doc__)
    mpirun, program, mpirun_args = arguments[0], arguments[1], arguments[2:]
    with tempfile.TemporaryDirectory() as work:
        for pattern in ("bcast", "ring", "split", "one-sided", "one-sided-kept"):
            report = os.path.join(work, pattern + ".csv")
            prefix = os.path.join(work, "monitoring-" + pattern)
            watching = ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "3",
                        "--mca", "pml_monitoring_filename", prefix] if monitoring else []
            result = run(mpirun, program, mpirun_args, pattern, report,
                         (FORCED_LINEAR_BCAST if pattern == "bcast" else []) + watching)
            matrix_path = os.path.join(work, pattern + ".matrix.csv")
            check(result.returncode == 0 and os.path.exists(matrix_path),
                  f"{pattern}: the job exits 0 and writes {os.path.basename(matrix_path)}: {result.stderr[-1500:]}")
            if not os.path.exists(matrix_path):
                continue
            check(f"the job's communication matrix, by rank and peer: {matrix_path}" in result.stdout + result.stderr,
                  f"{pattern}: the report names the matrix file")
            cells = read_matrix(matrix_path)
            want = predicted(pattern)
            kinds = ("user", "internal") if pattern == "bcast" else \
                ("user", "one-sided") if pattern.startswith("one-sided") else ("user",)
            got = {k: v for k, v in cells.items() if k[0] in kinds}
            check(got == want, f"{pattern}: the {' and '.join(kinds)} cells are exactly the traffic's: "
                  + ("" if got == want else f"got {sorted(got.items())}, expected {sorted(want.items())}"))
            check_consistent(cells, pattern)
            if monitoring:
                check_monitoring(cells, prefix, pattern)
            if pattern == "split":
                internal = sorted(k for k in cells if k[0] == "internal")
                print(f"     split: internal cells (the split's making): {internal}")
            if pattern == "bcast":
                picture = os.path.join(work, "matrix.png")
                plot = subprocess.run(["/usr/bin/python3", "-m", "analysis.matrix_plot", matrix_path, picture],
                                      capture_output=True, text=True,
                                      cwd=ROOT)
                check(plot.returncode == 0 and os.path.getsize(picture) > 10000 and "4 ranks, 8 cells" in plot.stdout,
                      f"the heatmap script draws it: {plot.stdout.strip()} {plot.stderr[-500:]}")
                refused = subprocess.run(["/usr/bin/python3", "-m", "analysis.matrix_plot", report,
                                          os.path.join(work, "no.png")], capture_output=True, text=True,
                                         cwd=ROOT)
                check(refused.returncode != 0 and "not a matrix CSV" in refused.stderr
                      and len(refused.stderr.strip().splitlines()) == 1 and not os.path.exists(os.path.join(work, "no.png")),
                      f"the heatmap script refuses the report's main CSV in one line: {refused.stderr.strip()}")
        # a folder where the matrix file goes
        report = os.path.join(work, "blocked.csv")
        os.mkdir(os.path.join(work, "blocked.matrix.csv"))
        result = run(mpirun, program, mpirun_args, "ring", report)
        said = [line for line in (result.stdout + result.stderr).splitlines() if "blocked.matrix.csv" in line]
        check(result.returncode == 0 and len(said) == 1 and "cannot write" in said[0] and "Is a directory" in said[0],
              f"an unwritable matrix path: one line naming it and why, exit 0: {said} (exit {result.returncode})")
    if FAILURES:
        print(f"{len(FAILURES)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
