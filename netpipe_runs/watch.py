"""A command under a time limit, for tests that may meet a hang of the
system under study: the command's output passes through; if it still runs
after SECONDS, every thread's backtrace of each of its processes but the
launchers is printed (campaign.backtraces), with where each process waited,
before its whole process tree is ended, and the exit status is 124, as
timeout(1)'s.  Otherwise its own exit status.  Give SECONDS below the
test's own timeout, so that the backtraces reach the test's log.

usage: python3 -m netpipe_runs.watch SECONDS COMMAND [ARG...]  (from the repository's root)"""
import argparse
import subprocess
import sys

from netpipe_runs import campaign

TIMED_OUT = 124


def main():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.watch", description=__doc__.split("\n")[0],
                                     epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seconds", type=float, help="how long the command may run")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    args = parser.parse_args()
    if args.seconds <= 0 or not args.command:
        parser.error("give a positive number of seconds and a command")
    proc = subprocess.Popen(args.command, start_new_session=True)
    try:
        sys.exit(proc.wait(timeout=args.seconds))
    except subprocess.TimeoutExpired:
        pass
    except KeyboardInterrupt:
        campaign.end_tree(proc)
        raise
    print(f"watch: still running after {args.seconds:g} s: {' '.join(args.command)}\n"
          "watch: the backtraces of its processes:", flush=True)
    text = campaign.backtraces(proc.pid)
    print(text, flush=True)
    print("watch: where each process waited: " + ("; ".join(campaign.waits(text)) or "nowhere known"), flush=True)
    campaign.end_tree(proc)
    sys.exit(TIMED_OUT)


if __name__ == "__main__":
    main()
