#!/usr/bin/env python3
"""Runs a program on NP ranks, each under rank_status.sh (beside this file),
and passes only if mpirun and every rank exited 0: each rank's own exit
status is read from the file it left, so a rank that crashed, was killed or
never ran fails the test even when mpirun or the output says nothing.

usage: check_ranks.py [--control] MPIRUN NP [MPIRUN_OPTION...] -- PROGRAM [ARGS...]
  --control  first the check's own control: a job whose rank 1 exits 3 and
             whose other ranks exit 0 must be found failing on rank 1 alone"""
import os
import signal
import subprocess
import sys
import tempfile


def status_text(status):
    """'0', '1', or 'signal 11 (SIGSEGV)' for a shell's 128 + N."""
    if status > 128:
        try:
            return f"signal {status - 128} ({signal.Signals(status - 128).name})"
        except ValueError:
            pass
    return str(status)


def run_ranks(mpirun, np, options, program, env=None):
    """Runs program on np ranks (mpirun in env, default this process's);
    the failures of mpirun and of each rank."""
    wrapper = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rank_status.sh")
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        command = [mpirun, "-np", str(np), *options, wrapper, folder, *program]
        print("$", " ".join(command), flush=True)
        result = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env)
        print(result.stdout + result.stderr)
        print(f"mpirun exited {status_text(result.returncode)}")
        if result.returncode != 0:
            failures.append(f"mpirun exited {status_text(result.returncode)}")
        for rank in range(np):
            try:
                with open(os.path.join(folder, f"rank.{rank}")) as f:
                    status = int(f.read())
            except (OSError, ValueError):
                failures.append(f"rank {rank} left no exit status")
                continue
            print(f"rank {rank} exited {status_text(status)}")
            if status != 0:
                failures.append(f"rank {rank} exited {status_text(status)}")
    return failures


def main():
    control = sys.argv[1:2] == ["--control"]
    arguments = sys.argv[1 + control:]
    if len(arguments) < 4 or "--" not in arguments[2:]:
        sys.exit(__doc__)
    mpirun, np = arguments[0], int(arguments[1])
    split = arguments.index("--", 2)
    options, program = arguments[2:split], arguments[split + 1:]
    failures = []
    if control:
        # rank 1 fails half a second after the others are done, so that mpirun
        # kills none of them before it has left its status
        seen = run_ranks(mpirun, np, options,
                         ["sh", "-c", 'test "$OMPI_COMM_WORLD_RANK" != 1 || { sleep 0.5; exit 3; }'])
        if "rank 1 exited 3" not in seen or any(f"rank {rank} " in " ".join(seen)
                                                for rank in range(np) if rank != 1):
            failures.append(f"control: a job whose rank 1 exits 3 gave {seen}")
    failures += run_ranks(mpirun, np, options, program)
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
