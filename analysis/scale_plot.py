"""Plots netpipe_runs.scale's results against the number of ranks, as
DIR/scale.png: the memory SPC adds to a rank (Pss, spc less nospc), MPI_Init
and MPI_Finalize of both builds and the report's time (medians over a job's
ranks), and what reading the node costs (spc-top --once, one scrape of
spc-exporter).  Log scale for the ranks.

usage: /usr/bin/python3 -m analysis.scale_plot DIR   (a folder of netpipe_runs.scale)"""
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(folder):
    path = os.path.join(folder, "runs.jsonl")
    try:
        with open(path) as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as error:
        sys.exit(f"scale_plot: cannot read {path}: {error}")
    good = [r for r in records if "figures" in r]
    if not good:
        sys.exit(f"scale_plot: {path} holds no measured job")
    return good


def series(records, configuration, key):
    """(ranks, median over the job's ranks) of one configuration."""
    points = sorted((r["ranks"], statistics.median(row[key] for row in r["figures"]))
                    for r in records if r["configuration"] == configuration)
    return [p[0] for p in points], [p[1] for p in points]


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    folder = sys.argv[1]
    records = load(folder)
    figure, (memory, times, readers) = plt.subplots(1, 3, figsize=(15, 4.5))
    ranks, on = series(records, "spc", "pss_kib")
    _, off = series(records, "nospc", "pss_kib")
    if len(on) == len(off):
        memory.plot(ranks, [a - b for a, b in zip(on, off)], "o-", label="Pss spc - nospc")
    ranks, live = series(records, "spc", "live_resident_bytes")
    memory.plot(ranks, [v / 1024 for v in live], "s--", label="live file in memory")
    memory.set(title="memory SPC adds to a rank", xlabel="ranks on the node", ylabel="KiB", xscale="log")
    memory.set_ylim(bottom=0)
    for configuration, style in (("nospc", "--"), ("spc", "-")):
        for key, marker in (("init_ms", "o"), ("finalize_ms", "s")):
            x, y = series(records, configuration, key)
            times.plot(x, y, marker + style, label=f"{key.split('_')[0]} {configuration}")
    x, with_report = series(records, "spc-report", "finalize_ms")
    _, without = series(records, "spc", "finalize_ms")
    if len(with_report) == len(without):
        times.plot(x, [a - b for a, b in zip(with_report, without)], "^-", label="the report")
    times.set(title="MPI_Init, MPI_Finalize, the report", xlabel="ranks on the node", ylabel="ms (median rank)",
              xscale="log", yscale="log")
    read = sorted((r["ranks"], r["readers"]) for r in records if r["configuration"] == "spc" and "readers" in r)
    if read:
        readers.plot([p[0] for p in read], [p[1]["top_once_ms"] for p in read], "o-", label="spc-top --once")
        readers.plot([p[0] for p in read], [p[1]["scrape_client_ms"] for p in read], "s-", label="a scrape")
    readers.set(title="reading the node's ranks", xlabel="ranks on the node", ylabel="ms", xscale="log")
    for axes in (memory, times, readers):
        axes.legend(fontsize=8)
        axes.grid(True, alpha=0.3)
    figure.tight_layout()
    out = os.path.join(folder, "scale.png")
    figure.savefig(out, dpi=110)
    print(f"scale_plot: {out}")


if __name__ == "__main__":
    main()
