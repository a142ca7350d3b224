"""Runs the paper's multi-threaded pairwise benchmark (bench/pairwise.c, seed
004 section 6.1, Table 3) in the study's configurations, T threads per rank,
rounds interleaved.  Tables: /usr/bin/python3 -m analysis.pairwise_report DIR"""
import argparse
from typing import NamedTuple

from netpipe_runs import campaign, study


class Setup(NamedTuple):
    """A study configuration and how the program treats its counters.  In the
    "off" setups nothing turns a counter on (--no-counters, nothing
    attached); reading happens outside the timed part, so the "all" setups
    time the same code as with --no-counters."""
    key: str
    name: str
    config: str       # study.CONFIGURATIONS key
    program_args: tuple


SETUPS = [
    # the Table 3 reproduction: nothing attached, counters started through MPI_T before the warm-up
    Setup("ours-mpit", "ours, counters started through MPI_T", "ours-off", ()),
    Setup("baseline", "baseline (SPC compiled out)", "baseline", ("--no-counters",)),
    Setup("ours-off", "ours, all off", "ours-off", ("--no-counters",)),
    Setup("ours-all", "ours, all on (attach all)", "ours-all", ()),
    Setup("ours-all-sampled", f"ours, all on, timers 1 in {study.TIMER_SAMPLING}", "ours-all-sampled", ()),
    Setup("upstream-off", "upstream, all off", "upstream-off", ("--no-counters",)),
    # upstream's pvars are continuous: read as differences, counting only what is attached
    Setup("upstream-all", "upstream, all on (attach all)", "upstream-all", ()),
]

PROFILES = {
    "smoke": {"rounds": 1, "threads": [1, 2], "iterations": 5, "warmup": 1},  # runs and checks, no measurement
    "short": {"rounds": 2, "threads": [1, 2, 4, 8], "iterations": 100, "warmup": 10},
    "full": {"rounds": 10, "threads": [1, 2, 4, 8], "iterations": 100, "warmup": 10},
}

# --bind-to none: the machine has 2 cores and the benchmark up to 8 threads per
# rank.  Bound to one core per rank, a rank's threads could only time-share
# that core while the other rank's core idles; unbound, any runnable thread of
# either rank can use any idle core, the closest this machine comes to the
# paper's one core per thread.
EPILOG = """Profiles: smoke = 1 round of T = 1 2, I = 5, warm-up 1 (that it runs); short = 2 rounds, full = 10 rounds; both T = 1 2 4 8, I = 100, warm-up 10.
Setups: """ + "; ".join(f"{s.key}: {s.name}" for s in SETUPS) + """.
Results in DIR: meta.json, runs.jsonl (one record per run, the program's JSON
line as its result), raw.tar.xz (each run's output), bin/ (the program, per build)."""


def arguments():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.pairwise_runs",
                                     description=__doc__.split("\n")[0], epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short", help="smoke, short (default) or full")
    parser.add_argument("--setups", default=",".join(s.key for s in SETUPS),
                        help="comma list of setups (default: all)")
    parser.add_argument("--threads", help="comma list of threads per rank (default 1,2,4,8)")
    parser.add_argument("--rounds", type=int, help="repetitions of every (setup, T) (profile)")
    parser.add_argument("--iterations", type=int, help="measured iterations (100)")
    parser.add_argument("--warmup", type=int, help="warm-up iterations (10)")
    parser.add_argument("--window", type=int, default=256, help="messages per window (256)")
    parser.add_argument("--size", type=int, default=64, help="bytes per message (64)")
    parser.add_argument("--no-ack", action="store_true", help="pass --no-ack to the program")
    parser.add_argument("--bind-to", default="none", help="mpirun --bind-to (default none, see the source)")
    parser.add_argument("--transport", default="vader", choices=[t.name for t in study.TRANSPORTS],
                        help="BTL pair (default vader, as in the paper)")
    # A T=8 run takes 2-6 s here; Open MPI 4.1.4 itself hangs in a few of
    # 100 of them (every build, Debian's too): a hang is recorded and the run
    # started again (campaign.HANG_ATTEMPTS), after a limit well above a run.
    campaign.add_arguments(parser, timeout=60, out_hint="results/pairwise/<UTC time>")
    args = parser.parse_args()
    profile = PROFILES[args.profile]
    args.rounds = args.rounds or profile["rounds"]
    args.iterations = args.iterations or profile["iterations"]
    args.warmup = profile["warmup"] if args.warmup is None else args.warmup
    try:
        args.threads = [int(t) for t in args.threads.split(",")] if args.threads else profile["threads"]
    except ValueError:
        parser.error(f"--threads must be a comma list of whole numbers, not '{args.threads}'")
    known = {s.key: s for s in SETUPS}
    wanted = [key.strip() for key in args.setups.split(",") if key.strip()]
    unknown = [key for key in wanted if key not in known]
    if unknown or not wanted:
        parser.error(f"unknown setup(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}")
    args.setups = [known[key] for key in wanted]
    if args.rounds < 1 or args.iterations < 1 or args.warmup < 0 or any(t < 1 for t in args.threads):
        parser.error("--rounds, --iterations and every --threads value must be at least 1, --warmup at least 0")
    return args


def main():
    args = arguments()
    transport = study.transport(args.transport)
    builds = campaign.resolve_builds({study.configuration(s.config).build for s in args.setups}, args.cached,
                                     args.use_builds)
    out = campaign.output_folder(args.out, "pairwise")
    items = []
    for setup in args.setups:
        config = study.configuration(setup.config)
        for t in args.threads:
            items.append(campaign.Item(f"{setup.key}-T{t}", config.build, kind=f"T{t}", fields={
                "setup": setup.key, "setup_name": setup.name, "configuration": config.key,
                "attach": study.attach_list(config), "threads": t, "transport": transport.name}))
    settings = {"profile": args.profile, "threads": args.threads, "iterations": args.iterations,
                "warmup": args.warmup, "window": args.window, "size": args.size, "ack": not args.no_ack,
                "bind_to": args.bind_to, "transport": transport._asdict(), "timeout": args.timeout,
                "setups": [s._asdict() for s in args.setups]}
    print(f"== pairwise: {len(args.setups)} setups x T in {args.threads} x {args.rounds} rounds -> {out}",
          flush=True)
    with campaign.Campaign(out, "pairwise", builds, items, args.rounds, args.seed, settings) as runs:
        programs = campaign.compile_programs(out, builds, "bench/pairwise.c")
        for run in runs.pending():
            config = study.configuration(run.item.fields["configuration"])
            setup = next(s for s in args.setups if s.key == run.item.fields["setup"])
            command = (study.mpirun(builds[config.build].prefix, config, transport, bind_to=args.bind_to)
                       + [programs[config.build], "--threads", str(run.item.fields["threads"]),
                          "--window", str(args.window), "--size", str(args.size),
                          "--iterations", str(args.iterations), "--warmup", str(args.warmup)]
                       + (["--no-ack"] if args.no_ack else []) + list(setup.program_args))
            runs.execute(run, command, args.timeout, judge=campaign.bench_judge)
    print(f"saved: {out}\ntables: /usr/bin/python3 -m analysis.pairwise_report {out}")


if __name__ == "__main__":
    main()
