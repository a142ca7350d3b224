#!/usr/bin/env python3
"""Runs the in-process A/B ping-pong (bench/ab_pingpong.c) in our spc build:
for each counter set and transport, one pair of processes alternates blocks
with the set on and off through MPI_T (ABBA order), R times (each a fresh
mpirun, so a fresh placement of the two vCPUs); saves raw output and
per-run metadata.

Counter sets: all (every SPC pvar), table4 (seed 004's Table 4), match-time
(MATCH_TIME only), table4-no-match (Table 4 minus MATCH_TIME).

mpi_spc_attach stays empty, so "off" is off; MPI_Finalize writes the raw
totals (mpi_spc_dump_enabled, mpi_spc_dump_file) and the program checks
them, which shows that the off blocks counted nothing.  Ranks are bound one
per core (the ping-pong has one thread per rank).

Only our build can run it: upstream's pvars are continuous, MPI_T cannot
start or stop them (--builds spc,upstream records that as "not-applicable").

usage: netpipe_runs/ab_runs.py [--profile short|full] [--out DIR] ...
Results: DIR/runs.jsonl, DIR/raw/*.out|*.err|*.dump.csv, DIR/meta.json,
DIR/bin/.  Tables: /usr/bin/python3 analysis/pairwise_report.py DIR"""
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ of pairwise_runs next to the sources
import study  # noqa: E402
from pairwise_runs import Campaign, utc_stamp  # noqa: E402

SETS = tuple(study.COUNTER_SETS)

# Per transport: round trips per block, measured pairs, warm-up pairs.  A TCP
# round trip over loopback is 10-140 us here against ~0.7 us on vader, so its
# blocks are shorter.
PROFILES = {
    "short": {"rounds": 1, "vader": (1000, 30, 3), "tcp": (100, 10, 2)},
    "full": {"rounds": 10, "vader": (2000, 500, 10), "tcp": (500, 100, 5)},
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Profiles: short = 1 round, vader 30 pairs of blocks "
                                            "of 1000 round trips, tcp 10 pairs of 100; full = 10 "
                                            "rounds, vader 500 pairs of 2000, tcp 100 pairs of "
                                            "500.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short",
                        help="short (default) or full")
    parser.add_argument("--out", help="results folder (default results/ab/<UTC time>)")
    parser.add_argument("--sets", default=",".join(SETS), help="comma list of counter sets "
                        "(default: " + ",".join(SETS) + ")")
    parser.add_argument("--transports", default="vader,tcp", help="comma list (default vader,tcp)")
    parser.add_argument("--builds", default="spc",
                        help="comma list of builds (default spc; upstream/nospc only show that "
                             "the A/B does not apply there)")
    parser.add_argument("--rounds", type=int, help="mpirun launches per (set, transport)")
    parser.add_argument("--size", type=int, default=1, help="message size in bytes (1)")
    parser.add_argument("--round-trips", type=int, help="round trips per block (per transport)")
    parser.add_argument("--pairs", type=int, help="measured pairs of blocks (per transport)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mpirun (600)")
    parser.add_argument("--seed", type=int, help="seed of the per-round order (default: time)")
    args = parser.parse_args()

    profile = PROFILES[args.profile]
    rounds = args.rounds or profile["rounds"]
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if not sets or any(s not in SETS for s in sets):
        parser.error(f"--sets takes a comma list of {', '.join(SETS)}, not '{args.sets}'")
    transports = [study.transport(t.strip()) for t in args.transports.split(",") if t.strip()]
    builds = [b.strip() for b in args.builds.split(",") if b.strip()]
    if not transports or any(b not in ("spc", "nospc", "upstream") for b in builds) or not builds:
        parser.error("--transports takes vader and/or tcp, --builds spc, nospc and/or upstream")
    if rounds < 1 or args.size < 0 or (args.round_trips or 1) < 1 or (args.pairs or 1) < 1:
        parser.error("--rounds, --round-trips and --pairs must be at least 1, --size at least 0")
    seed = args.seed if args.seed is not None else int(time.time())
    out = os.path.abspath(args.out or os.path.join(study.REPO, "results", "ab", utc_stamp()))
    os.makedirs(out, exist_ok=True)

    blocks = {}
    for transport in transports:
        round_trips, pairs, warmup = profile[transport.name]
        blocks[transport.name] = {"round_trips": args.round_trips or round_trips,
                                  "pairs": args.pairs or pairs, "warmup_pairs": warmup}
    print(f"== A/B ping-pong: sets {sets} x {[t.name for t in transports]} x {rounds} rounds "
          f"in {builds} -> {out}", flush=True)
    campaign = Campaign("ab", out, "ab_pingpong.c", builds)
    campaign.write_meta(args, {"profile": args.profile, "rounds": rounds, "sets": sets,
                               "transports": [t._asdict() for t in transports],
                               "blocks": blocks, "size": args.size, "seed": seed,
                               "bind_to": "core"})

    # The "off" configuration of each build: nothing attached at MPI_Init.
    off = {c.build: c for c in study.CONFIGURATIONS if c.counters == ()}
    rng = random.Random(seed)
    items = []
    for round_ in range(rounds):
        order = [(b, s, t) for b in builds if b in campaign.programs for s in sets
                 for t in transports]
        rng.shuffle(order)
        items += [(round_,) + item for item in order]
    for k, (round_, build, set_, transport) in enumerate(items, 1):
        config = off[build]
        tag = f"{build}-{set_}-{transport.name}-r{round_ + 1}"
        dump = os.path.join(out, "raw", f"{k:04d}-{tag}.dump.csv")
        b = blocks[transport.name]
        command = (study.mpirun(campaign.prefixes[build], config, transport)
                   + ["--mca", "mpi_spc_dump_enabled", "true", "--mca", "mpi_spc_dump_file", dump,
                      campaign.programs[build], "--counters", ",".join(study.COUNTER_SETS[set_]),
                      "--size", str(args.size),
                      "--round-trips", str(b["round_trips"]), "--pairs", str(b["pairs"]),
                      "--warmup-pairs", str(b["warmup_pairs"])])
        campaign.run(k, len(items), f"{build} {set_} {transport.name} round {round_ + 1}", tag,
                     command, args.timeout,
                     {"build": build, "build_hash": campaign.builds[build].get("content_hash"),
                      "configuration": config.key, "set": set_, "transport": transport.name,
                      "round": round_ + 1, "size": args.size, **b})
    print(f"saved: {out}\ntables: /usr/bin/python3 analysis/pairwise_report.py {out}")


if __name__ == "__main__":
    main()
