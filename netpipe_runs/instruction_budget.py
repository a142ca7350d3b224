"""The fast path's instruction budget: callgrind's instructions per 1-byte
shared-memory message of the spc build (PMPI_Send and the receive match,
each inclusive of what it calls), off, all on with the exact timer and all
on with timers sampled,
against the budget committed in netpipe_runs/instruction_budget.json (Open MPI
4.1.4) or netpipe_runs/instruction_budget-VERSION.json (--ompi-version), and
for a PML other than ob1 in instruction_budget[-VERSION]-PML.json (--pml):
under ucx the match is MPI_Recv's, each receive made after its message
arrived (bench/pingpong.c's probe mode), so that it never waits.
Instruction counts repeat to the instruction, so this is a test, not a
benchmark; the compiled-out figures the budget is set over are in that file
(they move only with Open MPI itself), so the check needs no second Open MPI
build.

  check   measure and fail if a configuration is over its budget, printing
          per function what grew since the profile recorded in the file;
          first shows, on planted profiles, that it reports an excess and the
          function that grew, and that "all on" costs more than "off"
  record  measure and write the profile and the budgets into the file (after
          a change meant to cost or save, said in its commit)
  baseline  measure the compiled-out build (--mpirun and --program the nospc
          build's) and write its figures into the file, made if missing:
          once per Open MPI and PML, before the first record
  table   measure, also each consumer alone and the compiled-out build, and
          print the markdown tables of the README: per configuration, and per
          function what off adds to compiled out and each configuration to off

usage: python3 -m netpipe_runs.instruction_budget check|record|baseline --mpirun MPIRUN --program PINGPONG
           [--ompi-version VERSION] [--pml PML --mpirun-arg=ARG ...]
       python3 -m netpipe_runs.instruction_budget table --mpirun MPIRUN --program PINGPONG
           --compiled-out-mpirun MPIRUN --compiled-out-program PINGPONG --listener LIBEVENT_LISTENER
           --upstream-mpirun MPIRUN --upstream-program PINGPONG"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from netpipe_runs import callgrind_counts, study



def budget_file(ompi_version, pml="ob1"):
    """Each Open MPI's and PML's own: their compiled-out figures and code differ."""
    suffix = ("" if ompi_version == "4.1.4" else f"-{ompi_version}") + ("" if pml == "ob1" else f"-{pml}")
    return os.path.join(study.REPO, "netpipe_runs", f"instruction_budget{suffix}.json")


# Per PML: the functions measured (inclusive) and the ping-pong's mode.
# ob1 matches in the BTL's callback, which runs once per message whatever
# the timing; ucx matches inside MPI_Recv, which would also count its
# polling unless the message is there before it (bench/pingpong.c probe).
PATHS = {
    "ob1": (callgrind_counts.FUNCTIONS, []),
    "ucx": ({"send": "PMPI_Send", "match": "PMPI_Recv"}, ["probe"]),
}
# ob1's transport when no --mpirun-arg is given: shared memory.
OB1_MPIRUN_ARGS = ["--mca", "btl", "self,vader"]


# What each configuration turns on from MPI_Init (mpi_spc_attach and others).
CONFIGURATIONS = {
    "off": (),
    "all": (("mpi_spc_attach", "all"),),
    "all-sampled": (("mpi_spc_attach", "all"),) + study.SAMPLED,
}
BUDGETED = tuple(CONFIGURATIONS)
# Each consumer alone (table): name: (MCA pairs, listens to an event, the
# PMLs that have the consumer).
CONSUMERS = {
    "the ping-pong's counters (Table 4) but MATCH_TIME": (
        (("mpi_spc_attach", study.attach_list(study.configuration("ours-table4-no-match"))),), False,
        ("ob1", "ucx")),
    "MATCH_TIME alone": ((("mpi_spc_attach", study.attach_list(study.configuration("ours-match-time"))),),
                         False, ("ob1",)),
    "communicator counters (traffic)": ((("mpi_spc_attach", "traffic"),), False, ("ob1", "ucx")),
    "one unexpected_insert event handle": ((), True, ("ob1",)),
}
# The event the listener subscribes to in that configuration.
LISTENED_EVENT = {"SPC_LISTEN_EVENT": "ompi_pml_ob1_unexpected_insert"}
# A new budget file's messages per rank, and its goals (issues 24 and 34:
# off at most 8 instructions over compiled out under every PML).
MESSAGES = 10000
GOALS = {"off": 8}
# Growth below this (per message) is rounding, not a change.
EPSILON = 0.05


def per_message(profiles, messages):
    """{function: mean over the ranks' profiles, per message}."""
    return {name: round(sum(p.get(name, 0) for p in profiles) / len(profiles) / messages, 2)
            for name in set().union(*profiles)}


def measure(mpirun, program, mca, messages, preload=None, environment=None, pml="ob1",
            mpirun_args=OB1_MPIRUN_ARGS):
    """Per message, mean over the two ranks: {"send", "match", "functions"
    (inclusive), "self"}; preload: a library each rank preloads; pml (a key
    of PATHS) runs under mpirun_args."""
    path, program_args = PATHS[pml]
    with tempfile.TemporaryDirectory() as scratch:
        pattern = os.path.join(scratch, "rank%q{OMPI_COMM_WORLD_RANK}.callgrind")
        command = [mpirun, "-np", "2", "--bind-to", "core", *mpirun_args]
        for name, value in mca:
            command += ["--mca", name, value]
        # Symbols bound when the ranks load, not at their first call: a
        # lazy binding inside PMPI_Send is a few hundred instructions once
        # a run, whose count moves with the libraries' symbol tables and
        # the program's path, not with the fast path.
        environment = dict(environment or {}, LD_BIND_NOW="1")
        env = dict(os.environ, **study.MPI_ENV, **environment)
        for name in environment:
            command += ["-x", name]
        if preload:
            command += ["-x", "LD_PRELOAD=" + preload]
        command += callgrind_counts.valgrind(path, pattern) + [program, str(messages), *program_args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
        if result.returncode != 0:
            raise SystemExit(f"instruction_budget: {' '.join(command)} failed ({result.returncode}):\n"
                             + result.stdout + result.stderr)
        files = [pattern.replace("%q{OMPI_COMM_WORLD_RANK}", str(rank)) for rank in callgrind_counts.RANKS]
        functions = per_message([callgrind_counts.function_profile(f) for f in files], messages)
        own = per_message([callgrind_counts.function_profile(f, inclusive=False) for f in files], messages)
    measured = {key: functions.get(function, 0.0) for key, function in path.items()}
    missing = [f for f in path.values() if f not in functions]
    if missing:
        raise SystemExit(f"instruction_budget: callgrind saw no {', '.join(missing)}: nothing was measured")
    return dict(measured, functions=functions, self=own)


def over(measured, compiled_out):
    """Instructions per message over the compiled-out build, send plus match."""
    return round(measured["send"] + measured["match"] - compiled_out["send"] - compiled_out["match"], 2)


def growth_table(now, recorded):
    """Markdown rows of the functions whose count per message grew."""
    rows = []
    for name, value in now["functions"].items():
        before = recorded.get("functions", {}).get(name, 0.0)
        if value - before > EPSILON:
            rows.append((value - before, name, before, value))
    rows.sort(reverse=True)
    lines = ["| function (inclusive) | recorded | now | grew |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {before:.2f} | {value:.2f} | {grew:+.2f} |" for grew, name, before, value in rows]
    return "\n".join(lines) if rows else "(no function grew: a function new to the path? see the totals)"


def judge(name, now, budget):
    """(ok, text) for configuration name against the budget file's content."""
    extra = over(now, budget["compiled_out"])
    allowed = budget["budget"][name]
    goal = budget["goals"].get(name)
    verdict = "no goal" if goal is None else \
        f"goal {goal:+g}: {'met' if extra <= goal + EPSILON else 'not met'}"
    text = (f"{name}: send {now['send']:.2f} + match {now['match']:.2f} instructions per message, "
            f"{extra:+.2f} over compiled out (budget {allowed:+.2f}; {verdict})")
    if extra <= allowed + EPSILON:
        return True, text
    return False, text + "\nover budget; what grew since the recorded profile:\n" + \
        growth_table(now, budget["profile"].get(name, {}))


def controls(measured, budget):
    """The check must see what it looks for: an excess planted in a copy of
    the budget is reported with the function that grew, and the counters
    turned on cost instructions (else the attach did not take)."""
    failures = []
    planted = json.loads(json.dumps(budget))
    planted["budget"]["off"] = over(measured["off"], budget["compiled_out"]) - 1
    function = "PMPI_Send"
    planted["profile"]["off"] = {"functions": dict(measured["off"]["functions"])}
    planted["profile"]["off"]["functions"][function] -= 1
    ok, text = judge("off", measured["off"], planted)
    if ok or function not in text:
        failures.append("control: an excess of 1 instruction and the function that grew were not reported:\n"
                        + text)
    if over(measured["all"], budget["compiled_out"]) <= over(measured["off"], budget["compiled_out"]):
        failures.append("control: all on costs no more than off: the counters did not count")
    return failures


def self_table(rows):
    """Markdown: per function, the self instructions per message each column
    adds to the one before it.  rows: [(label, measured)], the first the
    reference."""
    names = sorted(set().union(*(m["self"] for _, m in rows)))
    header = "| function (self) | " + " | ".join(label for label, _ in rows) + " |"
    lines = [header, "|---" * (len(rows) + 1) + "|"]
    for name in names:
        values = [m["self"].get(name, 0.0) for _, m in rows]
        if max(abs(v - values[0]) for v in values) < EPSILON:
            continue
        cells = [f"{values[0]:.1f}"] + [f"{v - values[0]:+.1f}" for v in values[1:]]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table(args, budget):
    """The README's tables, every configuration measured in this one run."""
    def run(mpirun, program, mca, **extra):
        return measure(mpirun, program, mca, budget["messages"], pml=args.pml, mpirun_args=args.mpirun_args,
                       **extra)
    rows = [("compiled out", run(args.compiled_out_mpirun, args.compiled_out_program, ()))]
    for name, mca in CONFIGURATIONS.items():
        rows.append((name, run(args.mpirun, args.program, mca)))
    for name, (mca, listens, pmls) in CONSUMERS.items():
        if args.pml in pmls:
            rows.append((name, run(args.mpirun, args.program, mca, preload=args.listener if listens else None,
                                   environment=LISTENED_EVENT if listens else None)))
    upstream = [(f"upstream {name}", run(args.upstream_mpirun, args.upstream_program, mca))
                for name, mca in CONFIGURATIONS.items() if name != "all-sampled"]
    compiled_out = rows[0][1]
    base = {"send": compiled_out["send"], "match": compiled_out["match"]}
    match = PATHS[args.pml][0]["match"]
    print(f"| configuration | PMPI_Send | {match} | send + match over compiled out |")
    print("|---|---:|---:|---:|")
    for label, m in rows + upstream:
        print(f"| {label} | {m['send']:.1f} | {m['match']:.1f} | {over(m, base):+.1f} |")
    print()
    print(self_table([rows[0], rows[1]]))
    print()
    print(self_table(rows[1:]))


def baseline(args, path):
    """Writes the compiled-out build's figures (args.mpirun is its) into
    path, keeping what else the file holds."""
    budget = {"messages": MESSAGES, "budget": {}, "goals": dict(GOALS), "profile": {}}
    if os.path.isfile(path):
        with open(path) as f:
            budget = json.load(f)
    functions = PATHS[args.pml][0]
    budget["about"] = (f"python3 -m netpipe_runs.instruction_budget: Open MPI {args.ompi_version} under pml "
                       f"{args.pml} ({' '.join(args.mpirun_args)}): instructions per 1-byte message, "
                       f"{functions['send']} and {functions['match']} inclusive, mean of the two ranks of "
                       f"bench/pingpong.c {' '.join(PATHS[args.pml][1])}; compiled_out is the nospc "
                       f"build's (moves only with Open MPI); budget is the spc build's excess over it, "
                       f"send plus match, as last recorded")
    measured = measure(args.mpirun, args.program, (), budget["messages"], pml=args.pml,
                       mpirun_args=args.mpirun_args)
    cpu = study.machine()["cpu"]
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(args.mpirun)))
    try:
        with open(os.path.join(prefix, "build-info.json")) as f:
            info = json.load(f)
        build = f"the {info['variant']} build (content hash {info['content_hash']}) in {prefix}"
    except (OSError, ValueError, KeyError):
        build = prefix
    budget["compiled_out"] = {"send": measured["send"], "match": measured["match"],
                              "measured": f"{build}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                                          f"{cpu}, {budget['messages']} messages, "
                                          "python3 -m netpipe_runs.instruction_budget baseline"}
    with open(path, "w") as f:
        json.dump(budget, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"compiled out: send {measured['send']:.2f} + match {measured['match']:.2f} per message, "
          f"written into {path}")


