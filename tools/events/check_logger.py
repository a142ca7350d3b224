#!/usr/bin/env python3
"""The MPI_T event logger over the unchanged pairwise benchmark.

usage: check_logger.py MPIRUN LOGGER PAIRWISE PLOT_SCRIPT SCRATCH TRANSPORT CONSTRUCTORS

With 4 thread pairs per rank, the logger's per-rank queue profile counts as
many unexpected messages as the UNEXPECTED counter and as many
out-of-sequence holds as OUT_OF_SEQUENCE, both read through MPI_T in the
same run; every arrival searched the posted receives once and every search
ended, as its search profile counts; its CSV has one row per recorded event, none dropped; pairwise's
own checks still pass (the application's results are unchanged); the plot
script draws both figures; a full disk (the CSV is /dev/full) gives one
message per rank and the job completes.  Over comm_constructors (CONSTRUCTORS), which
makes one communicator with each constructor the logger wraps and 3
unexpected messages on each, rank 1's CSV holds exactly 3 unexpected
inserts, tags 0..2, on each of them.  Then misuse: an unknown name in SPC_EVENTS is
named once, and an unwritable folder gives one message while the job still
completes.
"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile

from netpipe_runs import watch

FAILURES = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        FAILURES.append(what)


def run(mpirun, logger, pairwise, transport, out, events=None, extra=("--threads", "4", "--iterations", "5")):
    env = dict(os.environ, SPC_EVENTS_DIR=out)
    command = [mpirun, "-np", "2", "--mca", "btl", "self," + transport, "-x", "LD_PRELOAD=" + logger,
               "-x", "SPC_EVENTS_DIR"]
    if events is not None:
        env["SPC_EVENTS"] = events
        command += ["-x", "SPC_EVENTS"]
    command += [pairwise, *extra]
    print("$ " + " ".join(command), flush=True)
    # 4 threads a rank: Open MPI may hang by itself (netpipe_runs.watch)
    return watch.run(command, 60, 3, capture=True, env=env)


def profile(path):
    with open(path) as f:
        return dict(line.split() for line in f if line.strip())


def check_constructors(mpirun, logger, constructors, transport, out):
    result = run(mpirun, logger, constructors, transport, out, events="unexpected_insert", extra=())
    made = [int(line.split(":")[1]) for line in result.stdout.splitlines()
            if line.startswith("communicators with traffic:")]
    check(result.returncode == 0 and len(made) == 1,
          f"comm_constructors under the logger exits 0 and says how many communicators: {result.stderr[-1000:]}")
    with open(os.path.join(out, "spc-events.1.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["event"] == "unexpected_insert" and r["tag"] in ("0", "1", "2")]
    per_comm = {}
    for r in rows:
        per_comm.setdefault(r["comm_id"], []).append(int(r["tag"]))
    check(len(per_comm) == (made[0] if made else -1) and all(sorted(t) == [0, 1, 2] for t in per_comm.values()),
          f"3 unexpected inserts, tags 0..2, on each of the {made} communicators: {per_comm}")


def main():
    mpirun, logger, pairwise, plot, scratch, transport, constructors = sys.argv[1:8]
    os.makedirs(scratch, exist_ok=True)
    work = tempfile.mkdtemp(dir=scratch, prefix="logger-" + transport + "-")
    try:
        out = os.path.join(work, "events")
        result = run(mpirun, logger, pairwise, transport, out)
        check(result.returncode == 0, f"pairwise under the logger exits 0 ({result.returncode}): {result.stderr[-2000:]}")
        check('"ok": true' in result.stdout, "pairwise's own checks pass under the logger")
        oos_total = 0
        for rank in (0, 1):
            p = profile(os.path.join(out, f"spc-events.{rank}.profile"))
            for queue, counter in (("unexpected", "UNEXPECTED"), ("out_of_sequence", "OUT_OF_SEQUENCE")):
                check(p.get(f"{queue}.messages") == p.get(f"mpit.{counter}") and f"mpit.{counter}" in p,
                      f"rank {rank}: {queue} messages {p.get(queue + '.messages')} = {counter} through MPI_T "
                      f"{p.get('mpit.' + counter)}")
            oos_total += int(p.get("out_of_sequence.messages", 0))
            check(p.get("events.dropped") == "0", f"rank {rank}: no event dropped")
            with open(os.path.join(out, f"spc-events.{rank}.csv")) as f:
                rows = list(csv.DictReader(f))
            check(str(len(rows)) == p.get("events.recorded"),
                  f"rank {rank}: {len(rows)} CSV rows, one per recorded event ({p.get('events.recorded')})")
            inserts = sum(r["event"] == "unexpected_insert" for r in rows)
            removes = sum(r["event"] == "unexpected_remove" for r in rows)
            check(str(inserts) == p.get("unexpected.messages") and inserts == removes,
                  f"rank {rank}: {inserts} unexpected inserts and {removes} removes in the CSV")
            count = {name: sum(r["event"] == name for r in rows) for name in
                     ("message_arrived", "search_posted_begin", "search_posted_end",
                      "search_unexpected_begin", "search_unexpected_end")}
            check(count["message_arrived"] == count["search_posted_begin"] == count["search_posted_end"]
                  == int(p["search_posted.searches"]),
                  f"rank {rank}: each arrival searched the posted queue once: {count}")
            check(count["search_unexpected_begin"] == count["search_unexpected_end"]
                  == int(p["search_unexpected.searches"]),
                  f"rank {rank}: every unexpected-queue search ended: {count}")
        print(f"out-of-sequence messages over both ranks: {oos_total}")
        figures = subprocess.run(["/usr/bin/python3", plot, out, "--out", work], capture_output=True, text=True)
        check(figures.returncode == 0 and all(os.path.getsize(os.path.join(work, name)) > 0
                                              for name in ("queue_length.png", "time_in_queue.png")),
              f"the plot script draws both figures: {figures.stderr[-1000:]}")

        check_constructors(mpirun, logger, constructors, transport, os.path.join(work, "constructors"))

        result = run(mpirun, logger, pairwise, transport, os.path.join(work, "named"),
                     events="unexpected_insert,nope")
        check(result.returncode == 0 and result.stderr.count("no event named 'nope'") == 1,
              f"an unknown SPC_EVENTS name is said once, the job completes: {result.stderr[-1000:]}")
        for rank in (0, 1):
            rows = list(csv.DictReader(open(os.path.join(work, "named", f"spc-events.{rank}.csv"))))
            p = profile(os.path.join(work, "named", f"spc-events.{rank}.profile"))
            check({r["event"] for r in rows} <= {"unexpected_insert"} and str(len(rows)) == p["unexpected.messages"],
                  f"rank {rank}: only the named event is recorded, once per unexpected message ({len(rows)})")

        blocked = os.path.join(work, "file-not-folder")
        open(blocked, "w").close()
        result = run(mpirun, logger, pairwise, transport, os.path.join(blocked, "events"))
        check(result.returncode == 0 and '"ok": true' in result.stdout,
              "with an unwritable folder the job completes and its checks pass")
        check(result.stderr.count("cannot create the folder") == 2,
              f"one message per rank names the folder: {result.stderr[-1000:]}")

        # a full disk: each rank's CSV is /dev/full
        full = os.path.join(work, "full")
        os.makedirs(full)
        for rank in (0, 1):
            os.symlink("/dev/full", os.path.join(full, f"spc-events.{rank}.csv"))
        result = run(mpirun, logger, pairwise, transport, full)
        check(result.returncode == 0 and '"ok": true' in result.stdout,
              "with a full disk the job completes and its checks pass")
        check(result.stderr.count("No space left on device") == 2,
              f"one message per rank says the disk is full: {result.stderr[-1000:]}")
        check(all(os.path.exists(os.path.join(full, f"spc-events.{rank}.profile")) for rank in (0, 1)),
              "the profiles are still written")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
