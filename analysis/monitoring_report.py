"""The table of a campaign of netpipe_runs/monitoring_runs.py (seed 003's
monitoring against our communicator counters): per transport, counter set
of ours and pml_monitoring_enable, the one-way time with our set off, our
set's on/off ratio, and monitoring's cost: the off blocks' one-way time with
monitoring over that without it in the same round.  Median [min-max] over
runs.  Writes summary.md.

usage: /usr/bin/python3 -m analysis.monitoring_report RESULTS_DIR"""
import statistics

from analysis.live_report import spread
from analysis.pairwise_report import ab_run_values
from netpipe_runs import campaign
from netpipe_runs.monitoring_runs import MONITORING, SETS


def one_way_off_ns(result):
    """Median one-way time of an A/B run's measured off blocks."""
    return statistics.median(ab_run_values(result)[1])


def on_off(result):
    """Median on/off ratio of an A/B run's measured pairs of blocks."""
    return statistics.median(ab_run_values(result)[2])


def make(out, records):
    lines = ["| transport | our set | pml_monitoring_enable | runs | one-way, our set off (ns) | our set on/off | "
             "monitoring on / off, our set off, same round |", "|---|---|---|---:|---:|---:|---:|"]
    ok = [r for r in records if r.get("result")]
    for transport in sorted({r["transport"] for r in ok}):
        for our_set in SETS:
            by_round = {}
            for r in ok:
                if r["transport"] == transport and r["set"] == our_set:
                    by_round.setdefault(r["round"], {})[r["monitoring"]] = r["result"]
            for monitoring in MONITORING:
                runs = [rounds[monitoring] for rounds in by_round.values() if monitoring in rounds]
                if not runs:
                    continue
                paired = [one_way_off_ns(rounds["on"]) / one_way_off_ns(rounds["off"])
                          for rounds in by_round.values() if "on" in rounds and "off" in rounds]
                lines.append(f"| {transport} | {our_set} | {1 if monitoring == 'on' else 0} | {len(runs)} | "
                             f"{spread([one_way_off_ns(x) for x in runs], 1)} | "
                             f"{spread([on_off(x) for x in runs], 3)} | "
                             f"{spread(paired, 3) if monitoring == 'on' and paired else '–'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    campaign.report_main(__doc__, make)
