"""Tables from the campaigns of netpipe_runs/pairwise_runs.py and netpipe_runs/ab_runs.py:
the Table 3 reproduction next to the paper's numbers, the message-rate
comparison of the configurations, and the in-process A/B of counters on
against off.

usage: /usr/bin/python3 -m analysis.pairwise_report RESULTS_DIR [RESULTS_DIR ...] [--out DIR]

Each RESULTS_DIR is a folder of either driver (meta.json says which); several
folders of one kind are pooled.  Written to DIR (default: the first
RESULTS_DIR): table3.csv, rates.csv (pairwise), ab.csv (A/B) and report.md,
each starting with the date, the machine and the commands that reproduce it.
Medians are over repetitions, with the range [min-max] as the spread."""
import argparse
import csv
import datetime
import json
import os
import shlex
import statistics
import sys

from netpipe_runs import campaign

# Seed 004 (Eberius et al., EuroMPI/USA 2017), Table 3: W = 256, S = 64 B,
# I = 100, vader, threads of each process on another socket of a dual
# 10-core Xeon E5-2650 v3.  Columns: message rate (msg/s), receives, OOS
# messages, % OOS, wall time (us), match time (us), OOS match time (us).
PAPER_TABLE3 = {
    2: (601773.54, 56320, 16633, 29.53, 85598, 9634, 9875),
    4: (476174.73, 112640, 47216, 41.92, 218807, 34312, 51196),
    8: (162458.93, 225280, 112813, 50.08, 1260863, 96465, 729187),
}
TABLE3_COLUMNS = [("message_rate", "message rate (msg/s)"), ("receives", "receives"),
                  ("oos", "OOS messages"), ("oos_percent", "% OOS"),
                  ("wall_time_us", "wall time (us)"), ("match_time_us", "match time (us)"),
                  ("oos_match_time_us", "OOS match time (us)")]
# Setups whose counters are read, the reproduction first.
COUNTER_SETUPS = ["ours-mpit", "ours-all", "upstream-all"]
RATE_SETUPS = ["baseline", "ours-off", "ours-all", "ours-all-sampled", "ours-mpit", "upstream-off",
               "upstream-all"]
# (numerator, denominator): ratios of rates within one round.
RATIOS = [("ours-off", "baseline"), ("ours-all", "ours-off"), ("ours-all-sampled", "ours-off"),
          ("ours-mpit", "ours-off"),
          ("ours-all", "baseline"), ("upstream-off", "baseline"),
          ("upstream-all", "upstream-off"), ("ours-all", "upstream-all")]


def load(folder):
    """meta (its settings at the top level) and the records of a campaign."""
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
        runs = campaign.read_records(folder)
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"pairwise_report.py: {folder} is not a results folder of the drivers: {error}")
    meta.update(meta.pop("settings", {}))
    for run in runs:
        run["folder"] = folder
    return meta, runs


