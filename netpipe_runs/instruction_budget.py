"""The fast path's instruction budget: callgrind's instructions per 1-byte
shared-memory message of the spc build (PMPI_Send and the receive match,
each inclusive of what it calls), off, all on with the exact timer, all
on with timers sampled and all on with the communicators' counters, peer
arrays and histograms (traffic),
against the budget committed in netpipe_runs/instruction_budget.json (Open MPI
4.1.4) or netpipe_runs/instruction_budget-VERSION.json (--ompi-version), and
for a PML other than ob1 in instruction_budget[-VERSION]-PML.json (--pml):
under ucx the match is MPI_Recv's, each receive made after its message
arrived (bench/pingpong.c's probe mode), so that it never waits.
The same runs also hold the nonblocking path with its completion, the timed
MPI_Wait's (bench/pingpong.c's wait mode, after the blocking round trips):
per message PMPI_Isend, PMPI_Irecv and the two PMPI_Wait (the send's and
the receive's), inclusive, each MPI_Irecv posted after MPI_Probe saw its
message so that no MPI_Wait waits; callgrind dumps at the phases' border
(--dump-before=pingpong_wait_phase), one profile each.  That mode has its
own section "wait" in the same file (compiled_out, budget, profile, goals).
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
  --mode blocking|wait  (record, baseline; repeated) write only that
          mode's figures into the file (default: every mode); check
          measures every mode the file has
  table   measure, also each consumer alone and the compiled-out build, and
          print the markdown tables of the README: per configuration, and per
          function what off adds to compiled out and each configuration to off

usage: python3 -m netpipe_runs.instruction_budget check|record|baseline --mpirun MPIRUN --program PINGPONG
           [--ompi-version VERSION] [--pml PML --mpirun-arg=ARG ...] [--mode MODE ...]
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
# The nonblocking mode's functions, under every PML: each MPI_Irecv is
# posted after MPI_Probe saw its message (ob1's arrival callback runs in
# the probe, outside these), so neither MPI_Wait polls; per message the
# two MPI_Wait of a rank (its send's and its receive's) add up.  The
# program calls WAIT_PHASE once before that mode's round trips.
WAIT_PATH = {"isend": "PMPI_Isend", "irecv": "PMPI_Irecv", "wait": "PMPI_Wait"}
WAIT_PHASE = "pingpong_wait_phase"
# The modes, each a section of the budget file: blocking its top level
# (as before the wait mode), wait its key "wait".
MODES = ("blocking", "wait")


def mode_path(pml, mode):
    """{key: function} measured inclusive in that mode."""
    return PATHS[pml][0] if mode == "blocking" else WAIT_PATH


def section(budget, mode):
    """The part of a budget file's content that holds mode's figures."""
    return budget if mode == "blocking" else budget.setdefault(mode, {"budget": {}, "goals": {}, "profile": {}})


# ob1's transport when no --mpirun-arg is given: shared memory.
OB1_MPIRUN_ARGS = ["--mca", "btl", "self,vader"]


# What each configuration turns on from MPI_Init (mpi_spc_attach and others).
CONFIGURATIONS = {
    "off": (),
    "all": (("mpi_spc_attach", "all"),),
    "all-sampled": (("mpi_spc_attach", "all"),) + study.SAMPLED,
    # and every communicator's counters, per-peer arrays and histograms,
    # which the job's communication matrix is made of (issue 38)
    "all-traffic": (("mpi_spc_attach", "all,traffic"),),
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
            mpirun_args=OB1_MPIRUN_ARGS, modes=("blocking",)):
    """Per mode (blocking, and wait if in modes, both from one run), per
    message, mean over the two ranks: {mode: {each key of its mode_path,
    "functions" (inclusive), "self"}}; preload: a library each rank
    preloads; pml (a key of PATHS) runs under mpirun_args."""
    path, program_args = PATHS[pml]
    wait = "wait" in modes
    collected = dict(path, **{"wait " + key: function for key, function in WAIT_PATH.items()}) if wait else path
    with tempfile.TemporaryDirectory() as scratch:
        pattern = os.path.join(scratch, "rank%q{OMPI_COMM_WORLD_RANK}.callgrind")
        command = [mpirun, "-np", "2", "--bind-to", "core", *mpirun_args]
        for name, value in mca:
            command += ["--mca", name, value]
        # Symbols bound when the ranks load, not at their first call: a
        # lazy binding inside PMPI_Send is a few hundred instructions once
        # a run, whose count moves with the libraries' symbol tables and
        # the program's path, not with the fast path.
        # And no malloc perturbation (meson test sets MALLOC_PERTURB_ at
        # random): with it, glibc fills each block malloc returns, and the
        # first timed call's allocation (its thread's shard, inside
        # PMPI_Send while all is on) took 0.12 instructions a message more.
        environment = dict(environment or {}, LD_BIND_NOW="1", MALLOC_PERTURB_="0")
        env = dict(os.environ, **study.MPI_ENV, **environment)
        for name in environment:
            command += ["-x", name]
        if preload:
            command += ["-x", "LD_PRELOAD=" + preload]
        command += callgrind_counts.valgrind(collected, pattern)
        if wait:
            # the blocking phase's profile into FILE.1, the wait phase's into FILE
            command += ["--dump-before=" + WAIT_PHASE]
        command += [program, str(messages), *program_args, *(["wait"] if wait else [])]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
        if result.returncode != 0:
            raise SystemExit(f"instruction_budget: {' '.join(command)} failed ({result.returncode}):\n"
                             + result.stdout + result.stderr)
        files = [pattern.replace("%q{OMPI_COMM_WORLD_RANK}", str(rank)) for rank in callgrind_counts.RANKS]
        phases = {"blocking": (path, [f + ".1" for f in files] if wait else files)}
        if wait:
            phases["wait"] = (WAIT_PATH, files)
        result = {}
        for mode, (functions_measured, mode_files) in phases.items():
            missing = [f for f in mode_files if not os.path.isfile(f)]
            if missing:
                raise SystemExit(f"instruction_budget: no {', '.join(missing)}: callgrind did not dump "
                                 f"before {WAIT_PHASE} (bench/pingpong.c without the wait mode?)")
            functions = per_message([callgrind_counts.function_profile(f) for f in mode_files], messages)
            own = per_message([callgrind_counts.function_profile(f, inclusive=False) for f in mode_files],
                              messages)
            measured = {key: functions.get(function, 0.0) for key, function in functions_measured.items()}
            missing = [f for f in functions_measured.values() if f not in functions]
            if missing:
                raise SystemExit(f"instruction_budget: callgrind saw no {', '.join(missing)} ({mode}): "
                                 "nothing was measured")
            result[mode] = dict(measured, functions=functions, self=own)
    return result


def over(measured, compiled_out, keys=("send", "match")):
    """Instructions per message over the compiled-out build, send plus match
    (or keys: a mode_path's)."""
    total = 0.0
    for key in keys:
        total += measured[key]
    for key in keys:
        total -= compiled_out[key]
    return round(total, 2)


def terms(measured, keys):
    """"send 1.00 + match 2.00": measured's figures of keys."""
    return " + ".join(f"{key} {measured[key]:.2f}" for key in keys)


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


def judge(name, now, budget, keys=("send", "match"), label=""):
    """(ok, text) for configuration name against the budget file's content
    (or a mode's section of it, keys its mode_path's; label its name)."""
    extra = over(now, budget["compiled_out"], keys)
    allowed = budget["budget"][name]
    goal = budget["goals"].get(name)
    verdict = "no goal" if goal is None else \
        f"goal {goal:+g}: {'met' if extra <= goal + EPSILON else 'not met'}"
    text = (f"{label}{name}: {terms(now, keys)} instructions per message, "
            f"{extra:+.2f} over compiled out (budget {allowed:+.2f}; {verdict})")
    if extra <= allowed + EPSILON:
        return True, text
    return False, text + "\nover budget; what grew since the recorded profile:\n" + \
        growth_table(now, budget["profile"].get(name, {}))


# Per mode, the function whose growth the controls plant.
PLANTED = {"blocking": "PMPI_Send", "wait": "PMPI_Wait"}


def controls(measured, budget, keys=("send", "match"), mode="blocking"):
    """The check must see what it looks for: an excess planted in a copy of
    the budget (or of a mode's section) is reported with the function that
    grew, and the counters turned on cost instructions (else the attach did
    not take)."""
    failures = []
    label = "" if mode == "blocking" else f"{mode}, "
    planted = json.loads(json.dumps(budget))
    planted["budget"]["off"] = over(measured["off"], budget["compiled_out"], keys) - 1
    function = PLANTED[mode]
    planted["profile"]["off"] = {"functions": dict(measured["off"]["functions"])}
    planted["profile"]["off"]["functions"][function] -= 1
    ok, text = judge("off", measured["off"], planted, keys, label)
    if ok or function not in text:
        failures.append(f"control{' (' + mode + ')' if label else ''}: an excess of 1 instruction and the "
                        "function that grew were not reported:\n" + text)
    if over(measured["all"], budget["compiled_out"], keys) <= over(measured["off"], budget["compiled_out"], keys):
        failures.append(f"control{' (' + mode + ')' if label else ''}: all on costs no more than off: "
                        "the counters did not count")
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
                       **extra)["blocking"]
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


