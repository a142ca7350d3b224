"""Time inside MPI per rank, by family (issue 35, docs/time.md): a stacked
bar a rank from the finalize report's CSV (mpi_spc_dump_file), the
families' timers P2P_TIME, COMPLETION_TIME, COLLECTIVE_TIME, ONE_SIDED_TIME
and IO_TIME stacked, MPI_TIME (their sum) written above each bar.  The
job's ranks side by side show its load imbalance.

usage: /usr/bin/python3 -m analysis.time_plot REPORT.csv [OUT.png]   (default: beside the CSV, time_in_mpi.png)"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PREFIX = "OMPI_SPC_"
FAMILIES = ("P2P_TIME", "COMPLETION_TIME", "COLLECTIVE_TIME", "ONE_SIDED_TIME", "IO_TIME")
TOTAL = "MPI_TIME"


def seconds_by_rank(path):
    """{rank: {timer: seconds}} of the families and MPI_TIME; exits with a
    line saying what is wrong with the file."""
    wanted = set(FAMILIES) | {TOTAL}
    ranks = {}
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                name = row["counter"][len(PREFIX):] if row["counter"].startswith(PREFIX) else row["counter"]
                if name in wanted:
                    if row["unit"] != "microseconds":
                        sys.exit(f"time_plot: {path}: {row['counter']} is in {row['unit']}, not microseconds")
                    ranks.setdefault(int(row["rank"]), {})[name] = int(row["value"]) / 1e6
    except (OSError, KeyError, ValueError) as error:
        sys.exit(f"time_plot: cannot read {path} as a finalize report's CSV: {error}")
    if not ranks:
        sys.exit(f"time_plot: {path} has no time counters (attach them: --mca mpi_spc_attach "
                 f"MPI_TIME,{','.join(FAMILIES)})")
    return ranks


def plot(ranks, out, title):
    order = sorted(ranks)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(order) + 2), 3.6))
    bottom = [0.0] * len(order)
    for family in FAMILIES:
        heights = [ranks[r].get(family, 0.0) for r in order]
        if any(heights):
            ax.bar([str(r) for r in order], heights, bottom=bottom, label=family.replace("_TIME", "").lower())
            bottom = [b + h for b, h in zip(bottom, heights)]
    for i, r in enumerate(order):
        ax.annotate(f"{ranks[r].get(TOTAL, 0.0):.3g} s", (i, bottom[i]), ha="center", va="bottom", fontsize=8)
    ax.set_xlabel("rank")
    ax.set_ylabel("seconds inside MPI")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(path) or ".", "time_in_mpi.png")
    plot(seconds_by_rank(path), out, f"time inside MPI by family ({os.path.basename(path)})")
    print(f"time_plot: {out}")


if __name__ == "__main__":
    main()
