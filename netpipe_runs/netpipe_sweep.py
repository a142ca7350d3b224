"""NetPIPE latency and bandwidth sweeps of the overhead study's configurations
(netpipe_runs/study.py), interleaved round by round, every output kept.
Report: /usr/bin/python3 -m analysis.netpipe_report DIR"""
import argparse
import os
import re

from netpipe_runs import campaign, netpipe, study

# Repeats per size differ by transport: a 1-byte round trip takes ~0.75 us on
# vader and ~10 us on tcp here.  Sizes are NetPIPE's own sequence (two per
# octave with -p 0).  The timeout is per mpirun, 20 times the slowest run seen
# (full: 15 s, a tcp bandwidth sweep).  Measured on a quiet machine: short
# about 1.2 minutes, full about 2 minutes per round.
PROFILES = {
    # smoke: that every configuration runs and is recorded, not a measurement.
    "smoke": {"rounds": 1, "timeout": 120, "sweeps": {
        "latency": {"low": 1, "high": 1024, "repeats": {"vader": 200, "tcp": 50}},
        "bandwidth": {"low": 65536, "high": 262144, "repeats": {"vader": 5, "tcp": 3}}}},
    "short": {"rounds": 3, "timeout": 120, "sweeps": {
        "latency": {"low": 1, "high": 65536, "repeats": {"vader": 3000, "tcp": 500}},
        "bandwidth": {"low": 65536, "high": 8388608, "repeats": {"vader": 20, "tcp": 10}}}},
    "full": {"rounds": 10, "timeout": 300, "sweeps": {
        "latency": {"low": 1, "high": 65536, "repeats": {"vader": 10000, "tcp": 2000}},
        "bandwidth": {"low": 65536, "high": 8388608, "repeats": {"vader": 100, "tcp": 50}}}},
}

EPILOG = """Each round runs every chosen configuration once per transport and sweep, in an
order shuffled per round from a recorded seed, so slow drift falls on all
configurations alike and each configuration is paired with the baseline run of
its own round (the baseline always runs, whatever --configurations says).
NetPIPE is compiled against each Open MPI build and cached by its content hash.
Before the runs, each configuration with counters attached runs a short check
with mpi_spc_dump_enabled (raw/check-*.txt) that warns when SEND, RECV or
MATCH_TIME, where attached, did not count.  A failed or timed-out run is
recorded and the sweep goes on; a build replaced under it stops it.
Results in DIR: meta.json, runs.jsonl, raw.tar.xz (NetPIPE's output, .np, and
each run's stdout and stderr)."""


def arguments():
    profiles = "\n".join(f"  {name}: {p['rounds']} rounds, timeout {p['timeout']} s per run, " + "; ".join(
        f"{s} {v['low']}..{v['high']} B, repeats " + ", ".join(f"{t} {n}" for t, n in v["repeats"].items())
        for s, v in p["sweeps"].items()) for name, p in PROFILES.items())
    parser = argparse.ArgumentParser(
        prog="python3 -m netpipe_runs.netpipe_sweep", description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG + "\n\nconfigurations: " + ", ".join(c.key for c in study.CONFIGURATIONS)
        + "\ntransports: " + ", ".join(f"{t.name} ({t.paper_case})" for t in study.TRANSPORTS)
        + "\n\nprofiles:\n" + profiles)
    parser.add_argument("--profile", choices=PROFILES, default="short", help="settings (default short)")
    parser.add_argument("--rounds", type=int, help="rounds (default: the profile's)")
    parser.add_argument("--transports", help="comma-separated transports (default: all)")
    parser.add_argument("--configurations", help="comma-separated configuration keys (default: all; "
                        "the baseline is always added)")
    parser.add_argument("--sweeps", help="comma-separated: latency,bandwidth (default: both)")
    campaign.add_arguments(parser, timeout=None, out_hint="results/netpipe/<UTC time>")
    args = parser.parse_args()
    profile = PROFILES[args.profile]
    args.rounds = args.rounds if args.rounds is not None else profile["rounds"]
    args.timeout = args.timeout if args.timeout is not None else profile["timeout"]
    if args.rounds < 1 or args.timeout <= 0:
        parser.error("--rounds must be at least 1, --timeout positive")

    def chosen(text, lookup, everything):
        return [lookup(name.strip()) for name in text.split(",") if name.strip()] if text else list(everything)
    args.transports = chosen(args.transports, study.transport, study.TRANSPORTS)
    configs = set(chosen(args.configurations, study.configuration, study.CONFIGURATIONS)) | {study.BASELINE}
    args.configurations = [c for c in study.CONFIGURATIONS if c in configs]  # study order, no duplicates
    sweeps = chosen(args.sweeps, str, profile["sweeps"])
    unknown = [s for s in sweeps if s not in profile["sweeps"]]
    if unknown:
        parser.error(f"unknown sweep '{unknown[0]}'; choose from: {', '.join(profile['sweeps'])}")
    args.sweeps = {name: profile["sweeps"][name] for name in dict.fromkeys(sweeps)}
    return args


# Counters a 1-byte ping-pong always hits; the others of Table 4 may stay 0.
SURE = ("SEND", "RECV", "MATCH_TIME")
DUMP_LINE = re.compile(study.COUNTER_PREFIX + r"(\w+)(.*)")


