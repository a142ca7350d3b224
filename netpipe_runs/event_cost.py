"""Callgrind instructions per 1-byte ping-pong message (bench/pingpong.c over
vader, the "spc" build, no counter on) with no MPI_T event handle, and with
bench/event_listener.c preloaded: a handle on every ob1 event of
MPI_COMM_WORLD with a THREAD_SAFE callback that does nothing.  Same build,
same program binary; only LD_PRELOAD differs.  Instructions are repeatable,
so one run of each suffices: a campaign of one round without environment
pads, as callgrind_counts.py's.

usage: python3 -m netpipe_runs.event_cost [--messages N] [--out DIR]
Results in DIR: meta.json, runs.jsonl (each rank's inclusive instructions as
the result), raw.tar.xz (the callgrind files), and summary.md, the table."""
import argparse
import os

from netpipe_runs import callgrind_counts, campaign, study

# Where events are raised, and none inside another (a nested --toggle-collect
# would switch collection off): the send, a receive's start (posted queue,
# unexpected queue), the arrival's match (arrival, out of sequence, posted
# and unexpected queues).  PMPI_Recv as a whole would count its polling.
FUNCTIONS = {"send": "PMPI_Send", "start": "mca_pml_ob1_recv_req_start",
             "match": "mca_pml_ob1_recv_frag_callback_match"}
ROWS = {"send": "`PMPI_Send`", "start": "the receive's start (`mca_pml_ob1_recv_req_start`)",
        "match": "the arrival's match (`mca_pml_ob1_recv_frag_callback_match`)"}
# (item, what it measures): without and with the listener preloaded
CASES = (("plain", "no handle"), ("listening", "handles, no-op callbacks"))


def per_message(record):
    """{function key: instructions per message, both ranks' mean} of a record."""
    ranks = record["result"]
    return {key: sum(counts.get(key, 0) for counts in ranks.values()) / (len(ranks) * record["messages"])
            for key in FUNCTIONS}


def table(records):
    """The markdown table of the ok records: per function, each case and the difference."""
    cases = {r["case"]: per_message(r) for r in records if r["status"] == "ok"}
    plain, listening = (cases.get(name) for _, name in CASES)
    lines = ["| where | " + " | ".join(name for _, name in CASES) + " | difference |", "|---|---:|---:|---:|"]
    for key, row in ROWS.items():
        cells = [f"{case[key]:.1f}" if case else "–" for case in (plain, listening)]
        difference = f"{listening[key] - plain[key]:+.1f}" if plain and listening else "–"
        lines.append(f"| {row} | {' | '.join(cells)} | {difference} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.event_cost",
                                     description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2000, help="messages each rank sends (default 2000)")
    campaign.add_arguments(parser, timeout=600, out_hint="results/event_cost/<UTC time>")
    args = parser.parse_args()
    if args.messages < 100:
        parser.error("--messages must be at least 100")
    builds = campaign.resolve_builds({"spc"}, args.cached, args.use_builds)
    out = campaign.output_folder(args.out, "event_cost")
    config, vader = study.configuration("ours-off"), study.transport("vader")
    items = [campaign.Item(key, config.build, {"case": name, "preload": key == "listening", "messages": args.messages,
                                               "configuration": config.key, "transport": vader.name})
             for key, name in CASES]
    settings = {"messages": args.messages, "transport": vader.name, "functions": FUNCTIONS, "timeout": args.timeout}
    # Instruction counts must stay repeatable: every run gets the same (empty) pad.
    with campaign.Campaign(out, "event_cost", builds, items, 1, args.seed, settings, env_pad=0) as runs:
        pingpong = campaign.compile_programs(out, builds, "bench/pingpong.c")[config.build]
        listener = campaign.compile_programs(out, builds, "bench/event_listener.c", library=True,
                                             flags=campaign.C_FLAGS + ("-Wextra", "-Werror"))[config.build]
        for run in runs.pending():
            preload = run.item.fields["preload"]
            files = {rank: runs.path(run, f".rank{rank}.callgrind") for rank in callgrind_counts.RANKS}
            command = (study.mpirun(builds[config.build].prefix, config, vader)
                       + (["-x", "LD_PRELOAD"] if preload else [])
                       + callgrind_counts.valgrind(FUNCTIONS, runs.path(run, ".rank%q{OMPI_COMM_WORLD_RANK}.callgrind"))
                       + [pingpong, str(args.messages)])
            runs.execute(run, command, args.timeout, judge=callgrind_counts.judge_files(files, FUNCTIONS),
                         env={"LD_PRELOAD": listener} if preload else None, label=run.item.fields["case"],
                         outputs={f"rank{rank}": path for rank, path in files.items()})
    text = table(campaign.read_records(out))
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    print(f"instructions per message ({args.messages} per rank, both ranks' mean):\n{text}saved: {out}")


if __name__ == "__main__":
    main()
