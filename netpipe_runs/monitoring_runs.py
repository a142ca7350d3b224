"""Seed 003's monitoring against our communicator counters, on the same
traffic in the same build: the in-process A/B ping-pong (bench/ab_pingpong.c,
--counters comm: every variable bound to MPI_COMM_WORLD; comm-untimed: all
but MATCH_TIME, whose exact timer monitoring has no twin of) in the spcdso build
(our spc build with loadable components, the only way Open MPI 4.1.4 builds
its monitoring components), once with pml_monitoring_enable 0 and once with
1, per transport and round, interleaved.  Our counters' cost is each run's
on/off ratio; monitoring's is the ratio of the off blocks' latency with it to
that without it, in the same round (monitoring cannot be turned on and off
inside a process).  Monitoring's own report at MPI_Finalize
(pml_monitoring_enable_output: a line "E <rank> <peer> <n> bytes <n> msgs
sent" per rank) must show at least the timed messages, so a run it did not
watch fails.
Table: /usr/bin/python3 -m analysis.monitoring_report DIR"""
import argparse
import re

from netpipe_runs import campaign, study

BUILD = "spcdso"
MONITORING = ("off", "on")
SETS = ("comm", "comm-untimed")
# Per transport: round trips per block, measured pairs, warm-up pairs (ab_runs.py's full profile).
BLOCKS = {"vader": (2000, 200, 10), "tcp": (500, 50, 5)}


def arguments():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.monitoring_runs",
                                     description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10, help="mpirun launches per (monitoring, transport) (10)")
    parser.add_argument("--transports", default="vader,tcp", help="comma list (default vader,tcp)")
    campaign.add_arguments(parser, timeout=600, out_hint="results/monitoring/<UTC time>")
    args = parser.parse_args()
    args.transports = [study.transport(t.strip()) for t in args.transports.split(",") if t.strip()]
    if args.rounds < 1 or not args.transports or any(t.name not in BLOCKS for t in args.transports):
        parser.error("--rounds must be at least 1, --transports vader and/or tcp")
    return args


def monitored_messages(text):
    """{rank: point-to-point messages it sent}, from monitoring's report lines
    "E\t<rank>\t<peer>\t<bytes> bytes\t<count> msgs sent" (pml_monitoring_enable_output)."""
    sent = {}
    for m in re.finditer(r"^E\t(\d+)\t\d+\t\d+ bytes\t(\d+) msgs sent", text, re.MULTILINE):
        sent[int(m.group(1))] = sent.get(int(m.group(1)), 0) + int(m.group(2))
    return sent


def main():
    args = arguments()
    builds = campaign.resolve_builds([BUILD], args.cached, args.use_builds)
    out = campaign.output_folder(args.out, "monitoring")
    config = study.Configuration("spcdso, all off", "spcdso-off", BUILD, ())
    items = [campaign.Item(f"monitoring-{m}-{s}-{t.name}", BUILD, kind=t.name,
                           fields={"monitoring": m, "transport": t.name, "set": s})
             for m in MONITORING for s in SETS for t in args.transports]
    settings = {"rounds": args.rounds, "transports": [t._asdict() for t in args.transports], "blocks": BLOCKS,
                "size": 1, "bind_to": "core", "timeout": args.timeout}
    print(f"== monitoring against our communicator counters: {[t.name for t in args.transports]} x "
          f"{args.rounds} rounds in {BUILD} -> {out}", flush=True)
    with campaign.Campaign(out, "monitoring", builds, items, args.rounds, args.seed, settings) as runs:
        program = campaign.compile_programs(out, builds, "bench/ab_pingpong.c")[BUILD]
        for run in runs.pending():
            fields = run.item.fields
            round_trips, pairs, warmup = BLOCKS[fields["transport"]]
            monitoring = (["--mca", "pml_monitoring_enable", "1", "--mca", "pml_monitoring_enable_output", "1"]
                          if fields["monitoring"] == "on" else ["--mca", "pml_monitoring_enable", "0"])
            command = (study.mpirun(builds[BUILD].prefix, config, study.transport(fields["transport"]))
                       + monitoring + [program, "--counters", fields["set"], "--size", "1", "--round-trips",
                                       str(round_trips), "--pairs", str(pairs), "--warmup-pairs", str(warmup)])

            def judge(returncode, stdout, stderr, fields=fields, timed=2 * pairs * round_trips):
                verdict = campaign.bench_judge(returncode, stdout, stderr)
                if fields["monitoring"] == "on" and verdict[0] == "ok":
                    sent = monitored_messages(stdout + stderr)
                    if len(sent) != 2 or min(sent.values()) < timed:
                        return ("check-failed", f"monitoring's report {sent} does not show the {timed} timed "
                                                "messages per rank", verdict[2])
                return verdict

            runs.execute(run, command, args.timeout, judge=judge)
    print(f"saved: {out}\ntable: /usr/bin/python3 -m analysis.monitoring_report {out}")


if __name__ == "__main__":
    main()
