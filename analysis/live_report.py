"""The tables of a campaign of netpipe_runs/live_runs.py (what mpi_spc_live costs):
the in-process A/B's on/off ratio and one-way times with and without live,
the pairwise message rate with and without live, each as live over plain
within a round, median [min-max] over rounds; and the cost of one full read
by spc-top and of one scrape of spc-exporter.  Writes summary.md.

usage: /usr/bin/python3 -m analysis.live_report RESULTS_DIR"""
import os
import statistics

from analysis.pairwise_report import ab_run_values
from netpipe_runs import campaign


def spread(values, digits):
    if not values:
        return "–"
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def within_rounds(records, key, value):
    """{key: [live/plain per round]} for records grouped by KEY(record)."""
    by = {}
    for r in records:
        by.setdefault(key(r), {}).setdefault(r["round"], {})[r["live"]] = value(r)
    return {k: [rounds[True] / rounds[False] for rounds in per_round.values() if True in rounds and False in rounds
                and rounds[False]] for k, per_round in sorted(by.items())}


def make(out, records):
    lines = []
    meta = {}
    if os.path.exists(os.path.join(out, "meta.json")):
        import json
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
    machine = meta.get("machine", {})
    loads = [r["load_before"] for r in records if "load_before" in r]
    lines.append(f"Campaign {os.path.basename(os.path.abspath(out))}: {meta.get('rounds', '?')} rounds, "
                 f"CPU {machine.get('cpu', '?')} ({machine.get('cores', '?')} cores), build spc "
                 f"{meta.get('builds', {}).get('spc', {}).get('content_hash', '?')}; 1-minute load average "
                 f"before the runs {spread(loads, 2)}.\n")

    ab = [r for r in records if r["step"] == "ab"]
    if ab:
        per_run = {}
        for r in ab:
            on, off, ratio = ab_run_values(r["result"])
            per_run[r["key"]] = (statistics.median(on), statistics.median(off), statistics.median(ratio))
        lines.append("### In-process A/B, every counter toggled, 1-byte ping-pong\n")
        lines.append("Per run: median over pairs of blocks. Cells: median [min-max] over rounds. "
                     "live/plain: the live run's value over the plain run's of the same round.\n")
        lines.append("| transport | on/off ratio, plain | on/off ratio, live | one-way on (ns), plain | "
                     "one-way on (ns), live | one-way on, live/plain | one-way off, live/plain |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for transport in sorted({r["transport"] for r in ab}, key=lambda t: t != "vader"):
            mine = [r for r in ab if r["transport"] == transport]

            def values(live, index):
                return [per_run[r["key"]][index] for r in mine if r["live"] == live]
            on_ratio = within_rounds(mine, lambda r: 0, lambda r: per_run[r["key"]][0]).get(0, [])
            off_ratio = within_rounds(mine, lambda r: 0, lambda r: per_run[r["key"]][1]).get(0, [])
            lines.append(f"| {transport} | {spread(values(False, 2), 3)} | {spread(values(True, 2), 3)} | "
                         f"{spread(values(False, 0), 0)} | {spread(values(True, 0), 0)} | "
                         f"{spread(on_ratio, 3)} | {spread(off_ratio, 3)} |")
        lines.append("")

    pairwise = [r for r in records if r["step"] == "pairwise"]
    if pairwise:
        lines.append("### Pairwise benchmark, all counters on (attach all), vader\n")
        lines.append("| threads per rank | message rate, plain (msg/s) | message rate, live (msg/s) | "
                     "live/plain within a round |")
        lines.append("|---:|---:|---:|---:|")
        ratios = within_rounds(pairwise, lambda r: r["threads"], lambda r: r["result"]["message_rate"])
        for threads in sorted({r["threads"] for r in pairwise}):
            rate = {live: [r["result"]["message_rate"] for r in pairwise if r["threads"] == threads
                           and r["live"] == live] for live in (False, True)}
            lines.append(f"| {threads} | {spread(rate[False], 0)} | {spread(rate[True], 0)} | "
                         f"{spread(ratios.get(threads, []), 3)} |")
        lines.append("")

    reads = [r for r in records if r["step"] == "read"]
    if reads:
        lines.append("### Reading a running 2-rank job\n")
        lines.append("| what | microseconds, median [min-max] over rounds |")
        lines.append("|---|---:|")
        lines.append(f"| one full read by spc-top (list, map, check, sum both ranks) | "
                     f"{spread([r['result']['top_read_us'] for r in reads], 1)} |")
        lines.append(f"| one scrape of spc-exporter, at the client (HTTP GET /metrics) | "
                     f"{spread([r['result']['scrape_client_us_median'] for r in reads], 0)} |")
        lines.append(f"| the same scrape inside the exporter (read and format) | "
                     f"{spread([r['result']['scrape_exporter_us_median'] for r in reads], 0)} |")
        lines.append(f"\n/metrics is {reads[-1]['result']['metrics_bytes']} bytes for 2 ranks; "
                     f"{reads[-1]['result']['reads']} reads and {reads[-1]['result']['scrapes']} scrapes per round.\n")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    campaign.report_main(__doc__, make)
