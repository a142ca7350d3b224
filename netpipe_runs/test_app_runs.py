"""Tests of how the applications' runs are read (app_runs: applications,
physical_result, judge_in), which tools/apps/run_apps.py reads them with
too, on the real outputs of results/20261126T072106Z: run_apps.py's runs of
every application of apps.json (apps/, each result in apps.json) and
app_runs' campaigns of NWChem (app_nwchem/, app_nwchem_dft/, each result in
runs.jsonl).  Without MPI.

usage: python3 -m netpipe_runs.test_app_runs  (from the repository's root)"""
import json
import os
import tarfile
import tempfile
import unittest

from netpipe_runs import app_runs, study

RUN = os.path.join(study.REPO, "results", "20261126T072106Z")
SIDES = ("debian", "ours")


def unpacked(test, archive):
    """ARCHIVE (a raw.tar.xz) unpacked into a folder removed after TEST."""
    folder = tempfile.TemporaryDirectory()
    test.addCleanup(folder.cleanup)
    # member by member: extractall's filter, which the Python of the future
    # asks for, is not in Debian 12's
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.isfile():
                path = os.path.join(folder.name, member.name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(tar.extractfile(member).read())
    return folder.name


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


class PhysicalResult(unittest.TestCase):
    def setUp(self):
        self.raw = unpacked(self, os.path.join(RUN, "apps", "raw.tar.xz"))
        with open(os.path.join(RUN, "apps", "apps.json")) as f:
            self.rows = {row["application"]: row for row in json.load(f)}
        self.apps = app_runs.applications()

    def result(self, name, side):
        folder = os.path.join(self.raw, name, side)
        return app_runs.physical_result(self.apps[name], folder, read(os.path.join(folder, "stdout.txt")))

    def test_every_application_reads_as_recorded(self):
        self.assertEqual(sorted(self.apps), ["abinit", "elk", "nwchem", "nwchem-dft"])
        self.assertEqual(sorted(self.rows), sorted(self.apps))
        # stdout and a file the run wrote (Elk's INFO.OUT) are both read
        self.assertEqual({app["result"]["file"] for app in self.apps.values()}, {"stdout", "INFO.OUT"})
        for name in self.apps:
            for side in SIDES:
                with self.subTest(application=name, side=side):
                    self.assertEqual(self.result(name, side), (self.rows[name][side]["result"], ""))
        self.assertEqual(self.result("elk", "ours"), ("-577.983625041", ""))

    def test_the_last_match_counts_and_what_is_missing_is_said(self):
        # The control: a later result line wins, and a run without its result
        # file or its result line is reported as such.
        nwchem, elk = self.apps["nwchem"], self.apps["elk"]
        folder = os.path.join(self.raw, "nwchem", "ours")
        stdout = read(os.path.join(folder, "stdout.txt"))
        self.assertEqual(app_runs.physical_result(nwchem, folder, stdout + "      Total SCF energy =    -1.5\n"),
                         ("-1.5", ""))
        self.assertEqual(app_runs.physical_result(nwchem, folder, stdout.replace("Total SCF energy", "Total")),
                         (None, "no Total SCF energy in its output"))
        self.assertEqual(app_runs.physical_result(elk, folder, ""), (None, "no INFO.OUT"))


class Judge(unittest.TestCase):
    def test_campaign_records_are_judged_again_as_recorded(self):
        # Elk's campaign kept no INFO.OUT (its run folders are removed once
        # judged): NWChem's two campaigns, every run.
        apps = app_runs.applications()
        judged = 0
        for name, folder in (("nwchem", "app_nwchem"), ("nwchem-dft", "app_nwchem_dft")):
            raw = unpacked(self, os.path.join(RUN, folder, "raw.tar.xz"))
            with open(os.path.join(RUN, folder, "runs.jsonl")) as f:
                records = [json.loads(line) for line in f]
            for record in records:
                judge = app_runs.judge_in(apps[name], os.path.join(raw, "gone"))
                verdict = judge(0, read(os.path.join(raw, record["stdout"])), read(os.path.join(raw, record["stderr"])))
                self.assertEqual(verdict, (record["status"], record["reason"], record["result"]), record["key"])
                judged += 1
        self.assertEqual(judged, 60)
        judge = app_runs.judge_in(apps["nwchem"], "gone")
        self.assertEqual(judge(1, "", ""), ("failed", "exit status 1", None))
        self.assertEqual(judge(0, "      Total SCF energy =    -1.5\n", ""),
                         ("failed", "no wall time from the timer", None))


if __name__ == "__main__":
    unittest.main()
