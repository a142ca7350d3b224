"""What counting costs an unchanged Debian application other than LAMMPS:
one application of tools/apps/apps.json (default NWChem, the SCF energy of
water: ARMCI over MPI one-sided, collectives, a few sends) on 2 ranks over
vader, on each build's libmpi, its job's wall time (mpirun's start to end,
timed by a parent blocked in waitpid)
per configuration, interleaved over rounds, its physical result checked in
every run.  Table: /usr/bin/python3 -m analysis.app_report DIR"""
import argparse
import json
import os
import re
import shutil
import sys

from netpipe_runs import campaign, lammps_runs, study

APPS_JSON = os.path.join(study.REPO, "tools", "apps", "apps.json")
INPUTS = os.path.join(study.REPO, "tools", "apps", "inputs")
# compiled out / off / all on (the README's LAMMPS row has the same three).
CONFIGURATIONS = ("baseline", "ours-off", "ours-all")
# The job's wall time, measured by a parent that blocks in waitpid: the
# record's own "seconds" come from campaign.run_tree, whose Popen.wait(timeout)
# polls the child with sleeps of up to 50 ms, so they move in 50 ms steps.
TIMER = ("import subprocess, sys, time; t = time.perf_counter(); rc = subprocess.call(sys.argv[1:]); "
         "print(f'app_runs: wall seconds {time.perf_counter() - t:.6f}', file=sys.stderr); sys.exit(rc)")
WALL = re.compile(r"^app_runs: wall seconds ([0-9.]+)$", re.M)


# What tools/apps/run_apps.py takes from here too: apps.json read, a run's
# folder, its environment and its physical result.
def applications():
    """apps.json's applications (its keys that start with "_" are notes)."""
    with open(APPS_JSON) as f:
        return {k: v for k, v in json.load(f).items() if not k.startswith("_")}


def fresh_folder(path, app):
    """PATH made anew, holding APP's inputs (the applications write their
    files beside them); PATH."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    for name in app["inputs"]:
        shutil.copy(os.path.join(INPUTS, name), path)
    return path


def exported_environment(app):
    """mpirun's options that give every rank APP's environment."""
    return [x for k, v in app["env"].items() for x in ("-x", f"{k}={v}")]


def physical_result(app, folder, stdout):
    """(APP's physical result, "") of a run in FOLDER that printed STDOUT:
    its result regex's first group at its last match in its result file;
    (None, what is missing) if the file or the match is."""
    spec = app["result"]
    text = stdout
    if spec["file"] != "stdout":
        try:
            with open(os.path.join(folder, spec["file"]), errors="replace") as f:
                text = f.read()
        except OSError:
            return None, f"no {spec['file']}"
    found = re.findall(spec["regex"], text, re.M)
    return (found[-1], "") if found else (None, f"no {spec['name']} in its output")


def judge_in(app, folder):
    """The judge of one run: ok with the physical result (and the wall time
    the record keeps) when the job exits 0 and prints its result."""
    def judge(returncode, stdout, stderr):
        if returncode != 0:
            return "failed", f"exit status {returncode}", None
        result, missing = physical_result(app, folder, stdout)
        if result is None:
            return "failed", missing, None
        wall = WALL.search(stderr)
        if not wall:
            return "failed", "no wall time from the timer", None
        return "ok", "", {"physical_result": result, "wall_seconds": float(wall.group(1))}
    return judge


def main():
    apps = applications()
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.app_runs", description=__doc__.split("\n")[0],
                                     epilog="Results in DIR: meta.json, runs.jsonl, raw.tar.xz (the jobs' output).")
    parser.add_argument("--app", choices=sorted(apps), default="nwchem", help="the application (default nwchem)")
    parser.add_argument("--rounds", type=int, default=10, help="runs of each configuration (default 10)")
    parser.add_argument("--configurations", default=",".join(CONFIGURATIONS),
                        help=f"comma list of netpipe_runs/study.py's (default {','.join(CONFIGURATIONS)})")
    campaign.add_arguments(parser, timeout=120, out_hint="results/app/<UTC time>")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    app = apps[args.app]
    program = shutil.which(app["program"])
    if program is None:
        sys.exit(f"app_runs.py: no {app['program']} on PATH: install Debian's {app['package']} "
                 "(install_deps.sh does)")
    configs = lammps_runs.configurations(args.configurations)
    builds = campaign.resolve_builds({c.build for c in configs}, args.cached, args.use_builds)
    out = campaign.output_folder(args.out, "app")
    settings = {"app": args.app, "program": program, "args": app["args"], "inputs": app["inputs"],
                "env": app["env"], "transport": "vader", "ranks": 2, "timeout": args.timeout}

    def command(run, config, prefix):
        # Each run in a folder of its own holding the inputs, removed once judged.
        folder = fresh_folder(runs.path(run, ".d"), app)
        return ([sys.executable, "-c", TIMER] + lammps_runs.mpirun_command(prefix, config) + exported_environment(app)
                + ["-wdir", folder, program] + app["args"],
                judge_in(app, folder), folder)

    with campaign.Campaign(out, "app", builds, lammps_runs.items(configs), args.rounds, args.seed,
                           settings) as runs:
        lammps_runs.execute_all(runs, builds, command, args.timeout)
    print(f"saved: {out}\ntable: /usr/bin/python3 -m analysis.app_report {out}")


if __name__ == "__main__":
    main()
