"""Runs the in-process A/B ping-pong (bench/ab_pingpong.c) in our spc build:
per counter set and transport, one pair of processes alternates blocks with
the set on and off through MPI_T, once per round (a fresh mpirun, so a fresh
placement of the two vCPUs).  Tables: /usr/bin/python3 -m analysis.pairwise_report DIR"""
import argparse

from netpipe_runs import campaign, study

# Set: (counters toggled, timer sampling); the sampled sets keep their timers
# on one interval in study.TIMER_SAMPLING.
SETS = {**{name: (counters, 1) for name, counters in study.COUNTER_SETS.items()},
        "all-sampled": (study.COUNTER_SETS["all"], study.TIMER_SAMPLING),
        "match-time-sampled": (study.COUNTER_SETS["match-time"], study.TIMER_SAMPLING),
        "time-sampled": (study.COUNTER_SETS["time"], study.TIMER_SAMPLING),
        "comm": (("comm",), 1), "comm-untimed": (("comm-untimed",), 1),
        # the timed calls' hooks on with no timer: what time-sampled costs
        # besides its clock reads (issue 35)
        "calls": (("SEND", "RECV"), 1),
        # a counter whose hook is off the ping-pong's path: what the
        # switching and the measurement alone make of on against off
        "control": (("BCAST",), 1)}

# Per transport: round trips per block, measured pairs, warm-up pairs.  A TCP
# round trip over loopback is 10-140 us here against ~0.7 us on vader, so its
# blocks are shorter; ucx speaks shared memory here, as vader does.
PROFILES = {
    "smoke": {"rounds": 1, "vader": (200, 4, 1), "tcp": (20, 2, 1), "ucx": (200, 4, 1)},  # runs, no measurement
    "short": {"rounds": 1, "vader": (1000, 30, 3), "tcp": (100, 10, 2), "ucx": (1000, 30, 3)},
    "full": {"rounds": 10, "vader": (2000, 500, 10), "tcp": (500, 100, 5), "ucx": (2000, 500, 10)},
}

EPILOG = """Profiles: smoke = 1 round, vader 4 pairs of blocks of 200 round trips, tcp 2
pairs of 20 (that it runs and its checks pass, not a measurement); short = 1 round, vader 30 pairs of blocks of 1000 round trips, tcp 10
pairs of 100; full = 10 rounds, vader 500 pairs of 2000, tcp 100 pairs of 500; ucx
(pml ucx, asked for with --transports) as vader.

Counter sets: all (every SPC pvar), table4 (seed 004's Table 4), match-time,
table4-no-match, time (MPI_TIME, P2P_TIME, SEND_TIME, RECV_TIME: the time
inside the ping-pong's calls); all-sampled, match-time-sampled and
time-sampled time one interval in 64; calls (SEND and RECV, the call
counters of MPI_Send's and MPI_Recv's timed hooks) turns those hooks on
with no timer; control (BCAST: the ping-pong calls no MPI_Bcast, so its
hook's site is patched at each switch but never run, and the self-check
wants it 0) reads what the switching and the measurement alone make of
on against off;
comm toggles every variable bound to a communicator, on MPI_COMM_WORLD (the
ping-pong's), and no process-wide one; comm-untimed the same but MATCH_TIME.  mpi_spc_attach stays empty, so "off" is off; MPI_Finalize
writes the raw totals (mpi_spc_dump_file, in raw/) and the program checks
them, which shows that the off blocks counted nothing.  Ranks are bound one
per core.  Only our build can run it: upstream's pvars are continuous, MPI_T
cannot start or stop them (--builds spc,upstream records "not-applicable").
Results in DIR: meta.json, runs.jsonl, raw.tar.xz, bin/."""


