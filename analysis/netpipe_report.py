"""Plots and tables of a NetPIPE sweep (netpipe_runs/netpipe_sweep.py): the
overhead of each configuration against the baseline, by message size and
transport, as in Figures 1, 2, 4 and 5 of Eberius et al. (EuroMPI/USA 2017).

usage: /usr/bin/python3 -m analysis.netpipe_report RESULTS_DIR

Writes into RESULTS_DIR: netpipe_summary.csv (per size), netpipe_summary.md
(the table for people) and the figures of FIGURES."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from netpipe_runs import campaign, netpipe  # noqa: E402

SIZES_OF_NOTE = (1, 1024, 65536, 8388608)
SWEEP_NOTE = "\nthe grey vertical line parts the latency sweep (left) from the bandwidth sweep (right, fewer repeats)"
SWEEP_PRIORITY = {"latency": 0, "bandwidth": 1}  # the latency sweep has more repeats per size

# (file, caption, what the paper's figure shows, the configurations, paper figure)
PAPER_FIGURES = [
    ("fig1_all_off", "Figure 1: all counters compiled in and off", "SPC compiled in, all counters off",
     ["ours-off", "upstream-off"], "Figure 1"),
    ("fig2_all_on", "Figure 2: all counters on", "all counters on", ["ours-all", "upstream-all"], "Figure 2"),
    ("fig4_table4_minus_match_time", "Figure 4: Table 4 counters minus MATCH_TIME",
     "Table 4 counters minus MATCH_TIME on", ["ours-table4-no-match"], "Figure 4"),
    ("fig5_ours_four", "Figure 5: our four configurations side by side",
     "ours: all off, all on, MATCH_TIME only, Table 4 minus MATCH_TIME",
     ["ours-off", "ours-all", "ours-match-time", "ours-table4-no-match"],
     "Figure 5 (the paper shows Core only: the vader panel)"),
]
# (file, caption, column, axis label, logarithmic): time and throughput by size
PERFORMANCE_FIGURES = [
    ("latency", "Latency", "time_us_median", "one-way time (µs)", True),
    ("bandwidth", "Bandwidth", "mbps_median", "throughput (Mbps, 2^20 bit/s)", False),
]
# Every figure this report writes, (file name, caption): the one list others read.
FIGURES = [(f[0] + ".png", f[1]) for f in PAPER_FIGURES + PERFORMANCE_FIGURES]


def load(results_dir):
    """meta (its settings at the top level), the records, and one row per
    (run, size) of every run that is ok; NetPIPE's output from raw/ or
    raw.tar.xz."""
    with open(os.path.join(results_dir, "meta.json")) as f:
        meta = json.load(f)
    meta.update(meta.pop("settings", {}))
    manifest = campaign.read_records(results_dir)
    raw = campaign.RawFiles(results_dir)
    rows = []
    for run in manifest:
        if run["status"] != "ok":
            continue
        for size, mbps, seconds_column, seconds in netpipe.parse_output(raw.read(run["outputs"]["output"])):
            rows.append({"transport": run["transport"], "sweep": run["sweep"], "round": run["round"],
                         "configuration": run["configuration"], "bytes": size, "mbps": mbps,
                         "seconds_column": seconds_column, "seconds": seconds})
    columns = ["transport", "sweep", "round", "configuration", "bytes", "mbps", "seconds_column", "seconds"]
    return meta, manifest, pd.DataFrame(rows, columns=columns)


def paired_overheads(samples, baseline):
    """Per round: configuration time / baseline time of the same round - 1, in %.

    In round r, configuration c's one-way time at a size (derived from
    NetPIPE's Mbps column, not its 10 ns seconds column: netpipe.parse_output)
    over the baseline's at that size in the same round, minus 1.  Plots and
    tables give the median of these per-round values and, as spread, their
    interquartile range (the CSV also has min and max)."""
    keys = ["transport", "sweep", "round", "bytes"]
    base = samples[samples.configuration == baseline][keys + ["seconds"]].rename(
        columns={"seconds": "baseline_seconds"})
    pairs = samples[samples.configuration != baseline].merge(base, on=keys)
    pairs["ratio"] = pairs.seconds / pairs.baseline_seconds
    pairs["overhead_pct"] = (pairs.ratio - 1) * 100
    return pairs


def spread(values, prefix):
    return {f"{prefix}_median": values.median(), f"{prefix}_q1": values.quantile(0.25),
            f"{prefix}_q3": values.quantile(0.75), f"{prefix}_min": values.min(), f"{prefix}_max": values.max()}


def summarize(samples, pairs, baseline):
    """One row per (transport, sweep, configuration, size)."""
    keys = ["transport", "sweep", "configuration", "bytes"]
    paired = {key: group.overhead_pct for key, group in pairs.groupby(keys)}
    rows = []
    for key, group in samples.groupby(keys):
        row = dict(zip(keys, key), rounds=len(group), mbps_median=group.mbps.median())
        row.update(spread(group.seconds * 1e9, "time_ns"))
        mine = paired.get(key, pd.Series(dtype=float))
        row["pairs"] = len(mine)
        row.update(spread(mine, "overhead_pct") if len(mine) else {})
        rows.append(row)
    summary = pd.DataFrame(rows)
    # A second view that does not pair: the medians' ratio.  Pairing helps
    # against drift; it cannot help against this VM's run-to-run modes
    # (placement of the vCPUs), which change from one mpirun to the next.
    base = summary[summary.configuration == baseline].set_index(["transport", "sweep", "bytes"]).time_ns_median
    index = pd.MultiIndex.from_frame(summary[["transport", "sweep", "bytes"]])
    summary["overhead_of_medians_pct"] = (summary.time_ns_median.values / base.reindex(index).values - 1) * 100
    summary.loc[summary.configuration == baseline, "overhead_of_medians_pct"] = float("nan")
    return summary


def across_sweeps(summary):
    """Each size once: from the latency sweep where it has the size, else the bandwidth sweep."""
    ordered = summary.assign(priority=summary.sweep.map(SWEEP_PRIORITY)).sort_values(
        ["transport", "configuration", "bytes", "priority"])
    return ordered.drop_duplicates(["transport", "configuration", "bytes"]).drop(columns="priority")


def size_label(size):
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def style(meta):
    """Colour per configuration; ours solid, upstream dashed, baseline black."""
    styles = {}
    for i, config in enumerate(meta["configurations"]):
        styles[config["key"]] = {"color": "black" if config["key"] == meta["baseline"] else f"C{i}",
                                 "linestyle": "--" if config["build"] == "upstream" else "-",
                                 "label": config["name"]}
    return styles


def size_axis(ax, meta):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ticks = [2**k for k in range(0, 24, 3)]
    ax.set_xticks(ticks, [size_label(t) for t in ticks])
    latency = meta["sweeps"].get("latency")
    if latency and "bandwidth" in meta["sweeps"]:
        ax.axvline(latency["high"], color="0.8", linewidth=0.8, zorder=0)
    ax.grid(True, which="major", color="0.9")


def panels(meta, title):
    transports = meta["transports"]
    fig, axes = plt.subplots(1, len(transports), figsize=(7 * len(transports), 5), squeeze=False)
    both = "latency" in meta["sweeps"] and "bandwidth" in meta["sweeps"]
    fig.suptitle(title + (SWEEP_NOTE if both else ""), fontsize=10)
    return fig, dict(zip((t["name"] for t in transports), axes[0])), {t["name"]: t for t in transports}


def save(fig, out, name):
    fig.tight_layout()
    path = os.path.join(out, name + ".png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def overhead_figure(meta, merged, styles, rounds, name, what, keys, paper, out):
    present = [k for k in keys if k in set(merged.configuration)]
    if not present:
        return None
    fig, axes, transports = panels(
        meta, f"Eberius et al. 2017, {paper}: {what}\noverhead against the baseline (SPC compiled out); "
        f"line: median over {rounds} rounds of the per-round paired ratio, band: interquartile range")
    for transport, ax in axes.items():
        for key in present:
            data = merged[(merged.transport == transport) & (merged.configuration == key)].sort_values("bytes")
            if data.empty or "overhead_pct_median" not in data:
                continue
            s = styles[key]
            ax.plot(data.bytes, data.overhead_pct_median, marker=".", **s)
            ax.fill_between(data.bytes, data.overhead_pct_q1, data.overhead_pct_q3, color=s["color"], alpha=0.15,
                            linewidth=0)
        ax.axhline(0, color="black", linewidth=0.8)
        size_axis(ax, meta)
        ax.set_ylabel("overhead (%)")
        ax.set_title(f"{transport}: {transports[transport]['paper_case']}", fontsize=10)
        ax.legend(fontsize=8)
    return save(fig, out, name)


def performance_figure(meta, merged, styles, rounds, column, ylabel, logy, name, out):
    fig, axes, transports = panels(meta, f"NetPIPE ping-pong, median over {rounds} rounds per configuration")
    for transport, ax in axes.items():
        for key, s in styles.items():
            data = merged[(merged.transport == transport) & (merged.configuration == key)].sort_values("bytes")
            if not data.empty:
                ax.plot(data.bytes, data[column], marker=".", markersize=3, linewidth=1, **s)
        size_axis(ax, meta)
        if logy:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{transport}: {transports[transport]['paper_case']}", fontsize=10)
        ax.legend(fontsize=8)
    return save(fig, out, name)


def cell(row, rounds):
    if row is None or pd.isna(row.get("overhead_pct_median")):
        return "–"
    text = f"{row['overhead_pct_median']:+.1f} [{row['overhead_pct_q1']:+.1f}, {row['overhead_pct_q3']:+.1f}]"
    return text + (f" (n={row['pairs']})" if row["pairs"] < rounds else "")


def time_text(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1000:.3g} µs" if ns >= 1000 else f"{ns:.0f} ns"


def load_line(manifest):
    """Our own two ranks keep the 1-minute load average near 2 at most; more
    means other work shared the 2 cores during the sweep."""
    loads = sorted(m["load_before"] for m in manifest if "load_before" in m)
    if not loads:
        return "- load average: not recorded"
    text = f"- 1-minute load average before each run: median {loads[len(loads) // 2]:.1f}, max {loads[-1]:.1f}"
    if loads[-1] > 2.5:
        text += " — **other work shared the machine during this sweep; treat the numbers with suspicion**"
    return text


def check_line(meta):
    """The counter check's line; a configuration that listens is checked for
    its event handle (each of the 2 ranks held one) instead."""
    checks = meta.get("counter_check", {})
    if not checks:
        return "- counter check: not run"
    counted = {k: c for k, c in checks.items() if "missing" in c}
    listened = {k: c for k, c in checks.items() if "ranks_with_handle" in c}
    bad = [f"{key} ({', '.join(c['missing']) or 'check run failed'})" for key, c in counted.items()
           if c["missing"] or c["returncode"] != 0]
    bad += [f"{key} ({c['ranks_with_handle']} of 2 ranks held the event handle)" for key, c in listened.items()
            if c["ranks_with_handle"] != 2 or c["returncode"] != 0]
    said = []
    if counted:
        said.append(f"SEND, RECV, MATCH_TIME counted wherever attached ({', '.join(counted)})")
    if listened:
        said.append(f"each rank held its event handle ({', '.join(listened)})")
    return ("- counter check (1 B ping-pong with mpi_spc_dump_enabled, raw/check-*.txt): " +
            (f"**did not count: {'; '.join(bad)}**" if bad else "; ".join(said)))


def markdown(meta, manifest, merged, rounds):
    machine = meta["machine"]
    failed = [m for m in manifest if m["status"] != "ok"]
    lines = [
        "# NetPIPE overhead sweep", "",
        f"- date: {meta['started']} to {meta['finished'] or '(unfinished)'} (UTC)"
        + (" — interrupted" if meta.get("interrupted") else ""),
        f"- machine: {machine['cpu']}, {machine['cores']} cores, kernel {machine['kernel']}; "
        f"repository {machine['commit'][:12]}{' (uncommitted changes)' if machine['dirty'] else ''}",
        f"- command: `{meta['command']}` (profile {meta['profile']}, {meta['rounds']} rounds, seed {meta['seed']})",
        f"- report: `/usr/bin/python3 -m analysis.netpipe_report {meta.get('out_hint', 'RESULTS_DIR')}`",
        "- NetPIPE 3.7.2 (Debian orig tarball), built per Open MPI build; `-p 0 -n REPEATS`; repeats: " + "; ".join(
            f"{s} {v['low']}..{v['high']} B: " + ", ".join(f"{t} {n}" for t, n in v["repeats"].items())
            for s, v in meta["sweeps"].items()),
        "- builds: " + ", ".join(f"{v} {b['content_hash']}" for v, b in sorted(meta["builds"].items())),
        f"- runs: {len(manifest) - len(failed)} ok, {len(failed)} failed",
        load_line(manifest), check_line(meta), "",
        "Overhead % at a size: the configuration's one-way time over that of the baseline run of the same "
        "round, minus 1 (times from NetPIPE's Mbps column); median over rounds, [interquartile range]; "
        "n = pairs when fewer than the rounds. Min, max and the ratio of medians are in netpipe_summary.csv.", ""]
    names = {c["key"]: c["name"] for c in meta["configurations"]}
    for transport in meta["transports"]:
        lines += [f"## {transport['name']}: {transport['paper_case']}", "",
                  "| configuration | " + " | ".join(size_label(s) for s in SIZES_OF_NOTE) + " |",
                  "|---|" + "---:|" * len(SIZES_OF_NOTE)]
        mine = merged[merged.transport == transport["name"]]

        def at(key, size):
            hit = mine[(mine.configuration == key) & (mine.bytes == size)]
            return None if hit.empty else hit.iloc[0].to_dict()

        base = [at(meta["baseline"], s) for s in SIZES_OF_NOTE]
        lines.append(f"| {names[meta['baseline']]}: one-way time, median | " + " | ".join(
            time_text(b["time_ns_median"]) if b else "–" for b in base) + " |")
        for config in meta["configurations"]:
            if config["key"] != meta["baseline"]:
                lines.append(f"| {config['name']} | " + " | ".join(
                    cell(at(config["key"], s), rounds) for s in SIZES_OF_NOTE) + " |")
        lines.append("")
    if failed:
        lines += ["## Failed runs", "", "Their stderr is in the raw outputs and in runs.jsonl.", ""]
        groups = {}
        for m in failed:
            first = next((line.strip() for line in m.get("stderr_tail", "").splitlines() if line.strip()), "")
            groups.setdefault((m["status"], m["reason"], first), []).append(os.path.basename(m["outputs"]["output"]))
        for (status, reason, first), names in groups.items():
            lines.append(f"- {len(names)} {status}: {reason}" + (f" (`{first}`)" if first else "") + ": " +
                         ", ".join(names))
        lines.append("")
    return "\n".join(lines)


def main():
    out = campaign.folder_argument(__doc__)
    try:
        meta, manifest, samples = load(out)
    except (OSError, ValueError) as error:
        sys.exit(f"netpipe_report.py: cannot read the sweep in {out}: {error}")
    if samples.empty:
        sys.exit(f"netpipe_report.py: no successful run in {out}")
    meta["out_hint"] = out
    baseline = meta["baseline"]
    rounds = meta["rounds"]
    pairs = paired_overheads(samples, baseline)
    summary = summarize(samples, pairs, baseline)
    summary.to_csv(os.path.join(out, "netpipe_summary.csv"), index=False, float_format="%.6g")
    merged = across_sweeps(summary)
    styles = style(meta)
    written = [os.path.join(out, "netpipe_summary.csv")]
    for name, _, what, keys, paper in PAPER_FIGURES:
        path = overhead_figure(meta, merged, styles, rounds, name, what, keys, paper, out)
        if path:
            written.append(path)
    merged = merged.assign(time_us_median=merged.time_ns_median / 1000)
    for name, _, column, ylabel, logy in PERFORMANCE_FIGURES:
        written.append(performance_figure(meta, merged, styles, rounds, column, ylabel, logy, name, out))
    text = markdown(meta, manifest, merged, rounds)
    with open(os.path.join(out, "netpipe_summary.md"), "w") as f:
        f.write(text)
    written.append(os.path.join(out, "netpipe_summary.md"))
    print(text)
    print("written:\n  " + "\n  ".join(written))


if __name__ == "__main__":
    main()
