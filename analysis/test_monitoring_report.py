"""Checks monitoring_report.py's table on hand-written A/B results: one
round of our comm set with monitoring off and on over vader, values worked
out in the comments.
usage: /usr/bin/python3 -m analysis.test_monitoring_report"""
import unittest

from analysis import monitoring_report


def result(on_seconds, off_seconds):
    """An ab_pingpong result: a warm-up pair (left out) and one measured pair of 1000 round trips."""
    return {"blocks": [{"state": "on", "seconds": 9.0, "round_trips": 1000, "warmup": True},
                       {"state": "off", "seconds": 9.0, "round_trips": 1000, "warmup": True},
                       {"state": "on", "seconds": on_seconds, "round_trips": 1000, "warmup": False},
                       {"state": "off", "seconds": off_seconds, "round_trips": 1000, "warmup": False}]}


class MonitoringReport(unittest.TestCase):
    def test_table(self):
        records = [{"transport": "vader", "set": "comm", "round": 1, "monitoring": "off", "status": "ok",
                    "result": result(0.003, 0.002)},
                   {"transport": "vader", "set": "comm", "round": 1, "monitoring": "on", "status": "ok",
                    "result": result(0.0033, 0.0022)}]
        text = monitoring_report.make("unused", records)
        # off: one-way off 0.002 s / 1000 / 2 = 1000 ns, on/off 0.003 / 0.002 = 1.5
        self.assertIn("| vader | comm | 0 | 1 | 1000.0 [1000.0-1000.0] | 1.500 [1.500-1.500] | – |", text)
        # on: one-way off 1100 ns, on/off 1.5; monitoring's cost in the round: 1100 / 1000 = 1.1
        self.assertIn("| vader | comm | 1 | 1 | 1100.0 [1100.0-1100.0] | 1.500 [1.500-1.500] | "
                      "1.100 [1.100-1.100] |", text)
        self.assertNotIn("comm-untimed", text)  # no run of it, no row


if __name__ == "__main__":
    unittest.main()
