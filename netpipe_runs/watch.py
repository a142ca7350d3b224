"""A command under a time limit, for tests that may meet a hang of the
system under study: the command's output passes through; if it still runs
after SECONDS, every thread's backtrace of each of its processes but the
launchers is printed (campaign.backtraces), with where each process waited,
before its whole process tree is ended.  With --attempts N, a hung attempt
is a finding about the system under study, not the test's result: the
command runs again, up to N times in all (Open MPI hangs now and then
under MPI_THREAD_MULTIPLE by itself: docs/study.md, "Hangs at 8 threads").  The
exit status is the last attempt's, or 124, as timeout(1)'s, when every
attempt hung.  Give SECONDS x N below the test's own timeout, so that the
backtraces reach the test's log; ./test.sh counts the "watch: hung" lines.

usage: python3 -m netpipe_runs.watch [--attempts N] SECONDS COMMAND [ARG...]
(from the repository's root)"""
import argparse
import subprocess
import sys

from netpipe_runs import campaign

TIMED_OUT = 124
HUNG = "watch: hung"  # how a hang's report starts, for ./test.sh's count


def run(command, seconds, attempts=1, capture=False, env=None):
    """Runs COMMAND as the usage says; returns a CompletedProcess (with the
    last attempt's stdout and stderr when CAPTURE).  The hang reports go to
    this process's stdout."""
    pipe = subprocess.PIPE if capture else None
    for attempt in range(1, attempts + 1):
        proc = subprocess.Popen(command, start_new_session=True, env=env, stdout=pipe, stderr=pipe,
                                text=capture)
        try:
            out, err = proc.communicate(timeout=seconds)
            return subprocess.CompletedProcess(command, proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt:
            campaign.end_tree(proc)
            raise
        again = "; running it again" if attempt < attempts else ""
        print(f"{HUNG} (attempt {attempt} of {attempts}): still running after {seconds:g} s: "
              f"{' '.join(map(str, command))}\nwatch: the backtraces of its processes:", flush=True)
        text = campaign.backtraces(proc.pid)
        print(text, flush=True)
        print("watch: where each process waited: " + ("; ".join(campaign.waits(text)) or "nowhere known")
              + again, flush=True)
        campaign.end_tree(proc)
        out, err = proc.communicate()
    return subprocess.CompletedProcess(command, TIMED_OUT, out, err)


def main():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.watch", description=__doc__.split("\n")[0],
                                     epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=1, help="runs of a command that hangs (default 1)")
    parser.add_argument("seconds", type=float, help="how long one attempt may run")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    args = parser.parse_args()
    if args.seconds <= 0 or not args.command or args.attempts < 1:
        parser.error("give a positive number of seconds, at least one attempt and a command")
    sys.exit(run(args.command, args.seconds, args.attempts).returncode)


if __name__ == "__main__":
    main()