def about(args, mode):
    """What a mode's figures are, said in the file."""
    program = " ".join(["bench/pingpong.c", *PATHS[args.pml][1]])
    common = (f"python3 -m netpipe_runs.instruction_budget: Open MPI {args.ompi_version} under pml "
              f"{args.pml} ({' '.join(args.mpirun_args)}): instructions per 1-byte message, ")
    if mode == "blocking":
        functions = PATHS[args.pml][0]
        return (common + f"{functions['send']} and {functions['match']} inclusive, mean of the two ranks of "
                f"{program}; compiled_out is the nospc build's (moves only with Open MPI); budget is the spc "
                f"build's excess over it, send plus match, as last recorded")
    return (common + f"PMPI_Isend, PMPI_Irecv and the rank's two PMPI_Wait (its send's and its receive's) "
            f"inclusive, mean of the two ranks of {program} wait's nonblocking round trips (the same runs, "
            f"after the blocking ones; each MPI_Irecv posted after MPI_Probe saw its message, so no MPI_Wait "
            f"waits); compiled_out is the nospc build's (moves only with Open MPI); budget is the spc "
            f"build's excess over it, isend plus irecv plus wait, as last recorded")


def write(budget, path):
    with open(path, "w") as f:
        json.dump(budget, f, indent=1, sort_keys=True)
        f.write("\n")


