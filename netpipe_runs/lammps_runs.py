"""What counting costs a real application: Debian's unchanged LAMMPS (an LJ
melt of 32,000 atoms, 300 steps, 2 ranks over vader) on each build's libmpi,
its loop time per configuration, interleaved over rounds.
Table: /usr/bin/python3 -m analysis.lammps_report DIR"""
import argparse
import os
import re
import shutil
import sys

from netpipe_runs import campaign, study

# Rounds and time steps (run.sh passes its --profile); smoke: that it runs, not a measurement.
PROFILES = {"smoke": {"rounds": 1, "steps": 20}, "short": {"rounds": 1, "steps": 300},
            "full": {"rounds": 5, "steps": 300}}
CONFIGURATIONS = ("baseline", "ours-off", "ours-all", "ours-all-sampled", "upstream-off", "upstream-all")
LOOP = re.compile(r"^Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms", re.M)
# The input installed with the tools (tools/examples/in.lj): LAMMPS's own
# bench/in.lj, 300 steps.
INPUT = os.path.join("share", "ompi-spc", "examples", "in.lj")


def judge(returncode, stdout, stderr):
    """ok with LAMMPS's loop time, steps and atoms as the result."""
    if returncode != 0:
        return "failed", f"exit status {returncode}", None
    found = LOOP.search(stdout)
    if not found:
        return "failed", "no 'Loop time' line in LAMMPS's output", None
    seconds, procs, steps, atoms = found.groups()
    return "ok", "", {"loop_seconds": float(seconds), "procs": int(procs), "steps": int(steps),
                      "atoms": int(atoms)}


def configurations(text):
    """The configurations of a comma list of netpipe_runs/study.py's keys."""
    return [study.configuration(k.strip()) for k in text.split(",") if k.strip()]


def items(configs):
    """One campaign item per configuration."""
    return [campaign.Item(c.key, c.build, {"configuration": c.key}) for c in configs]


def mpirun_command(prefix, config):
    """mpirun of a configuration over vader, the build's lib/ forwarded to the
    ranks (an unchanged Debian program then loads that build's libmpi)."""
    return study.mpirun(prefix, config, study.transport("vader")) + ["-x", "LD_LIBRARY_PATH"]


def execute_all(runs, builds, command, timeout):
    """Runs the campaign's pending runs: COMMAND(run, config, prefix) ->
    (command line, judge, a folder to remove after the run or None)."""
    for run in runs.pending():
        config = study.configuration(run.item.fields["configuration"])
        prefix = builds[config.build].prefix
        line, judge, folder = command(run, config, prefix)
        runs.execute(run, line, timeout, judge=judge, label=config.name,
                     env={"LD_LIBRARY_PATH": os.path.join(prefix, "lib")})
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.lammps_runs",
                                     description=__doc__.split("\n")[0],
                                     epilog="Results in DIR: meta.json, runs.jsonl, raw.tar.xz (LAMMPS's output).")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short",
                        help="smoke, short (default) or full: " + ", ".join(
                            f"{name} {p['rounds']} round(s) of {p['steps']} steps" for name, p in PROFILES.items()))
    parser.add_argument("--rounds", type=int, help="runs of each configuration (default: the profile's)")
    parser.add_argument("--steps", type=int, help="time steps of the melt (default: the profile's; 300 is the "
                        "README's)")
    parser.add_argument("--configurations", default=",".join(CONFIGURATIONS),
                        help=f"comma list (default {','.join(CONFIGURATIONS)})")
    campaign.add_arguments(parser, timeout=300, out_hint="results/lammps/<UTC time>")
    args = parser.parse_args()
    args.rounds = PROFILES[args.profile]["rounds"] if args.rounds is None else args.rounds
    args.steps = PROFILES[args.profile]["steps"] if args.steps is None else args.steps
    if args.rounds < 1 or args.steps < 1:
        parser.error("--rounds and --steps must be at least 1")
    configs = configurations(args.configurations)
    lmp = shutil.which("lmp")
    if lmp is None:
        sys.exit("lammps_runs.py: no lmp on PATH: install Debian's lammps (install_deps.sh does)")
    builds = campaign.resolve_builds({c.build for c in configs}, args.cached, args.use_builds)
    spc_input = os.path.join(builds["spc"].prefix if "spc" in builds else study.where("spc"), INPUT)
    if not os.path.isfile(spc_input):
        sys.exit(f"lammps_runs.py: no LAMMPS input at {spc_input}: is the spc build installed?")
    out = campaign.output_folder(args.out, "lammps")
    settings = {"lmp": lmp, "input": INPUT, "transport": "vader", "ranks": 2, "steps": args.steps,
                "timeout": args.timeout}

    def command(run, config, prefix):
        return (mpirun_command(prefix, config) + [lmp, "-in", spc_input, "-var", "steps", str(args.steps),
                                                   "-log", "none"], judge, None)
    with campaign.Campaign(out, "lammps", builds, items(configs), args.rounds, args.seed, settings) as runs:
        execute_all(runs, builds, command, args.timeout)
    print(f"saved: {out}\ntable: /usr/bin/python3 -m analysis.lammps_report {out}")


if __name__ == "__main__":
    main()
