"""Counts, with callgrind, the instructions per message of the send path and
the receive match path of a 1-byte ping-pong (bench/pingpong.c) in each
study configuration: repeatable to the instruction, unlike time on this
machine.  Table: /usr/bin/python3 -m analysis.callgrind_table DIR"""
import argparse
import re
import subprocess

from netpipe_runs import campaign, study

# Where callgrind collects (inclusive of what they call): per rank, divided by
# the messages it sent (received), instructions per message.
FUNCTIONS = {"send": "PMPI_Send", "match": "mca_pml_ob1_recv_frag_callback_match"}
RANKS = (0, 1)
# Messages each rank sends (run.sh passes its --profile).
PROFILES = {"smoke": {"messages": 200}, "short": {"messages": 2000}, "full": {"messages": 20000}}


def function_profile(callgrind_file, inclusive=True):
    """{function: inclusive (or self) instructions} of one callgrind file,
    in callgrind_annotate's order: the most first.  The one reader of
    callgrind's counts: instruction_budget's profiles, the drivers' records."""
    # --threshold=100: every function; below 100 the listing stops after the
    # first function of 1% or less, and one asked for could be cut
    text = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                           "--threshold=100", callgrind_file],
                          check=True, capture_output=True, text=True).stdout
    return parse_listing(text)


def parse_listing(text):
    """{function: instructions} of a callgrind_annotate listing, from its
    lines "COUNT (PERCENT)  FILE:FUNCTION [OBJECT]" (PERCENT where the
    listing shows it): the function is what follows the token's last colon,
    up to a space.  A function that stands on more lines (code of it inlined
    from other files) keeps its first, the largest; so do the functions of
    the listing against the lines of annotated source after it that look
    alike (a count, then a token with a colon: C++'s a::b(x, y))."""
    profile = {}
    for line in text.splitlines():
        match = re.match(r"^\s*([\d,]+)\s+\([^)]*\)\s+\S+:(\S+)", line) or \
            re.match(r"^\s*([\d,]+)\s+\S+:(\S+)", line)
        if match and match.group(2) not in profile:
            profile[match.group(2)] = int(match.group(1).replace(",", ""))
    return profile


def inclusive_instructions(callgrind_file, functions=None):
    """{"send": n, "match": n}: FUNCTIONS' (or functions') inclusive
    instructions in one file, in the listing's order (as the records have
    always had them); a function the file does not hold has no key."""
    wanted = functions or FUNCTIONS
    return {key: count for name, count in function_profile(callgrind_file).items()
            for key, function in wanted.items() if function == name}


def valgrind(functions, out_pattern):
    """The callgrind command each rank runs under, collecting only inside
    FUNCTIONS, into OUT_PATTERN (with %q{OMPI_COMM_WORLD_RANK}: one file
    per rank)."""
    # --smc-check=all: our sites rewrite code that valgrind may already have
    # translated (at load, and when MPI_Init attaches)
    return ["valgrind", "--tool=callgrind", "--smc-check=all", "--collect-atstart=no",
            *(f"--toggle-collect={function}" for function in functions.values()),
            "--callgrind-out-file=" + out_pattern]


def judge_files(files, functions=None):
    """A judge that reads each rank's callgrind file (FUNCTIONS', by default
    FUNCTIONS' inclusive instructions) into the result."""
    def judge(returncode, stdout, stderr):
        if returncode != 0:
            return "failed", f"exit status {returncode}", None
        try:
            return "ok", "", {f"rank{rank}": inclusive_instructions(path, functions) for rank, path in files.items()}
        except (OSError, subprocess.CalledProcessError) as error:
            return "failed", f"callgrind_annotate: {error}", None
    return judge


def main():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.callgrind_counts",
                                     description=__doc__.split("\n")[0],
                                     epilog="Results in DIR: meta.json, runs.jsonl (each rank's inclusive "
                                            "instructions as the result), raw.tar.xz (the callgrind files).")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short",
                        help="smoke, short (default) or full: " + ", ".join(
                            f"{name} {p['messages']} messages" for name, p in PROFILES.items()))
    parser.add_argument("--messages", type=int, help="messages each rank sends (default: the profile's)")
    parser.add_argument("--configurations", help="comma list (default: all): "
                        + ", ".join(c.key for c in study.CONFIGURATIONS))
    campaign.add_arguments(parser, timeout=600, out_hint="results/callgrind/<UTC time>")
    args = parser.parse_args()
    args.messages = args.messages or PROFILES[args.profile]["messages"]
    if args.messages < 100:
        parser.error("--messages must be at least 100")
    configs = ([study.configuration(k.strip()) for k in args.configurations.split(",") if k.strip()]
               if args.configurations else study.CONFIGURATIONS)
    builds = campaign.resolve_builds({c.build for c in configs}, args.cached, args.use_builds)
    out = campaign.output_folder(args.out, "callgrind")
    vader = study.transport("vader")
    valgrind_version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    items = [campaign.Item(c.key, c.build, {"configuration": c.key, "configuration_name": c.name,
                                            "attach": study.attach_list(c), "messages": args.messages,
                                            "transport": vader.name}) for c in configs]
    settings = {"messages": args.messages, "transport": vader.name, "valgrind": valgrind_version,
                "configurations": [c.key for c in configs], "timeout": args.timeout,
                "functions": FUNCTIONS}
    # Instruction counts must stay repeatable: every run gets the same (empty) pad.
    with campaign.Campaign(out, "callgrind", builds, items, 1, args.seed, settings, env_pad=0) as runs:
        programs = campaign.compile_programs(out, builds, "bench/pingpong.c")
        listeners = campaign.compile_listeners(out, builds, configs)
        for run in runs.pending():
            config = study.configuration(run.item.fields["configuration"])
            files = {rank: runs.path(run, f".rank{rank}.callgrind") for rank in RANKS}
            command = (study.mpirun(builds[config.build].prefix, config, vader)
                       + valgrind(FUNCTIONS, runs.path(run, ".rank%q{OMPI_COMM_WORLD_RANK}.callgrind"))
                       + [programs[config.build], str(args.messages)])
            runs.execute(run, command, args.timeout, judge=judge_files(files), label=config.name,
                         env=study.listener_environment(config, listeners.get(config.build)) or None,
                         outputs={f"rank{rank}": path for rank, path in files.items()})
    print(f"saved: {out}\ntable: /usr/bin/python3 -m analysis.callgrind_table {out}")


if __name__ == "__main__":
    main()