def baseline(args, path):
    """Writes the compiled-out build's figures (args.mpirun is its) of
    args.modes into path, keeping what else the file holds; prints whether
    the other modes' recorded figures still come out."""
    budget = {"messages": MESSAGES, "budget": {}, "goals": dict(GOALS), "profile": {}}
    if os.path.isfile(path):
        with open(path) as f:
            budget = json.load(f)
    measured = measure(args.mpirun, args.program, (), budget["messages"], pml=args.pml,
                       mpirun_args=args.mpirun_args, modes=MODES)
    cpu = study.machine()["cpu"]
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(args.mpirun)))
    try:
        with open(os.path.join(prefix, "build-info.json")) as f:
            info = json.load(f)
        build = f"the {info['variant']} build (content hash {info['content_hash']}) in {prefix}"
    except (OSError, ValueError, KeyError):
        build = prefix
    stamp = (f"{build}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu}, {budget['messages']} "
             "messages, python3 -m netpipe_runs.instruction_budget baseline")
    for mode in MODES:
        keys = mode_path(args.pml, mode)
        label = "" if mode == "blocking" else f" ({mode})"
        if mode not in args.modes:
            recorded = (budget if mode == "blocking" else budget.get(mode, {})).get("compiled_out")
            same = recorded is not None and all(recorded[key] == measured[mode][key] for key in keys)
            print(f"compiled out{label}: {terms(measured[mode], keys)} per message, not written "
                  f"({'as' if same else 'NOT as'} in the file)")
            continue
        part = section(budget, mode)
        part["about"] = about(args, mode)
        part["compiled_out"] = dict({key: measured[mode][key] for key in keys}, measured=stamp)
        print(f"compiled out{label}: {terms(measured[mode], keys)} per message, written into {path}")
    write(budget, path)
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
    parser.add_argument("--mode", action="append", dest="modes", choices=MODES,
                        help="record, baseline: write only this mode's figures, repeated (default: every "
                             "mode); blocking: MPI_Send and the receive's match, wait: MPI_Isend, MPI_Irecv "
                             "and MPI_Wait")
    args = parser.parse_args()
    args.modes = args.modes or list(MODES)
    if args.command in ("check", "table") and args.modes != list(MODES):
        parser.error(f"--mode is for record and baseline; {args.command} takes every mode the file has")
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
    # every mode the file has, and on record those to be written: one run
    # per configuration holds them all
    modes = [mode for mode in MODES if mode == "blocking" or mode in budget
             or (args.command == "record" and mode in args.modes)]
    for mode in modes:
        if "compiled_out" not in section(budget, mode):
            parser.error(f"{path} has no compiled-out figures of mode {mode}: run baseline --mode {mode}")
        if args.command == "check" and not section(budget, mode)["budget"]:
            parser.error(f"{path} has the compiled-out figures of mode {mode} but no budget: run record")
    runs = {name: measure(args.mpirun, args.program, mca, budget["messages"], pml=args.pml,
                          mpirun_args=args.mpirun_args, modes=modes)
            for name, mca in CONFIGURATIONS.items()}
    if args.command == "record":
        for mode in modes:
            keys = mode_path(args.pml, mode)
            part = section(budget, mode)
            if mode not in args.modes:
                same = all(over(runs[name][mode], part["compiled_out"], keys) == part["budget"].get(name)
                           for name in BUDGETED) and \
                    all(runs[name][mode][key] == part["profile"].get(name, {}).get(key)
                        for name in CONFIGURATIONS for key in keys)
                print(f"{mode}: not recorded (every configuration's figures {'as' if same else 'NOT as'} "
                      "in the file)")
                continue
            for name in CONFIGURATIONS:
                part["profile"][name] = runs[name][mode]
            for name in BUDGETED:
                part["budget"][name] = over(runs[name][mode], part["compiled_out"], keys)
        write(budget, path)
        print(f"recorded {', '.join(m for m in modes if m in args.modes)} into {path}")
    failures = []
    for mode in modes:
        keys = mode_path(args.pml, mode)
        part = section(budget, mode)
        label = "" if mode == "blocking" else f"{mode}, "
        measured = {name: runs[name][mode] for name in CONFIGURATIONS}
        failures += controls(measured, part, keys, mode)
        for name in CONFIGURATIONS:
            if name in BUDGETED:
                ok, text = judge(name, measured[name], part, keys, label)
                print(text)
                if not ok:
                    failures.append(f"{label}{name} is over its budget")
            else:
                print(f"{label}{name}: {terms(measured[name], keys)}, "
                      f"{over(measured[name], part['compiled_out'], keys):+.2f} over compiled out (not budgeted)")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
