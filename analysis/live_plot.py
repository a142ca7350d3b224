#!/usr/bin/python3
"""Plots a time series of spc-record (live counters of a running job): the
rate per second over time of each counter (one line per rank), and each
queue level over time (one line per rank), as rates.png and levels.png.

usage: /usr/bin/python3 analysis/live_plot.py RECORD.csv [--out DIR] [--counters A,B,...] [--top N]
  --out DIR       where the PNGs go (default: beside the CSV)
  --counters      counters to plot rates of, with or without OMPI_SPC_ (default:
                  the N with the largest totals among counters, sums and timers)
  --top N         how many counters by default (6)"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

COLUMNS = ["sample", "wall_time", "ticks", "job_seconds", "rank", "counter", "kind", "value", "unit"]
ACCUMULATING = ("counter", "aggregate", "timer")
PREFIX = "OMPI_SPC_"


def load(path):
    try:
        frame = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        sys.exit(f"live_plot.py: cannot read {path}: {error}")
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        sys.exit(f"live_plot.py: {path} is not a spc-record file (no column {', '.join(missing)})")
    if frame.empty:
        sys.exit(f"live_plot.py: {path} holds no sample")
    return frame


def short(name):
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def chosen_counters(frame, wanted, top):
    accumulating = frame[frame["kind"].isin(ACCUMULATING)]
    if wanted:
        names = [w if w.upper().startswith(PREFIX) else PREFIX + w for w in wanted]
        names = [n.upper() for n in names]
        unknown = [n for n in names if n not in set(accumulating["counter"])]
        if unknown:
            sys.exit(f"live_plot.py: no counter, sum or timer named {', '.join(unknown)} in the file")
        return names
    last = accumulating[accumulating["sample"] == accumulating["sample"].max()]
    totals = last.groupby("counter")["value"].sum()
    return list(totals[totals > 0].sort_values(ascending=False).index[:top])


def grid(count):
    columns = 2 if count > 1 else 1
    rows = (count + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(6.4 * columns, 2.8 * rows), squeeze=False)
    flat = [a for row in axes for a in row]
    for extra in flat[count:]:
        extra.set_visible(False)
    return figure, flat


def plot_rates(frame, counters, path, title):
    if not counters:
        counters = []
    figure, axes = grid(max(1, len(counters)))
    for axis, counter in zip(axes, counters):
        mine = frame[frame["counter"] == counter]
        unit = mine["unit"].iloc[0]
        for rank, series in mine.groupby("rank"):
            series = series.sort_values("sample")
            seconds = series["job_seconds"].diff()
            rate = series["value"].diff() / seconds
            axis.plot(series["job_seconds"], rate, marker=".", label=f"rank {rank}")
        label(axis, short(counter), f"{unit} / s")
    save(figure, axes, path, title + ": rates", None if counters else "every counter stayed 0")


def label(axis, title, unit):
    axis.set_title(title, fontsize=10)
    axis.set_ylabel(unit)
    axis.set_xlabel("job time (s)")
    axis.legend(fontsize=8)


def save(figure, axes, path, title, empty_message):
    """Titles and writes FIGURE; EMPTY_MESSAGE, if any, says why it has no lines."""
    if empty_message:
        axes[0].text(0.5, 0.5, empty_message, ha="center", va="center")
    figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def plot_levels(frame, path, title):
    levels = sorted(frame[frame["kind"] == "level"]["counter"].unique())
    figure, axes = grid(max(1, len(levels)))
    for axis, level in zip(axes, levels):
        mine = frame[frame["counter"] == level]
        for rank, series in mine.groupby("rank"):
            series = series.sort_values("sample")
            axis.step(series["job_seconds"], series["value"], where="post", label=f"rank {rank}")
        label(axis, short(level), mine["unit"].iloc[0])
    save(figure, axes, path, title + ": queue levels", None if levels else "no level in the file")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("--out")
    parser.add_argument("--counters", default="")
    parser.add_argument("--top", type=int, default=6)
    args = parser.parse_args()
    frame = load(args.csv)
    out = args.out or os.path.dirname(os.path.abspath(args.csv))
    os.makedirs(out, exist_ok=True)
    wanted = [c.strip() for c in args.counters.split(",") if c.strip()]
    counters = chosen_counters(frame, wanted, args.top)
    title = f"{os.path.basename(args.csv)} ({frame['rank'].nunique()} ranks, {frame['sample'].nunique()} samples)"
    plot_rates(frame, counters, os.path.join(out, "rates.png"), title)
    plot_levels(frame, os.path.join(out, "levels.png"), title)
    print(f"{os.path.join(out, 'rates.png')}: {', '.join(short(c) for c in counters) or 'none'}")
    print(f"{os.path.join(out, 'levels.png')}")


if __name__ == "__main__":
    main()
