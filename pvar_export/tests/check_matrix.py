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
  collectives  every collective comm_matrix.c makes on MPI_COMM_WORLD and
         on a split by parity in reverse order (with mpi_spc_attach
         traffic,collectives): each rank's COLL_<KIND> counters of each
         communicator in REPORT.comms.csv, predicted here, and the
         process-wide ones in REPORT.csv, their sums; no user cell.
  neighbours  every neighbourhood collective on three topologies (a
         periodic ring of ranks 0 to 2, a 2 x 2 grid with MPI_PROC_NULL
         and doubled neighbours, a distributed graph with a self edge, a
         graph):
         each topology's all-to-all kind predicted here from the
         topologies' definitions (neighbours_of), as for collectives.
         Under pml ucx, coll basic's neighbourhood messages (tags near
         -2^30) are internal on both sides only with patch
         "ucx: a negative tag keeps its sign in UCX's 24 tag bits".

Every row's sent and received cells of point-to-point traffic agree (what
rank r sent to p, p received from r).  With --monitoring, Open MPI's own monitoring (seed 003,
pml_monitoring_enable 2, which keeps tag < 0 apart) watches the same runs:
its matrix of user messages and bytes sent ("E" lines of its per-rank
.prof files) equals ours cell for cell; its internal one ("I") also holds
MPI_Finalize's own traffic and our report's, which ours does not count (it
is read before), so each of our internal cells is at most its; its
one-sided matrices ("S" and "R") equal ours; on the split communicator
of collectives, its collectives by kind ("O2A", "A2O", "A2A") are ours
but for what its sums count that the data does not move (a scatterv
root's own block, one more rank in a scan, an in-place call's ignored send
arguments), and on MPI_COMM_WORLD, which also carries Open MPI's own
collectives, at least ours; on the ring of neighbours-ring (run in place
of neighbours: monitoring reads every topology as Cartesian and numbers
a Cartesian one's blocks without its MPI_PROC_NULL neighbours), its
collectives by kind are ours; it counts persistent sends (the linear
alltoall(v,w)) as user traffic whatever their tag, so there its user and
internal cells are taken together.  The heatmap script draws the bcast matrix and refuses
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
    attach = "traffic,collectives" if pattern == "collectives" or pattern.startswith("neighbours") else "traffic"
    command = [mpirun, "-np", str(RANKS), *mpirun_args, "--mca", "mpi_spc_attach", attach,
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


KINDS = ("COLL_ONE_TO_ALL", "COLL_ALL_TO_ONE", "COLL_ALL_TO_ALL")
SPLIT = "collectives split"


def collectives_of(n, r):
    """comm_matrix.c's collectives on a communicator of n ranks at rank r:
    {counter: (calls, bytes)}, 4-byte ints, never a rank's data to itself."""
    I, others = 4, n - 1

    def but(counts, skip):
        return sum(c * I for i, c in enumerate(counts) if i != skip)

    one_to_all, all_to_one = [], []
    for root, bytes_ in ((1 % n, 10 * I * others), (0, 3 * I * others), (2 % n, 2 * I * others),
                         (3 % n, but(range(1, n + 1), 3 % n)), (0, but(range(1, n + 1), 0))):
        one_to_all += [bytes_] if r == root else []
    for root, bytes_ in ((0, 5 * I * others), (1 % n, but([2 * i + 1 for i in range(n)], 1 % n)),
                         (2 % n, 6 * I * others), (3 % n, I * others)):
        all_to_one += [bytes_] if r == root else []
    all_to_all = [7 * I * others, I * others, I * others, 2 * I * others, (r + 1) * I * others, 2 * I * others,
                  I * others, but([i + r for i in range(n)], r), sum(8 if (i + r) % 2 else 4 for i in range(n) if i != r),
                  0, 0, but(range(1, n + 1), r), 3 * I * others, 2 * I * (n - 1 - r), 3 * I * (n - 1 - r)]
    return {name: (len(values), sum(values)) for name, values in zip(KINDS, (one_to_all, all_to_one, all_to_all))}


# comm_matrix.c's topologies: {name: (members in world ranks, out-neighbours
# of each member in MPI's order, None for MPI_PROC_NULL)}
def pair_count(a, b):
    """comm_matrix.c's count of a block from a to b"""
    return 1 + (a + 2 * b) % 3


NEIGHBOURHOODS = {
    # periodic line of 3: at -1, at +1
    "neighbours ring": ([0, 1, 2], {r: [(r - 1) % 3, (r + 1) % 3] for r in range(3)}),
    # 2 x 2, row-major: dimension 0 not periodic, dimension 1 periodic of 2
    "neighbours grid": (list(range(4)), {r: [r - 2 if r >= 2 else None, r + 2 if r < 2 else None, r ^ 1, r ^ 1]
                                         for r in range(4)}),
    # rank r sends to the r + 1 ranks after it (rank 3 to itself too)
    "neighbours dist graph": (list(range(4)), {r: [(r + j) % 4 for j in range(1, r + 2)] for r in range(4)}),
    # MPI_Graph_create's edges 0-1, 0-2, 1-2, 2-3
    "neighbours graph": (list(range(4)), {0: [1, 2], 1: [0, 2], 2: [0, 1, 3], 3: [2]}),
}


def neighbours_of(name, r):
    """comm_matrix.c's neighbourhood collectives on topology name at its
    rank r: {counter: (calls, bytes)}: to every out-neighbour but
    MPI_PROC_NULL and r itself."""
    I = 4
    others = [t for t in NEIGHBOURHOODS[name][1][r] if t is not None and t != r]
    blocks = len(others)
    counted = sum(pair_count(r, t) * I for t in others)
    typed = sum(pair_count(r, t) * (8 if (r + t) % 2 else 4) for t in others)
    all_to_all = [3 * I * blocks, I * blocks, 3 * I * blocks, 3 * I * blocks, 2 * I * blocks, I * blocks,
                  counted, counted, typed, typed]
    return {"COLL_ONE_TO_ALL": (0, 0), "COLL_ALL_TO_ONE": (0, 0), "COLL_ALL_TO_ALL": (len(all_to_all), sum(all_to_all))}


def split_rank(rank):
    """comm_matrix.c's split: by parity, in reverse rank order."""
    members = sorted((r for r in range(RANKS) if r % 2 == rank % 2), reverse=True)
    return len(members), members.index(rank)


def check_collectives(report, pattern="collectives"):
    rows = {}
    with open(report[:-4] + ".comms.csv", newline="") as f:
        for row in csv.DictReader(f):
            rows[(int(row["rank"]), row["comm_name"], row["counter"])] = int(row["value"])
    totals = {}
    with open(report, newline="") as f:
        for row in csv.DictReader(f):
            totals[(int(row["rank"]), row["counter"])] = int(row["value"])
    for rank in range(RANKS):
        if pattern == "collectives":
            comms = {"MPI_COMM_WORLD": collectives_of(RANKS, rank), SPLIT: collectives_of(*split_rank(rank))}
        else:
            names = ["neighbours ring"] + ([] if pattern == "neighbours-ring"
                                           else ["neighbours grid", "neighbours dist graph", "neighbours graph"])
            comms = {name: neighbours_of(name, rank) for name in names if rank in NEIGHBOURHOODS[name][0]}
        for comm, want in comms.items():
            got = {name: (rows.get((rank, comm, "OMPI_SPC_" + name)), rows.get((rank, comm, f"OMPI_SPC_{name}_BYTES")))
                   for name in KINDS}
            check(got == want, f"{pattern}: rank {rank}'s {comm} counts its collectives by kind: "
                  + ("" if got == want else f"got {got}, expected {want}"))
        got = {name: (totals.get((rank, "OMPI_SPC_" + name)), totals.get((rank, f"OMPI_SPC_{name}_BYTES")))
               for name in KINDS}
        want = {name: tuple(map(sum, zip(*(c[name] for c in comms.values())))) or (0, 0) for name in KINDS}
        check(got == want, f"{pattern}: rank {rank}'s process-wide counters are its communicators' sums: "
              + ("" if got == want else f"got {got}, expected {want}"))


def read_monitoring_collectives(prefix):
    """{(rank, communicator's world ranks): {kind: (calls, bytes)}} from
    monitoring's "D", "O2A", "A2O" and "A2A" lines
    (common_monitoring_coll.c:164-174)."""
    found = {}
    for rank in range(RANKS):
        procs = None
        with open(f"{prefix}.{rank}.prof") as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if fields[0] == "D":
                    procs = fields[2].split("procs: ")[-1]
                elif fields[0] in ("O2A", "A2O", "A2A") and procs is not None:
                    found.setdefault((rank, procs), {})["COLL_" + {"O2A": "ONE_TO_ALL", "A2O": "ALL_TO_ONE",
                                                                  "A2A": "ALL_TO_ALL"}[fields[0]]] = \
                        (int(fields[3].split()[0]), int(fields[2].split()[0]))
    return found


def check_monitoring_collectives(prefix):
    theirs = read_monitoring_collectives(prefix)
    for rank in range(RANKS):
        n, r = split_rank(rank)
        members = ",".join(str(m) for m in sorted((m for m in range(RANKS) if m % 2 == rank % 2), reverse=True))
        ours = collectives_of(n, r)
        # monitoring's sums: the scatterv root's own block (split ranks 3 % n and 0,
        # counts r + 1 ints), one more rank in MPI_Scan (2 ints) and MPI_Iexscan (3),
        # and the in-place allgather's send arguments (0 elements) for its block (2 ints)
        extra = {"COLL_ONE_TO_ALL": 4 * (r + 1) * ((r == 3 % n) + (r == 0)), "COLL_ALL_TO_ONE": 0,
                 "COLL_ALL_TO_ALL": 4 * (2 + 3 - 2)}
        want = {name: (calls, bytes_ + extra[name]) for name, (calls, bytes_) in ours.items()}
        got = theirs.get((rank, members))
        check(got == want, f"collectives: monitoring's split communicator ({members}) at rank {rank} is ours "
              f"plus its sums' extra: " + ("" if got == want else f"monitoring's {got}, expected {want}"))
        world = collectives_of(RANKS, rank)
        got = theirs.get((rank, ",".join(str(m) for m in range(RANKS))), {})
        check(all(got.get(k, (0, 0))[0] >= v[0] for k, v in world.items()),
              f"collectives: monitoring's MPI_COMM_WORLD at rank {rank} has at least our calls: {got} and {world}")


def check_monitoring_neighbours(prefix):
    """Monitoring's collectives by kind on the ring of neighbours-ring: ours."""
    theirs = read_monitoring_collectives(prefix)
    for rank in NEIGHBOURHOODS["neighbours ring"][0]:
        got, want = theirs.get((rank, "0,1,2")), neighbours_of("neighbours ring", rank)
        check(got == want, f"neighbours-ring: monitoring's ring (0,1,2) at rank {rank} is ours: "
              + ("" if got == want else f"monitoring's {got}, expected {want}"))


def predicted(pattern):
    if pattern == "collectives" or pattern.startswith("neighbours"):
        return {}
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
    if pattern == "collectives":
        # Monitoring counts a persistent send as user traffic whatever its tag
        # (pml_monitoring_start.c:48 in 5.0.7), and the linear alltoall(v,w)
        # send so (coll_base_alltoallv.c:361, coll_basic_alltoallw.c:241):
        # here its user and internal cells together hold our internal ones.
        for (kind, rank, peer), value in list(theirs.items()):
            if kind == "user":
                old = theirs.get(("internal", rank, peer), (0, 0))
                theirs[("internal", rank, peer)] = tuple(a + b for a, b in zip(old, value))
                del theirs[(kind, rank, peer)]
    user = ({k: v for k, v in ours.items() if k[0] == "user"}, {k: v for k, v in theirs.items() if k[0] == "user"})
    # the one-sided and collectives patterns have no user traffic: both empty
    check(user[0] == user[1] and (user[0] or pattern in ("one-sided", "one-sided-kept", "collectives",
                                                        "neighbours-ring")),
          f"{pattern}: monitoring's user matrix sent is ours: "
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
        for pattern in ("bcast", "ring", "split", "one-sided", "one-sided-kept", "collectives",
                        "neighbours-ring" if monitoring else "neighbours"):
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
            if pattern == "collectives" or pattern.startswith("neighbours"):
                check_collectives(report, pattern)
            if monitoring:
                check_monitoring(cells, prefix, pattern)
                if pattern == "collectives":
                    check_monitoring_collectives(prefix)
                if pattern == "neighbours-ring":
                    check_monitoring_neighbours(prefix)
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
