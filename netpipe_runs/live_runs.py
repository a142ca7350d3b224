"""What mpi_spc_live costs (issue 11, README "Live counters"), as one
interleaved campaign in our spc build:
  ab        the in-process A/B ping-pong (bench/ab_pingpong.c, every counter
            toggled on and off through MPI_T), with and without mpi_spc_live:
            its on/off ratio and one-way times per run
  pairwise  the pairwise benchmark (bench/pairwise.c, 2 ranks x T threads,
            attach all), with and without mpi_spc_live: its message rate
  read      one full read of a held 2-rank job by spc-top and one scrape of
            spc-exporter (netpipe_runs/live_read_cost.py)
Live and plain runs of one round run next to each other in a shuffled order,
so compare them within rounds.  Tables: /usr/bin/python3 -m analysis.live_report DIR"""
import argparse
import os
import sys

from netpipe_runs import campaign, study

# Where the live runs publish (a tmpfs like the default /dev/shm, kept apart).
LIVE_DIR = "/dev/shm/spc-live-bench"
LIVE = (("mpi_spc_live", "1"), ("mpi_spc_live_dir", LIVE_DIR))

PROFILES = {
    "short": {"rounds": 2, "ab": {"vader": (1000, 30, 3), "tcp": (100, 10, 2)}, "threads": [1, 4],
              "reads": 500, "scrapes": 50},
    "full": {"rounds": 10, "ab": {"vader": (2000, 200, 10), "tcp": (500, 40, 5)}, "threads": [1, 4],
             "reads": 2000, "scrapes": 300},
}


def with_live(config, live):
    """CONFIG itself, or the same with mpi_spc_live on."""
    if not live:
        return config
    return config._replace(name=config.name + ", live", key=config.key + "-live", mca=config.mca + LIVE)


def arguments():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.live_runs",
                                     description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short", help="short (default) or full")
    parser.add_argument("--steps", default="ab,pairwise,read", help="comma list of ab, pairwise, read")
    parser.add_argument("--rounds", type=int, help="rounds (profile: 2 short, 10 full)")
    campaign.add_arguments(parser, timeout=120, out_hint="results/live/<UTC time>")
    args = parser.parse_args()
    args.steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    if not args.steps or any(s not in ("ab", "pairwise", "read") for s in args.steps):
        parser.error("--steps takes a comma list of ab, pairwise, read")
    args.rounds = args.rounds or PROFILES[args.profile]["rounds"]
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main():
    args = arguments()
    profile = PROFILES[args.profile]
    builds = campaign.resolve_builds({"spc"}, args.cached, args.use_builds)
    out = campaign.output_folder(args.out, "live")
    off, everything = study.configuration("ours-off"), study.configuration("ours-all")
    items = []
    for live in (False, True):
        mode = "live" if live else "plain"
        if "ab" in args.steps:
            for transport in study.TRANSPORTS:
                round_trips, pairs, warmup = profile["ab"][transport.name]
                items.append(campaign.Item(f"ab-{mode}-{transport.name}", "spc", kind=f"ab-{transport.name}", fields={
                    "step": "ab", "live": live, "configuration": with_live(off, live).key, "set": "all",
                    "transport": transport.name, "round_trips": round_trips, "pairs": pairs,
                    "warmup_pairs": warmup}))
        if "pairwise" in args.steps:
            for threads in profile["threads"]:
                items.append(campaign.Item(f"pairwise-{mode}-T{threads}", "spc", kind=f"pairwise-T{threads}", fields={
                    "step": "pairwise", "live": live, "configuration": with_live(everything, live).key,
                    "threads": threads, "transport": "vader"}))
    if "read" in args.steps:
        items.append(campaign.Item("read", "spc", kind="read", fields={
            "step": "read", "live": True, "reads": profile["reads"], "scrapes": profile["scrapes"]}))
    settings = {"profile": args.profile, "steps": args.steps, "live_dir": LIVE_DIR, "timeout": args.timeout,
                "ab_set": "all", "pairwise": {"window": 256, "size": 64, "iterations": 100, "warmup": 10,
                                              "bind_to": "none"}}
    print(f"== live counters' cost: {[i.name for i in items]} x {args.rounds} rounds -> {out}", flush=True)
    prefix = builds["spc"].prefix
    with campaign.Campaign(out, "live", builds, items, args.rounds, args.seed, settings) as runs:
        programs = {name: campaign.compile_programs(out, builds, f"bench/{name}.c")["spc"]
                    for name in ("ab_pingpong", "pairwise")}
        live_job = campaign.compile_programs(out, builds, "tools/live/tests/live_job.c",
                                             flags=("-std=gnu11",) + campaign.C_FLAGS[1:])["spc"]
        for run in runs.pending():
            f = run.item.fields
            if f["step"] == "ab":
                config = with_live(off, f["live"])
                dump = runs.path(run, ".dump.csv")
                command = (study.mpirun(prefix, config, study.transport(f["transport"]))
                           + ["--mca", "mpi_spc_dump_enabled", "true", "--mca", "mpi_spc_dump_file", dump,
                              programs["ab_pingpong"], "--counters", "all", "--size", "1",
                              "--round-trips", str(f["round_trips"]), "--pairs", str(f["pairs"]),
                              "--warmup-pairs", str(f["warmup_pairs"])])
                runs.execute(run, command, args.timeout, judge=campaign.bench_judge, outputs={"dump": dump})
            elif f["step"] == "pairwise":
                config = with_live(everything, f["live"])
                command = (study.mpirun(prefix, config, study.transport("vader"), bind_to="none")
                           + [programs["pairwise"], "--threads", str(f["threads"]), "--window", "256",
                              "--size", "64", "--iterations", "100", "--warmup", "10"])
                runs.execute(run, command, args.timeout, judge=campaign.bench_judge)
            else:
                # a module of this package: it starts as this driver did (working folder, PYTHONPATH)
                command = [sys.executable, "-m", "netpipe_runs.live_read_cost",
                           "--mpirun", os.path.join(prefix, "bin", "mpirun"), "--job", live_job,
                           "--top", os.path.join(prefix, "bin", "spc-top"),
                           "--exporter", os.path.join(prefix, "bin", "spc-exporter"), "--dir", LIVE_DIR,
                           "--reads", str(f["reads"]), "--scrapes", str(f["scrapes"])]
                runs.execute(run, command, args.timeout, judge=campaign.bench_judge)
    print(f"saved: {out}\ntables: /usr/bin/python3 -m analysis.live_report {out}")


if __name__ == "__main__":
    main()
