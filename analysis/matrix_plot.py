"""The job's communication matrix as heatmaps (issue 38, docs/traffic.md):
from the finalize report's matrix CSV (mpi_spc_attach traffic with
mpi_spc_dump_file REPORT.csv writes REPORT.matrix.csv), one heatmap per
kind of traffic (user, internal, one-sided), bytes sent from each rank (row)
to each peer (column; for one-sided, the target), in MPI_COMM_WORLD ranks; each cell with traffic says its
bytes (decimal units) and messages.

usage: /usr/bin/python3 -m analysis.matrix_plot MATRIX.csv [OUT.png]   (default: beside the CSV, matrix.png)"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

KINDS = ("user", "internal", "one-sided")
COLUMNS = ("rank", "peer", "kind", "messages_sent", "bytes_sent", "messages_received", "bytes_received")


def read_matrix(path):
    """(ranks, {kind: {(rank, peer): (bytes sent, messages sent)}}); exits
    with a line saying what is wrong with the file."""
    cells = {kind: {} for kind in KINDS}
    highest = -1
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != COLUMNS:
                sys.exit(f"matrix_plot: {path}: not a matrix CSV (its columns: {reader.fieldnames}; "
                         f"expected {','.join(COLUMNS)})")
            for line, row in enumerate(reader, start=2):
                try:
                    rank, peer = int(row["rank"]), int(row["peer"])
                    sent = (int(row["bytes_sent"]), int(row["messages_sent"]))
                except ValueError:
                    sys.exit(f"matrix_plot: {path}:{line}: not a number in {row}")
                if row["kind"] not in cells:
                    sys.exit(f"matrix_plot: {path}:{line}: unknown kind {row['kind']!r} (known: {', '.join(KINDS)})")
                cells[row["kind"]][(rank, peer)] = sent
                highest = max(highest, rank, peer)
    except OSError as error:
        sys.exit(f"matrix_plot: cannot read {path}: {error.strerror}")
    if highest < 0:
        sys.exit(f"matrix_plot: {path}: no traffic in it")
    return highest + 1, cells


def human(count):
    """12666832 -> "12.7 MB": the cells' labels stay inside the cells."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def draw(ranks, cells, out):
    figure, axes = plt.subplots(1, len(KINDS), figsize=(5.5 * len(KINDS), 4.8), squeeze=False)
    for axis, kind in zip(axes[0], KINDS):
        grid = [[float("nan")] * ranks for _ in range(ranks)]
        for (rank, peer), (sent, _) in cells[kind].items():
            grid[rank][peer] = sent if sent > 0 else float("nan")
        values = [v for (v, _) in cells[kind].values() if v > 0]
        image = axis.imshow(grid, cmap="viridis", norm=LogNorm(min(values), max(values)) if values else None)
        if values:
            figure.colorbar(image, ax=axis, label="bytes sent")
        if ranks <= 16:
            for (rank, peer), (sent, messages) in cells[kind].items():
                if sent > 0 or messages > 0:
                    axis.text(peer, rank, f"{human(sent)}\n{messages} msg", ha="center", va="center", fontsize=7,
                              color="white")
        axis.set_title(f"{kind} traffic" + ("" if values else " (none)"))
        axis.set_xlabel("to rank (MPI_COMM_WORLD)")
        axis.set_ylabel("from rank")
        axis.set_xticks(range(ranks) if ranks <= 32 else [])
        axis.set_yticks(range(ranks) if ranks <= 32 else [])
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def main(argv):
    if len(argv) not in (1, 2) or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    path = argv[0]
    out = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(path)), "matrix.png")
    ranks, cells = read_matrix(path)
    try:
        draw(ranks, cells, out)
    except OSError as error:
        sys.exit(f"matrix_plot: cannot write {out}: {error.strerror}")
    print(f"matrix_plot: {ranks} ranks, {sum(len(c) for c in cells.values())} cells with traffic: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
