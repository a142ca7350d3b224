"""The table of instructions per message from a campaign of
netpipe_runs/callgrind_counts.py: summary.csv (per rank) and summary.md.

usage: /usr/bin/python3 -m analysis.callgrind_table RESULTS_DIR"""
import csv
import os

from netpipe_runs import campaign, study


def per_rank_rows(records):
    """One row per (configuration, rank), in the study's order."""
    order = {c.key: k for k, c in enumerate(study.CONFIGURATIONS)}
    rows = []
    for record in sorted((r for r in records if r["status"] == "ok"), key=lambda r: order[r["configuration"]]):
        for rank, counts in sorted(record["result"].items()):
            rows.append({"configuration": record["configuration_name"], "build": record["build"],
                         "attach": record["attach"] or "-", "rank": int(rank[len("rank"):]),
                         "messages": record["messages"],
                         "send_instructions_per_message": counts.get("send", 0) / record["messages"],
                         "match_instructions_per_message": counts.get("match", 0) / record["messages"]})
    return rows


def markdown(rows):
    """Mean over ranks per configuration, and the difference to the baseline's."""
    def mean(mine, column):
        return sum(r[column] for r in mine) / len(mine)
    columns = ("send_instructions_per_message", "match_instructions_per_message")
    base = [r for r in rows if r["configuration"] == study.BASELINE.name]
    lines = ["| configuration | PMPI_Send, instr./msg | vs baseline | receive match, instr./msg | vs baseline |",
             "|---|---:|---:|---:|---:|"]
    for name in dict.fromkeys(r["configuration"] for r in rows):
        mine = [r for r in rows if r["configuration"] == name]
        cells = []
        for column in columns:
            value = mean(mine, column)
            cells += [f"{value:.1f}", f"{value - mean(base, column):+.1f}" if base else "–"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def make(out, records):
    """summary.csv (one row per configuration and rank) and the markdown table."""
    rows = per_rank_rows(records)
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return markdown(rows)


if __name__ == "__main__":
    campaign.report_main(__doc__, make)