def spread(values, decimals=0):
    """'median [min-max]' of the values, or '-' without any."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    fmt = f"{{:,.{decimals}f}}"
    med = fmt.format(statistics.median(values))
    if len(values) == 1 or min(values) == max(values):
        return med
    return f"{med} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return {"n": 0, "median": None, "min": None, "max": None}
    return {"n": len(values), "median": statistics.median(values), "min": min(values),
            "max": max(values)}


def quartiles(values):
    if len(values) < 4:
        return None, None
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def table3_value(run, key):
    result = run["result"]
    if key in ("message_rate", "wall_time_us"):
        return result.get(key)
    return result.get("table3", {}).get(key)


def header_lines(metas, report_command):
    """Date, machine and reproducing commands, as '# ' lines."""
    machine = metas[0]["machine"]
    lines = [f"date of this report: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
             f"machine: {machine['cpu']}, {machine['cores']} cores, kernel {machine['kernel']}; "
             f"repository commit {machine['commit']}{' (with local changes)' if machine['dirty'] else ''}"]
    for meta in metas:
        builds = ", ".join(f"{v} {b.get('content_hash')}" for v, b in sorted(meta["builds"].items()))
        lines.append(f"measured {meta['started']} ({meta['kind']}; builds: {builds}): "
                     f"cd {meta['cwd']} && {meta['command']}")
    lines.append(f"tables: {report_command}")
    return lines


def write_csv(path, header, fieldnames, rows):
    with open(path, "w", newline="") as f:
        for line in header:
            f.write(f"# {line}\n")
        writer = csv.DictWriter(f, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)


def markdown_table(columns, rows):
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# ---- pairwise -------------------------------------------------------------------

def pairwise_tables(metas, runs, out, header):
    ok = [r for r in runs if r["status"] == "ok"]
    md, csv_rows = [], []
    threads = sorted({r["threads"] for r in runs})
    params = {(m.get("window"), m.get("size"), m.get("iterations"), m.get("warmup"), m.get("ack"),
               m.get("bind_to")) for m in metas}
    md.append("## Pairwise benchmark: Table 3 reproduction\n")
    md.append("Parameters (window, size, iterations, warm-up, ack, mpirun --bind-to): "
              + "; ".join(str(p) for p in sorted(params, key=str)) + ". Counters are the "
              "receiving rank's (rank 1), started before the warm-up; rate and wall time cover "
              "the measured iterations only. Each cell: median over repetitions "
              "[min-max]. Paper rows: seed 004, Table 3 (their machine: dual 10-core Xeon "
              "E5-2650 v3, one core per thread; here: 2 vCPUs shared by 2 x T threads).\n")
    columns = ["T", "source", "runs"] + [label for _, label in TABLE3_COLUMNS]
    rows = []
    for setup in COUNTER_SETUPS:
        mine = [r for r in ok if r["setup"] == setup]
        if not mine:
            continue
        for t in threads:
            cell_runs = [r for r in mine if r["threads"] == t]
            if not cell_runs:
                continue
            row = [t, f"{setup} ({cell_runs[0]['setup_name']})", len(cell_runs)]
            record = {"threads": t, "source": setup, "runs": len(cell_runs)}
            for key, _ in TABLE3_COLUMNS:
                values = [table3_value(r, key) for r in cell_runs]
                row.append(spread(values, 2 if key == "oos_percent" else 0))
                s = summary(values)
                record.update({f"{key}_median": s["median"], f"{key}_min": s["min"],
                               f"{key}_max": s["max"]})
                if s["n"] == 0:
                    record[f"{key}_note"] = ", ".join(sorted({
                        r["result"]["counters"]["rank1"].get(
                            {"receives": "IRECV", "oos": "OUT_OF_SEQUENCE", "oos_percent": "OUT_OF_SEQUENCE",
                             "match_time_us": "MATCH_TIME", "oos_match_time_us": "OOS_MATCH_TIME"}[key],
                            {}).get("status", "?") for r in cell_runs}))
                    row[-1] = record[f"{key}_note"]
            rows.append(row)
            csv_rows.append(record)
            if setup == COUNTER_SETUPS[0] and t in PAPER_TABLE3:
                paper = PAPER_TABLE3[t]
                rows.append([t, "paper (seed 004, Table 3)", "-"] +
                            [f"{v:,.2f}" if i in (0, 3) else f"{v:,}" for i, v in enumerate(paper)])
                record = {"threads": t, "source": "paper", "runs": None}
                for (key, _), value in zip(TABLE3_COLUMNS, paper):
                    record.update({f"{key}_median": value, f"{key}_min": value, f"{key}_max": value})
                csv_rows.append(record)
    md.append(markdown_table(columns, rows) + "\n")
    fields = ["threads", "source", "runs"]
    for key, _ in TABLE3_COLUMNS:
        fields += [f"{key}_median", f"{key}_min", f"{key}_max", f"{key}_note"]
    write_csv(os.path.join(out, "table3.csv"), header, fields, csv_rows)

    # the one count known exactly, from each run's own parameters
    def expected_receives(result):
        return result["threads"] * result["window"] * (result["iterations"] + result["warmup"])
    wrong = [r for r in ok if r["result"]["table3"].get("receives") not in
             (None, expected_receives(r["result"]))]
    md.append("Receives equal T x W x (I + warm-up) in every run that read them"
              + (f", except {len(wrong)} runs: " + ", ".join(r["stdout"] for r in wrong) if wrong else "")
              + ".\n")
    if len(params) > 1:
        md.append("**The folders pooled here ran with different parameters (above): the medians "
                  "mix them.**\n")

    # rate comparison
    md.append("## Pairwise benchmark: message rate by configuration\n")
    md.append("Message rate (msg/s) of the measured iterations: median over rounds [min-max]. "
              "Ratios are taken within a round (the two runs of a ratio ran in the same round "
              "of the interleaved order), then median [min-max] over rounds.\n")
    present = [s for s in RATE_SETUPS if any(r["setup"] == s for r in ok)]
    ratios = [(a, b) for a, b in RATIOS if a in present and b in present]
    rate_rows, rate_csv = [], []
    names = {r["setup"]: r["setup_name"] for r in runs}
    for t in threads:
        row = [t]
        record = {"threads": t}
        for setup in present:
            values = [r["result"]["message_rate"] for r in ok if r["setup"] == setup and r["threads"] == t]
            row.append(spread(values) + f" (n={len(values)})")
            s = summary(values)
            record.update({f"{setup}_median": s["median"], f"{setup}_min": s["min"],
                           f"{setup}_max": s["max"], f"{setup}_n": s["n"]})
        for a, b in ratios:
            per_round = []
            for folder_round in sorted({(r["folder"], r["round"]) for r in ok if r["threads"] == t}):
                pick = {r["setup"]: r["result"]["message_rate"] for r in ok
                        if (r["folder"], r["round"]) == folder_round and r["threads"] == t}
                if a in pick and b in pick:
                    per_round.append(pick[a] / pick[b])
            row.append(spread(per_round, 3) + f" (n={len(per_round)})")
            s = summary(per_round)
            record.update({f"{a}/{b}_median": s["median"], f"{a}/{b}_min": s["min"],
                           f"{a}/{b}_max": s["max"], f"{a}/{b}_n": s["n"]})
        rate_rows.append(row)
        rate_csv.append(record)
    md.append(markdown_table(["T"] + [names.get(s, s) for s in present] + [f"{a} / {b}" for a, b in ratios],
                             rate_rows) + "\n")
    fields = ["threads"] + [f"{s}_{x}" for s in present for x in ("median", "min", "max", "n")] + \
             [f"{a}/{b}_{x}" for a, b in ratios for x in ("median", "min", "max", "n")]
    write_csv(os.path.join(out, "rates.csv"), header, fields, rate_csv)
    return md


# ---- A/B ----------------------------------------------------------------------

def ab_run_values(result):
    """Per measured pair of blocks: one-way ns on, off, and on/off."""
    blocks = [b for b in result["blocks"] if not b["warmup"]]
    on, off, ratio = [], [], []
    for first in range(0, len(blocks) - 1, 2):
        pair = {b["state"]: b for b in blocks[first:first + 2]}
        if set(pair) != {"on", "off"}:
            continue
        ns = {state: b["seconds"] / b["round_trips"] / 2 * 1e9 for state, b in pair.items()}
        on.append(ns["on"])
        off.append(ns["off"])
        ratio.append(ns["on"] / ns["off"])
    return on, off, ratio


def ab_tables(metas, runs, out, header):
    md = ["## In-process A/B ping-pong: counters on against off\n",
          "One pair of processes alternates blocks of round trips with the counter set on and "
          "off through MPI_T (ABBA order; warm-up blocks left out). Per run: the median one-way "
          "latency of the on blocks and of the off blocks, and the median of the on/off ratio "
          "of adjacent blocks. Cells: median over runs [min-max over runs]; 'pairs IQR' pools "
          "the per-pair ratios of all runs. Self-check: exact SEND/RECV/byte counts of the on "
          "blocks and raw totals written at MPI_Finalize (see bench/ab_pingpong.c).\n"]
    not_applicable = sorted({(r["build"], (r["result"] or {}).get("reason", "")) for r in runs
                             if r["status"] == "not-applicable"})
    ok = [r for r in runs if r["status"] == "ok"]
    # sets in the order the campaigns planned them (meta.json's settings)
    set_order = list(dict.fromkeys(s for meta in metas for s in meta.get("settings", {}).get("sets", [])))
    keys = sorted({(r["build"], r["transport"], r["set"]) for r in ok},
                  key=lambda k: (k[0], k[1], set_order.index(k[2]) if k[2] in set_order else len(set_order)))
    rows, csv_rows = [], []
    for build, transport, set_ in keys:
        mine = [r for r in ok if (r["build"], r["transport"], r["set"]) == (build, transport, set_)]
        per_run_on, per_run_off, per_run_ratio, pooled = [], [], [], []
        for r in mine:
            on, off, ratio = ab_run_values(r["result"])
            if ratio:
                per_run_on.append(statistics.median(on))
                per_run_off.append(statistics.median(off))
                per_run_ratio.append(statistics.median(ratio))
                pooled += ratio
        q1, q3 = quartiles(pooled)
        checks = sorted({f"{r['result']['self_check']}/"
                         f"{'not run' if r['result']['raw_totals_check'].startswith('not run') else r['result']['raw_totals_check']}"
                         for r in mine})
        rows.append([build, transport, set_, len(mine), len(pooled), spread(per_run_on, 1),
                     spread(per_run_off, 1), spread(per_run_ratio, 4),
                     f"{q1:.4f}-{q3:.4f}" if q1 is not None else "-", ", ".join(checks)])
        record = {"build": build, "transport": transport, "set": set_, "runs": len(mine),
                  "pairs": len(pooled), "pairs_ratio_q1": q1, "pairs_ratio_q3": q3,
                  "self_checks": " ".join(checks)}
        for name, values in (("on_ns", per_run_on), ("off_ns", per_run_off), ("ratio", per_run_ratio)):
            s = summary(values)
            record.update({f"{name}_median": s["median"], f"{name}_min": s["min"], f"{name}_max": s["max"]})
        csv_rows.append(record)
    md.append(markdown_table(["build", "transport", "counter set", "runs", "pairs",
                              "one-way on (ns)", "one-way off (ns)", "on/off ratio",
                              "pairs IQR", "self-check (handles/raw totals)"], rows) + "\n")
    for build, reason in not_applicable:
        md.append(f"Not applicable in build '{build}': {reason}\n")
    fields = ["build", "transport", "set", "runs", "pairs"] + \
             [f"{n}_{x}" for n in ("on_ns", "off_ns", "ratio") for x in ("median", "min", "max")] + \
             ["pairs_ratio_q1", "pairs_ratio_q3", "self_checks"]
    write_csv(os.path.join(out, "ab.csv"), header, fields, csv_rows)
    return md


def last_line(text):
    lines = (text or "").strip().splitlines()
    return lines[-1][:160] if lines else ""


def problems(runs):
    bad = [r for r in runs if r["status"] not in ("ok", "not-applicable")]
    if not bad:
        return []
    rows = [[r["folder"], r["index"], r["status"], r.get("setup") or r.get("set"),
             r.get("threads") or r.get("transport"), r["stderr"] or "-", last_line(r.get("stderr_tail"))]
            for r in bad]
    return ["## Runs that did not succeed\n", "Left out of the tables above.\n",
            markdown_table(["folder", "run", "status", "setup/set", "T/transport", "stderr file",
                            "last line of stderr"], rows) + "\n"]


def main():
    parser = argparse.ArgumentParser(prog="/usr/bin/python3 -m analysis.pairwise_report",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", metavar="RESULTS_DIR")
    parser.add_argument("--out", help="where the tables go (default: the first RESULTS_DIR)")
    args = parser.parse_args()
    loaded = [load(os.path.abspath(folder)) for folder in args.folders]
    out = os.path.abspath(args.out or args.folders[0])
    os.makedirs(out, exist_ok=True)
    command = shlex.join(["/usr/bin/python3", "-m", "analysis.pairwise_report"] + sys.argv[1:])
    header = header_lines([meta for meta, _ in loaded], command)

    md = ["# Pairwise benchmark and in-process A/B\n", "\n".join(f"- {line}" for line in header) + "\n"]
    written = []
    for kind, build_tables, files in (("pairwise", pairwise_tables, ["table3.csv", "rates.csv"]),
                                      ("ab", ab_tables, ["ab.csv"])):
        metas = [meta for meta, _ in loaded if meta["kind"] == kind]
        runs = [run for meta, runs in loaded if meta["kind"] == kind for run in runs]
        if runs:
            md += build_tables(metas, runs, out, header_lines(metas, command))
            md += problems(runs)
            written += files
    unknown = [meta["kind"] for meta, _ in loaded if meta["kind"] not in ("pairwise", "ab")]
    if unknown:
        sys.exit(f"pairwise_report.py: unknown kind(s) of results: {', '.join(unknown)}")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))
    print(f"written to {out}: " + ", ".join(written + ["report.md"]))


if __name__ == "__main__":
    main()
