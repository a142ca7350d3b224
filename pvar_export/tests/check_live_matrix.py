#!/usr/bin/env python3
"""The job's communication matrix from its live files (issue 38): runs
comm_matrix on 4 ranks with mpi_spc_live and mpi_spc_attach traffic,
holding each rank once its traffic is done (comm_matrix --hold), and
checks spc-matrix's CSV against the cells check_matrix.py predicts for the
finalize file (its predictions, imported, for the same patterns), first
while the job runs, then after every rank was killed with SIGKILL (nothing
ran at their death: what is read was already in the files):

  ring   rank r sends r + 1 user messages of 8 (r + 1) bytes to r + 1, on
         MPI_COMM_WORLD, whose storage is in use (a live file);
  split  3 user messages of 100 bytes each way on a split in reverse
         order, freed before the hold: its arrays were folded into each
         rank's matrix file, in world ranks;
  bcast  coll tuned's linear broadcast forced: the internal cells too;
  one-sided, one-sided-kept  a window freed (folded) or in use.

Every cell sent is its peer's cell received; the heatmap script draws
the ring's CSV.  spc-top --clean removes nothing of the running job and,
once it is killed, every file it left: its segments and per-peer files.
The controls: the same
reader on a held job run without traffic attached fails in one line
saying so (exit 1), and on a job run with traffic but without live finds
no per-peer files (exit 1); a reader asked for a folder that does not
exist names it (exit 1).

usage: check_live_matrix.py MPIRUN COMM_MATRIX SPC_MATRIX SPC_TOP [MPIRUN ARGS...]"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

import check_matrix

RANKS = check_matrix.RANKS
FAILURES = []
JOBS = []  # every job started, ended at the end whatever happened


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        FAILURES.append(what)


def held_job(mpirun, program, mpirun_args, pattern, live, hold, attach="traffic", with_live=True):
    """Starts the job; returns (mpirun's Popen, the ranks' pids) once every
    rank is held, or (Popen, None) if it ended or 60 s passed first."""
    extra = check_matrix.FORCED_LINEAR_BCAST if pattern == "bcast" else []
    live_args = ["--mca", "mpi_spc_live", "1", "--mca", "mpi_spc_live_dir", live] if with_live else []
    command = [mpirun, "-np", str(RANKS), *mpirun_args, *live_args, "--mca", "mpi_spc_attach", attach, *extra,
               program, pattern, "--hold", hold]
    print("$ " + " ".join(command), flush=True)
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    JOBS.append((job, hold))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and job.poll() is None:
        ready = glob.glob(os.path.join(hold, "ready.*"))
        if len(ready) == RANKS:
            return job, [int(open(path).read()) for path in ready]
        time.sleep(0.05)
    return job, None


def kill(job, pids):
    """SIGKILL to every rank (the test started them), then mpirun's end; a
    job whose ranks did not all hold is ended by mpirun (SIGTERM), so that
    no rank outlives the test."""
    for pid in pids or []:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        output, _ = job.communicate(timeout=60 if pids else 1)
    except subprocess.TimeoutExpired:
        job.terminate()
        try:
            output, _ = job.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            job.kill()
            output, _ = job.communicate()
    return output


def spc_matrix(reader, live, out, job=None):
    command = [reader, "--dir", live, "-o", out] + (["--job", job] if job else [])
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    print("$ " + " ".join(command) + f"  (exit {result.returncode}) {result.stderr.strip()}", flush=True)
    return result


def compare(pattern, when, path):
    cells = check_matrix.read_matrix(path)
    want = check_matrix.predicted(pattern)
    kinds = ("user", "internal") if pattern == "bcast" else \
        ("user", "one-sided") if pattern.startswith("one-sided") else ("user",)
    got = {k: v for k, v in cells.items() if k[0] in kinds}
    check(got == want, f"{pattern} {when}: the {' and '.join(kinds)} cells are exactly the traffic's: "
          + ("" if got == want else f"got {sorted(got.items())}, expected {sorted(want.items())}"))
    wrong = [(kind, rank, peer) for (kind, rank, peer), v in cells.items()
             if kind != "one-sided" and v[:2] != cells.get((kind, peer, rank), (0, 0, 0, 0))[2:]]
    check(not wrong, f"{pattern} {when}: every cell sent is its peer's cell received: {wrong}")


def clean(top, live):
    """spc-top --clean on live: (its result, the files left)."""
    result = subprocess.run([top, "--clean", "--dir", live], capture_output=True, text=True, timeout=60)
    print(f"$ {top} --clean --dir {live}  (exit {result.returncode})\n{result.stdout}{result.stderr}", flush=True)
    return result, sorted(os.listdir(live))


def end_every_job():
    for job, hold in JOBS:
        if job.poll() is None:
            kill(job, [int(open(path).read()) for path in glob.glob(os.path.join(hold, "ready.*"))])


def main():
    try:
        return checks()
    finally:
        end_every_job()


def checks():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    mpirun, program, reader, top, mpirun_args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
    with tempfile.TemporaryDirectory() as work:
        for pattern in ("ring", "split", "bcast", "one-sided", "one-sided-kept"):
            live, hold = os.path.join(work, pattern + "-live"), os.path.join(work, pattern + "-hold")
            os.mkdir(live)
            os.mkdir(hold)
            job, pids = held_job(mpirun, program, mpirun_args, pattern, live, hold)
            check(pids is not None, f"{pattern}: every rank holds after its traffic")
            if pids is None:
                print(kill(job, pids)[-2000:])
                continue
            running = os.path.join(work, pattern + ".running.csv")
            result = spc_matrix(reader, live, running)
            check(result.returncode == 0, f"{pattern}: spc-matrix reads the running job")
            if result.returncode == 0:
                compare(pattern, "while running", running)
            if pattern == "ring":
                before = sorted(os.listdir(live))
                result, left = clean(top, live)
                check(result.returncode == 0 and "0 files removed" in result.stdout and left == before,
                      f"{pattern}: spc-top --clean leaves the running job's {len(before)} files")
            output = kill(job, pids)
            check(job.returncode != 0, f"{pattern}: the killed job's mpirun exits non-zero ({job.returncode})")
            killed = os.path.join(work, pattern + ".killed.csv")
            result = spc_matrix(reader, live, killed)
            check(result.returncode == 0, f"{pattern}: spc-matrix reads the killed job: {output[-500:]}")
            if result.returncode == 0:
                compare(pattern, "after SIGKILL", killed)
                if pattern == "ring":
                    picture = os.path.join(work, "ring.png")
                    plot = subprocess.run(["/usr/bin/python3", "-m", "analysis.matrix_plot", killed, picture],
                                          capture_output=True, text=True, cwd=check_matrix.ROOT)
                    check(plot.returncode == 0 and os.path.getsize(picture) > 10000 and "4 ranks" in plot.stdout,
                          f"the heatmap script draws spc-matrix's CSV: {plot.stdout.strip()} {plot.stderr[-500:]}")
                # a freed communicator or window was folded: its storage file is
                # gone, MPI_COMM_WORLD's and MPI_COMM_SELF's stay (a kept window's too)
                names = os.listdir(live)
                storages = [name for name in names if name.startswith("ompi-spc-peers.")
                            and not name.endswith(".matrix")]
                matrices = [name for name in names if name.startswith("ompi-spc-peers.") and name.endswith(".matrix")]
                in_use = len(storages) > 2 * RANKS if pattern == "one-sided-kept" else len(storages) == 2 * RANKS
                check(in_use and len(matrices) == RANKS,
                      f"{pattern}: a matrix file a rank, and the storage files of what is in use "
                      f"({'more than ' if pattern == 'one-sided-kept' else ''}{2 * RANKS}): {sorted(storages)}")
                result, left = clean(top, live)
                check(result.returncode == 0 and f"{len(names)} files removed" in result.stdout and not left,
                      f"{pattern}: spc-top --clean removes the killed job's {len(names)} files, "
                      f"per-peer files too: {left} left")

        # Controls: the reader sees nothing where nothing is published.
        live, hold = os.path.join(work, "plain-live"), os.path.join(work, "plain-hold")
        os.mkdir(live)
        os.mkdir(hold)
        job, pids = held_job(mpirun, program, mpirun_args, "ring", live, hold, attach="SEND")
        check(pids is not None, "control without traffic: every rank holds")
        segments = [name for name in os.listdir(live) if name.startswith("ompi-spc.")]
        result = spc_matrix(reader, live, os.path.join(work, "plain.csv"))
        check(len(segments) == RANKS and result.returncode == 1 and "no per-peer files" in result.stderr
              and "without mpi_spc_attach naming traffic" not in result.stderr,
              f"control without traffic: {RANKS} live segments, and spc-matrix finds no per-peer files: "
              f"{segments} {result.stderr.strip()}")
        job_id = segments[0].split(".")[2] if segments else "0"
        result = spc_matrix(reader, live, os.path.join(work, "plain.csv"), job_id)
        check(result.returncode == 1 and result.stderr.strip().count("\n") == 0
              and f"no per-peer files of job {job_id} (its live segments are there: it ran without "
                  "mpi_spc_attach naming traffic)" in result.stderr,
              f"control without traffic, --job {job_id}: one line saying why: {result.stderr.strip()}")
        kill(job, pids)
        live, hold = os.path.join(work, "nolive-live"), os.path.join(work, "nolive-hold")
        os.mkdir(live)
        os.mkdir(hold)
        job, pids = held_job(mpirun, program, mpirun_args, "ring", live, hold, with_live=False)
        check(pids is not None, "control without live: every rank holds")
        result = spc_matrix(reader, live, os.path.join(work, "nolive.csv"))
        check(result.returncode == 1 and not os.listdir(live) and "no per-peer files" in result.stderr,
              f"control without live: nothing in the folder, spc-matrix says so: {result.stderr.strip()}")
        kill(job, pids)
        missing = os.path.join(work, "no-such-folder")
        result = spc_matrix(reader, missing, os.path.join(work, "x.csv"))
        check(result.returncode == 1 and result.stderr.strip() == f"spc-matrix: {missing}: No such file or directory",
              f"a folder that does not exist is named: {result.stderr.strip()}")
    if FAILURES:
        print(f"{len(FAILURES)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