def arguments():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.ab_runs",
                                     description=__doc__.split("\n")[0], epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short", help="smoke, short (default) or full")
    parser.add_argument("--sets", default=",".join(SETS),
                        help=f"comma list of counter sets (default: {','.join(SETS)})")
    parser.add_argument("--transports", default="vader,tcp",
                        help="comma list of vader, tcp and ucx (pml ucx; default vader,tcp)")
    parser.add_argument("--builds", default="spc", help="comma list of builds (default spc; upstream/nospc only "
                        "show that the A/B does not apply there)")
    parser.add_argument("--rounds", type=int, help="mpirun launches per (set, transport)")
    parser.add_argument("--size", type=int, default=1, help="message size in bytes (1)")
    parser.add_argument("--round-trips", type=int, help="round trips per block (per transport)")
    parser.add_argument("--pairs", type=int, help="measured pairs of blocks (per transport)")
    campaign.add_arguments(parser, timeout=600, out_hint="results/ab/<UTC time>")
    args = parser.parse_args()
    args.rounds = args.rounds or PROFILES[args.profile]["rounds"]
    args.sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if not args.sets or any(s not in SETS for s in args.sets):
        parser.error(f"--sets takes a comma list of {', '.join(SETS)}")
    args.transports = [study.transport(t.strip()) for t in args.transports.split(",") if t.strip()]
    args.builds = [b.strip() for b in args.builds.split(",") if b.strip()]
    if not args.transports or not args.builds or any(b not in study.VARIANTS for b in args.builds):
        parser.error(f"--transports takes vader, tcp and/or ucx, --builds {', '.join(study.VARIANTS)}")
    if args.rounds < 1 or args.size < 0 or (args.round_trips or 1) < 1 or (args.pairs or 1) < 1:
        parser.error("--rounds, --round-trips and --pairs must be at least 1, --size at least 0")
    return args


def main():
    args = arguments()
    blocks = {}
    for transport in args.transports:
        round_trips, pairs, warmup = PROFILES[args.profile][transport.name]
        blocks[transport.name] = {"round_trips": args.round_trips or round_trips, "pairs": args.pairs or pairs,
                                  "warmup_pairs": warmup}
    builds = campaign.resolve_builds(args.builds, args.cached, args.use_builds)
    out = campaign.output_folder(args.out, "ab")
    # The "off" configuration of each build: nothing attached at MPI_Init.
    off = {c.build: c for c in study.CONFIGURATIONS if c.counters == () and not c.listens}
    items = [campaign.Item(f"{b}-{s}-{t.name}", b, kind=t.name, fields={
                 "configuration": off[b].key, "set": s, "transport": t.name, "size": args.size, **blocks[t.name]})
             for b in args.builds for s in args.sets for t in args.transports]
    settings = {"profile": args.profile, "sets": args.sets, "transports": [t._asdict() for t in args.transports],
                "blocks": blocks, "size": args.size, "bind_to": "core", "timeout": args.timeout}
    print(f"== A/B ping-pong: sets {args.sets} x {[t.name for t in args.transports]} x {args.rounds} rounds "
          f"in {args.builds} -> {out}", flush=True)
    with campaign.Campaign(out, "ab", builds, items, args.rounds, args.seed, settings) as runs:
        programs = campaign.compile_programs(out, builds, "bench/ab_pingpong.c")
        for run in runs.pending():
            fields = run.item.fields
            dump = runs.path(run, ".dump.csv")
            command = (study.mpirun(builds[run.item.build].prefix, off[run.item.build],
                                    study.transport(fields["transport"]))
                       + ["--mca", "mpi_spc_dump_enabled", "true", "--mca", "mpi_spc_dump_file", dump,
                          "--mca", "mpi_spc_timer_sampling", str(SETS[fields["set"]][1]),
                          programs[run.item.build], "--counters", ",".join(SETS[fields["set"]][0]),
                          "--size", str(args.size), "--round-trips", str(fields["round_trips"]),
                          "--pairs", str(fields["pairs"]), "--warmup-pairs", str(fields["warmup_pairs"])])
            runs.execute(run, command, args.timeout, judge=campaign.bench_judge, outputs={"dump": dump})
    print(f"saved: {out}\ntables: /usr/bin/python3 -m analysis.pairwise_report {out}")


if __name__ == "__main__":
    main()
