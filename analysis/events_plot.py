#!/usr/bin/python3
"""Plots what spc-event-logger recorded (MPI_T events of ob1, one CSV per rank).

usage: events_plot.py FOLDER [--out DIR]

queue_length.png: the unexpected-message queue's length over the job's
time, one line per rank (inserts minus removes, in event order).
time_in_queue.png: how long messages waited in the unexpected queue, from
each unexpected_insert to the unexpected_remove of the same queue entry,
over all ranks.
"""
import argparse
import glob
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def load(folder):
    frames = []
    for path in sorted(glob.glob(os.path.join(folder, "spc-events.*.csv"))):
        rank = int(re.search(r"spc-events\.(\d+)\.csv$", path).group(1))
        frame = pd.read_csv(path)
        frame["rank"] = rank
        frames.append(frame)
    if not frames:
        sys.exit(f"events_plot.py: no spc-events.RANK.csv in {folder}")
    return pd.concat(frames, ignore_index=True)


def waits(unexpected):
    """Seconds from each insert to the remove of the same entry, per rank."""
    seconds = []
    for _, rows in unexpected.groupby("rank"):
        waiting = {}
        for row in rows.sort_values("seconds").itertuples():
            if row.event == "unexpected_insert":
                waiting[row.request] = row.seconds
            elif row.request in waiting:
                seconds.append(row.seconds - waiting.pop(row.request))
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    events = load(args.folder)
    start = events["seconds"].min()
    unexpected = events[events["event"].isin(["unexpected_insert", "unexpected_remove"])]

    figure, axis = plt.subplots(figsize=(8, 4))
    for rank, rows in unexpected.groupby("rank"):
        rows = rows.sort_values("seconds")
        length = (rows["event"] == "unexpected_insert").astype(int) * 2 - 1
        axis.step((rows["seconds"] - start) * 1e3, length.cumsum(), where="post", label=f"rank {rank}")
    if unexpected.empty:
        axis.text(0.5, 0.5, "no unexpected message", ha="center", va="center")
    else:
        axis.legend(fontsize=8)
    axis.set_xlabel("job time (ms)")
    axis.set_ylabel("messages")
    axis.set_title("unexpected-message queue length")
    figure.tight_layout()
    figure.savefig(os.path.join(args.out, "queue_length.png"), dpi=100)
    plt.close(figure)

    figure, axis = plt.subplots(figsize=(8, 4))
    seconds = waits(unexpected)
    if seconds:
        axis.hist([s * 1e6 for s in seconds], bins=50)
    else:
        axis.text(0.5, 0.5, "no unexpected message", ha="center", va="center")
    axis.set_xlabel("time in the unexpected queue (µs)")
    axis.set_ylabel("messages")
    axis.set_title(f"time in the unexpected queue ({len(seconds)} messages)")
    figure.tight_layout()
    figure.savefig(os.path.join(args.out, "time_in_queue.png"), dpi=100)
    plt.close(figure)
    print(f"{args.out}/queue_length.png, {args.out}/time_in_queue.png: {len(seconds)} waits")


if __name__ == "__main__":
    main()