def counter_check(build, binary, config, out, listener=None):
    """A short ping-pong with mpi_spc_dump_enabled: which counters came out
    non-zero, and which of SURE that CONFIG attaches did not; for a
    configuration that listens, whether each rank held its event handle."""
    command = study.mpirun(build.prefix, config, study.transport("vader")) + [
        "--mca", "mpi_spc_dump_enabled", "true", binary, "-l", "1", "-u", "1", "-p", "0", "-n", "200",
        "-o", os.devnull]
    path = os.path.join(out, "raw", f"check-{config.key}.txt")
    returncode, _ = campaign.run_tree(command, study.environment(LD_LIBRARY_PATH=os.path.join(build.prefix, "lib"),
                                                                 **study.listener_environment(config, listener)),
                                      60, path, path + ".stderr")
    if config.listens:
        with open(path + ".stderr") as f:
            held = f.read().count("event_listener: 1 handle(s) with a callback")
        check = {"returncode": returncode, "ranks_with_handle": held, "output": os.path.basename(path)}
        if held != 2 or returncode != 0:
            print(f"   warning: {config.key}: {held} of 2 ranks held a handle on {config.listens}: "
                  f"see raw/check-{config.key}.txt.stderr", flush=True)
        return check
    nonzero = set()
    for name in (path, path + ".stderr"):  # the dump's stream differs between ours and upstream
        with open(name) as f:
            for line in f:
                match = DUMP_LINE.search(line)
                if match and any(int(n) > 0 for n in re.findall(r"\b\d+\b", match.group(2))):
                    nonzero.add(match.group(1))
    attached = set(SURE) if config.counters == ("all",) else set(config.counters) & set(SURE)
    check = {"returncode": returncode, "nonzero": sorted(nonzero), "missing": sorted(attached - nonzero),
             "output": os.path.basename(path)}
    if check["missing"] or returncode != 0:
        what = ", ".join(check["missing"]) or "nothing (the check run failed)"
        print(f"   warning: {config.key} attaches {study.attach_list(config)}, yet {what} did not count: "
              f"see raw/check-{config.key}.txt", flush=True)
    return check


def judge_output(path, expected):
    """A judge: mpirun ended well and the output holds every expected size."""
    def judge(returncode, stdout, stderr):
        if returncode != 0:
            return "failed", f"mpirun exit status {returncode}", None
        try:
            with open(path) as f:
                got = [row[0] for row in netpipe.parse_output(f.read())]
        except OSError:
            got = []
        if got != expected:
            return "failed", f"{len(got)} of {len(expected)} sizes in the output", None
        return "ok", "", None
    return judge


def main():
    args = arguments()
    builds = campaign.resolve_builds({c.build for c in args.configurations}, args.cached, args.use_builds)
    out = campaign.output_folder(args.out, "netpipe")
    binaries = {v: netpipe.binary(b) for v, b in builds.items()}
    items = [campaign.Item(f"{t.name}-{sweep}-{c.key}", c.build, block=f"{t.name}-{sweep}", kind=f"{t.name}-{sweep}",
                           fields={"transport": t.name, "mca": dict(t.mca), "sweep": sweep, "configuration": c.key,
                                   "configuration_name": c.name, "attach": study.attach_list(c),
                                   "low": s["low"], "high": s["high"], "repeats": s["repeats"][t.name]})
             for t in args.transports for sweep, s in args.sweeps.items() for c in args.configurations]
    settings = {"profile": args.profile, "timeout": args.timeout, "sweeps": args.sweeps,
                "transports": [t._asdict() for t in args.transports],
                "configurations": [dict(c._asdict(), attach=study.attach_list(c)) for c in args.configurations],
                "baseline": study.BASELINE.key,
                "netpipe": {"source": f"{netpipe.PACKAGE}={netpipe.VERSION}", "orig": netpipe.ORIG,
                            "recipe": netpipe.RECIPE, "options": "-p 0 (no perturbation), -n fixed repeats; "
                            "NetPIPE reports the fastest of 3 trials per size"}}
    with campaign.Campaign(out, "netpipe", builds, items, args.rounds, args.seed, settings) as runs:
        listeners = campaign.compile_listeners(out, builds, args.configurations)
        if runs.pending():
            runs.note(counter_check={c.key: counter_check(builds[c.build], binaries[c.build], c, out,
                                                          listeners.get(c.build))
                                     for c in args.configurations if c.counters or c.listens})
        print(f"== {len(runs.plan)} runs: {args.rounds} rounds x {len(args.transports)} transports x "
              f"{len(args.sweeps)} sweeps x {len(args.configurations)} configurations (seed {runs.seed}) into {out}",
              flush=True)
        for run in runs.pending():
            fields = run.item.fields
            build, output = builds[run.item.build], runs.path(run, ".np")
            expected = netpipe.sizes(fields["low"], fields["high"])
            config = study.configuration(fields["configuration"])
            command = study.mpirun(build.prefix, config, study.transport(fields["transport"])) + [
                binaries[build.variant], "-l", str(fields["low"]), "-u", str(fields["high"]), "-p", "0",
                "-n", str(fields["repeats"]), "-o", output]
            # RUNPATH loses to LD_LIBRARY_PATH: keep a stray one from choosing the library.
            runs.execute(run, command, args.timeout, judge=judge_output(output, expected),
                         env={"LD_LIBRARY_PATH": os.path.join(build.prefix, "lib"),
                              **study.listener_environment(config, listeners.get(config.build))},
                         watch=lambda text, e=expected: netpipe.progress(text, e), outputs={"output": output})
    shown = os.path.relpath(out) if not os.path.relpath(out).startswith("..") else out
    print(f"saved: {out}\nreport: /usr/bin/python3 -m analysis.netpipe_report {shown}")


if __name__ == "__main__":
    main()
