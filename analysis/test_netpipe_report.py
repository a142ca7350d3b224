"""Checks netpipe_report.py's parsing and per-round overhead arithmetic on a
hand-written sweep (raw outputs packed): 3 rounds of the baseline and one
configuration at 1 B and 1 KiB, plus one failed run.  Expected values are
worked out by hand in the comments.
usage: /usr/bin/python3 -m analysis.test_netpipe_report"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

from analysis import netpipe_report as report
from netpipe_runs import campaign, netpipe

MB = 2**20

# Mbps per round at (1 B, 1 KiB).  Mbps chosen so that t = bytes*8/(Mbps*2^20)
# is a round fraction of 2^-20 s:
#   1 B:    32 Mbps -> 8/32   = 0.25 * 2^-20 s;  16 -> 0.5 * 2^-20;  20 -> 0.4 * 2^-20
#   1 KiB: 8192 Mbps -> 8192/8192 = 1 * 2^-20 s;  4096 -> 2 * 2^-20
MBPS = {
    "baseline": [(32, 8192), (16, 8192), (32, 8192)],
    "ours-off": [(16, 8192), (16, 4096), (20, 8192)],
}


def netpipe_text(mbps_1b, mbps_1k):
    # The seconds column is deliberately coarse (as NetPIPE's, 10 ns steps):
    # the report must not use it.
    return (f"       1 {mbps_1b:f}   0.00000020\n"
            f"    1024 {mbps_1k:f}   0.00000100\n")


def write_sweep(folder):
    """A sweep folder as netpipe_sweep.py leaves it, raw outputs packed."""
    os.makedirs(os.path.join(folder, "raw"))
    records = []
    for key, rounds in MBPS.items():
        for r, (a, b) in enumerate(rounds, 1):
            name = f"raw/r{r:02d}-vader-latency-{key}.np"
            with open(os.path.join(folder, name), "w") as f:
                f.write(netpipe_text(a, b))
            records.append({"index": len(records) + 1, "round": r, "transport": "vader", "sweep": "latency",
                            "configuration": key, "outputs": {"output": name}, "status": "ok", "reason": "",
                            "load_before": 0.5 + len(records) / 10})
    # A failed run whose output is garbage: it must be left out and listed.
    with open(os.path.join(folder, "raw/r03-vader-latency-ours-all.np"), "w") as f:
        f.write("       1 1.000000   0.00000800\n")
    records.append({"index": len(records) + 1, "round": 3, "transport": "vader", "sweep": "latency",
                    "configuration": "ours-all", "outputs": {"output": "raw/r03-vader-latency-ours-all.np"},
                    "status": "failed", "reason": "mpirun exit status 1", "stderr_tail": "boom\n"})
    settings = {
            "profile": "short", "baseline": "baseline",
            "configurations": [{"key": "baseline", "name": "baseline (SPC compiled out)", "build": "nospc"},
                               {"key": "ours-off", "name": "ours, all off", "build": "spc"},
                               {"key": "ours-all", "name": "ours, all on", "build": "spc"}],
            "transports": [{"name": "vader", "btl": "self,vader", "paper_case": "Core"}],
            "sweeps": {"latency": {"low": 1, "high": 1024, "repeats": {"vader": 10}}}}
    meta = {"kind": "netpipe", "command": "netpipe_sweep.py --test", "rounds": 3, "seed": 1,
            "started": "2026-01-01T00:00:00+00:00", "finished": "2026-01-01T00:01:00+00:00",
            "settings": settings, "builds": {"nospc": {"content_hash": "aaaa"}, "spc": {"content_hash": "bbbb"}},
            "machine": {"cpu": "test CPU", "cores": 2, "kernel": "k", "commit": "0" * 40, "dirty": False}}
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(folder, "runs.jsonl"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
    campaign.pack(folder)


class NetpipeReport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.folder = self.tmp.name
        write_sweep(self.folder)

    def tearDown(self):
        self.tmp.cleanup()

    def test_time_comes_from_mbps(self):
        rows = netpipe.parse_output("  garbage line\n" + netpipe_text(32, 8192) + "\n")
        self.assertEqual([r[0] for r in rows], [1, 1024])
        # 1 B at 32 Mbps: 1*8 / (32 * 2^20) = 2^-22 s = 238.4185791015625 ns, not the column's 200 ns
        self.assertEqual(rows[0][3], 2**-22)
        self.assertEqual(rows[0][2], 0.0000002)
        # 1 KiB at 8192 Mbps: 8192 / (8192 * 2^20) = 2^-20 s
        self.assertEqual(rows[1][3], 2**-20)

    def test_overhead_is_paired_by_round(self):
        self.assertFalse(os.path.exists(os.path.join(self.folder, "raw")))  # read from raw.tar.xz
        meta, manifest, samples = report.load(self.folder)
        self.assertEqual((meta["baseline"], meta["rounds"]), ("baseline", 3))  # settings at the top
        self.assertEqual(len(samples), 12)  # 2 configurations x 3 rounds x 2 sizes; the failed run left out
        pairs = report.paired_overheads(samples, "baseline")
        one = pairs[pairs.bytes == 1].sort_values("round")
        # round 0: 0.5/0.25 = 2 -> +100 %;  round 1: 0.5/0.5 = 1 -> 0 %;  round 2: 0.4/0.25 = 1.6 -> +60 %
        for got, want in zip(one.ratio, [2.0, 1.0, 1.6]):
            self.assertAlmostEqual(got, want, places=9)
        for got, want in zip(one.overhead_pct, [100.0, 0.0, 60.0]):
            self.assertAlmostEqual(got, want, places=6)

        summary = report.summarize(samples, pairs, "baseline").set_index(["configuration", "bytes"])
        s = summary.loc[("ours-off", 1)]
        # sorted 0, 60, 100: median 60; quartiles by linear interpolation: 30 and 80
        self.assertAlmostEqual(s.overhead_pct_median, 60.0, places=6)
        self.assertAlmostEqual(s.overhead_pct_q1, 30.0, places=6)
        self.assertAlmostEqual(s.overhead_pct_q3, 80.0, places=6)
        self.assertAlmostEqual(s.overhead_pct_min, 0.0, places=6)
        self.assertAlmostEqual(s.overhead_pct_max, 100.0, places=6)
        # Unpaired, the medians give another answer: median times 0.5 and 0.25 (x 2^-20 s) -> +100 %
        self.assertAlmostEqual(s.overhead_of_medians_pct, 100.0, places=6)
        # baseline 1 B median time: 0.25 * 2^-20 s = 238.4185791015625 ns
        self.assertAlmostEqual(summary.loc[("baseline", 1)].time_ns_median, 238.4185791015625, places=9)
        k = summary.loc[("ours-off", 1024)]
        # 1 KiB ratios 1, 2, 1 -> 0, +100, 0 %: median 0, quartiles 0 and 50
        self.assertAlmostEqual(k.overhead_pct_median, 0.0, places=6)
        self.assertAlmostEqual(k.overhead_pct_q3, 50.0, places=6)
        self.assertEqual(k.pairs, 3)

    def test_report_writes_everything(self):
        argv = sys.argv
        sys.argv = ["netpipe_report.py", self.folder]
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                report.main()
        finally:
            sys.argv = argv
        for name in ("netpipe_summary.csv", "netpipe_summary.md", "fig1_all_off.png", "fig5_ours_four.png",
                     "latency.png", "bandwidth.png"):
            self.assertTrue(os.path.exists(os.path.join(self.folder, name)), name)
        with open(os.path.join(self.folder, "netpipe_summary.md")) as f:
            text = f.read()
        self.assertIn("| ours, all off | +60.0 [+30.0, +80.0] | +0.0 [+0.0, +50.0] | – | – |", text)
        self.assertIn("- 1 failed: mpirun exit status 1 (`boom`): r03-vader-latency-ours-all.np", text)
        self.assertIn("238 ns", text)
        self.assertIn("- 1-minute load average before each run: median 0.8, max 1.0", text)
        # every figure of FIGURES but those of configurations without a successful run (Figures 2 and 4)
        self.assertEqual(sorted(f for f in os.listdir(self.folder) if f.endswith(".png")),
                         sorted(name for name, _ in report.FIGURES if name[:4] not in ("fig2", "fig4")))


if __name__ == "__main__":
    unittest.main()