def main():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.instruction_budget",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("check", "record", "baseline", "table"))
    parser.add_argument("--mpirun", required=True, help="the spc build's mpirun")
    parser.add_argument("--program", required=True, help="bench/pingpong.c built against that build")
    parser.add_argument("--compiled-out-mpirun", help="table: the nospc build's mpirun")
    parser.add_argument("--compiled-out-program", help="table: bench/pingpong.c built against it")
    parser.add_argument("--listener", help="table: bench/event_listener.c built as a shared library")
    parser.add_argument("--upstream-mpirun", help="table: the upstream build's mpirun")
    parser.add_argument("--upstream-program", help="table: bench/pingpong.c built against it")
    parser.add_argument("--ompi-version", default="4.1.4", help="whose budget file (default 4.1.4)")
    parser.add_argument("--pml", choices=sorted(PATHS), default="ob1",
                        help="the PML measured, with its own budget file (default ob1)")
    parser.add_argument("--mpirun-arg", action="append", dest="mpirun_args", metavar="ARG",
                        help="one argument of mpirun that selects the PML and its transport, repeated "
                             f"(default under ob1: {' '.join(OB1_MPIRUN_ARGS)}); required under another PML")
    args = parser.parse_args()
    if args.mpirun_args is None:
        if args.pml != "ob1":
            parser.error(f"--pml {args.pml} needs the mpirun arguments that select it (--mpirun-arg=...)")
        args.mpirun_args = OB1_MPIRUN_ARGS
    paths = [args.mpirun, args.program]
    if args.command == "table":
        extra = [args.compiled_out_mpirun, args.compiled_out_program, args.listener, args.upstream_mpirun,
                 args.upstream_program]
        if None in extra:
            parser.error("table needs --compiled-out-mpirun, --compiled-out-program, --listener, "
                         "--upstream-mpirun and --upstream-program")
        paths += extra
    for path in paths:
        if not os.path.isfile(path):
            parser.error(f"{path}: no such file")
    path = budget_file(args.ompi_version, args.pml)
    if args.command == "baseline":
        baseline(args, path)
        return
    if not os.path.isfile(path):
        parser.error(f"{path}: no budget recorded for Open MPI {args.ompi_version} under pml {args.pml}; "
                     f"write the nospc build's figures with baseline, then run record")
    with open(path) as f:
        budget = json.load(f)
    if "profile" not in budget:
        parser.error(f"{path} has the compiled-out figures but no budget yet: run record")
    if args.command == "table":
        table(args, budget)
        return
    measured = {name: measure(args.mpirun, args.program, mca, budget["messages"], pml=args.pml,
                              mpirun_args=args.mpirun_args)
                for name, mca in CONFIGURATIONS.items()}
    if args.command == "record":
        for name in CONFIGURATIONS:
            budget["profile"][name] = measured[name]
        for name in BUDGETED:
            budget["budget"][name] = over(measured[name], budget["compiled_out"])
        with open(path, "w") as f:
            json.dump(budget, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"recorded into {path}")
    failures = controls(measured, budget)
    for name in CONFIGURATIONS:
        if name in BUDGETED:
            ok, text = judge(name, measured[name], budget)
            print(text)
            if not ok:
                failures.append(f"{name} is over its budget")
        else:
            print(f"{name}: send {measured[name]['send']:.2f} + match {measured[name]['match']:.2f}, "
                  f"{over(measured[name], budget['compiled_out']):+.2f} over compiled out (not budgeted)")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
