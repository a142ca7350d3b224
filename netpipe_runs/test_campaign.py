"""Tests of the campaign toolkit (campaign.py) and the contracts study.py
reads, without MPI: plans, pads, resuming, process trees, records.
usage: /usr/bin/python3 -m netpipe_runs.test_campaign"""
import contextlib
import io
import json
import os
import tempfile
import unittest

from netpipe_runs import campaign, event_cost, study, watch


def items(*names, block=""):
    return [campaign.Item(name, "fake", {"what": name}, block=block) for name in names]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Plan(unittest.TestCase):
    def test_interleave_is_fixed_by_the_seed(self):
        plan = campaign.interleave(items("a", "b", "c"), rounds=2, seed=7)
        # random.Random(7).sample of [a, b, c], twice in a row (pinned: a resumed plan must not change)
        self.assertEqual([r.key for r in plan], ["r01-b", "r01-a", "r01-c", "r02-c", "r02-a", "r02-b"])
        self.assertEqual([(r.index, r.round, r.position) for r in plan][:4],
                         [(1, 1, 1), (2, 1, 2), (3, 1, 3), (4, 2, 1)])
        self.assertEqual(plan, campaign.interleave(items("a", "b", "c"), rounds=2, seed=7))
        self.assertNotEqual([r.key for r in campaign.interleave(items(*"abcdefgh"), 1, 1)],
                            [r.key for r in campaign.interleave(items(*"abcdefgh"), 1, 2)])

    def test_blocks_stay_together_in_their_order(self):
        plan = campaign.interleave(items("x1", "x2", block="x") + items("y1", "y2", "y3", block="y"), 3, 5)
        blocks = [r.item.block for r in plan]
        self.assertEqual(blocks, ["x", "x", "y", "y", "y"] * 3)
        for round_ in (1, 2, 3):
            self.assertEqual(sorted(r.item.name for r in plan if r.round == round_),
                             ["x1", "x2", "y1", "y2", "y3"])

    def test_names_must_be_unique(self):
        with self.assertRaises(ValueError):
            campaign.interleave(items("a", "a"), 1, 0)

    def test_pad(self):
        self.assertEqual(campaign.pad_length(1, "r01-a", True), campaign.pad_length(1, "r01-a", True))
        pads = {campaign.pad_length(1, f"r01-{k}", True) for k in range(200)}
        self.assertTrue(all(0 <= p < 4096 for p in pads))
        self.assertGreater(len(pads), 150)  # drawn, not fixed
        self.assertEqual(campaign.pad_length(1, "r01-a", 0), 0)
        self.assertEqual(campaign.pad_length(1, "r01-a", 100), 100)


class Contracts(unittest.TestCase):
    def test_exit_codes_come_from_mpi_bench_h(self):
        self.assertEqual(study.bench_exit_codes(),
                         {"OK": 0, "USAGE": 2, "CHECK_FAILED": 3, "NOT_APPLICABLE": 4})
        with tempfile.NamedTemporaryFile("w", suffix=".h") as header:
            header.write("enum bench_exit {\n    BENCH_EXIT_OK = 0,\n    BENCH_EXIT_CHECK_FAILED = 7,\n};\n")
            header.flush()
            self.assertEqual(study.bench_exit_codes(header.name), {"OK": 0, "CHECK_FAILED": 7})
        with tempfile.NamedTemporaryFile("w", suffix=".h") as header:
            with self.assertRaises(ValueError):
                study.bench_exit_codes(header.name)

    def test_lists_are_read(self):
        self.assertEqual(study.TABLE4, ("SEND", "RECV", "BYTES_RECEIVED_USER", "BYTES_SENT_USER", "BYTES_GET",
                                        "UNEXPECTED", "MATCH_TIME"))
        self.assertEqual(study.MPI_ENV, {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
        self.assertEqual(study.attach_list(study.configuration("ours-match-time")), "OMPI_SPC_MATCH_TIME")
        self.assertEqual(study.COUNTER_PREFIX, "OMPI_SPC_")  # from spc/names.h
        with tempfile.NamedTemporaryFile("w", suffix=".h") as header:
            header.write('#define SPC_PVAR_PREFIX "runtime_spc_"\n#define SPC_X "a b"\n')
            header.flush()
            self.assertEqual(study.c_string(header.name, "SPC_X"), "a b")
            with self.assertRaises(ValueError):
                study.c_string(header.name, "SPC_PVAR")

    def test_bench_judge(self):
        line = '{"benchmark": "x"}\n# for people\n'
        self.assertEqual(campaign.bench_judge(0, line, ""), ("ok", "", {"benchmark": "x"}))
        self.assertEqual(campaign.bench_judge(3, line, "")[0], "check-failed")
        self.assertEqual(campaign.bench_judge(4, line, "")[0], "not-applicable")
        self.assertEqual(campaign.bench_judge(0, "no json\n", ""), ("failed", "exit status 0, no JSON line", None))
        self.assertEqual(campaign.bench_judge(1, line, "")[:2], ("failed", "exit status 1"))


class ProcessTree(unittest.TestCase):
    def run_tree(self, script, timeout, grace):
        with tempfile.TemporaryDirectory() as tmp:
            out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
            returncode, seconds = campaign.run_tree(["sh", "-c", script], dict(os.environ), timeout, out, err,
                                                    grace=grace)
            with open(out) as f:
                pids = [int(p) for p in f.read().split()]
        return returncode, seconds, pids

    def test_timeout_ends_the_whole_tree(self):
        returncode, seconds, pids = self.run_tree("sleep 100 & echo $!; sleep 100 & echo $!; wait", 1, 10)
        self.assertIsNone(returncode)
        self.assertLess(seconds, 10)
        self.assertEqual(len(pids), 2)
        self.assertEqual([p for p in pids if alive(p)], [])

    def test_sigterm_ignored_still_ends(self):
        returncode, seconds, pids = self.run_tree("trap '' TERM; sleep 100 & echo $!; sleep 100", 0.5, 0.5)
        self.assertIsNone(returncode)
        self.assertLess(seconds, 8)
        self.assertEqual([p for p in pids if alive(p)], [])

    def test_leftovers_of_a_finished_command_are_ended(self):
        returncode, _, pids = self.run_tree("sleep 100 & echo $!; exit 5", 30, 1)
        self.assertEqual(returncode, 5)
        self.assertEqual([p for p in pids if alive(p)], [])


class Watch(unittest.TestCase):
    """netpipe_runs.watch: a hung attempt is reported and run again."""

    def watched(self, script, attempts):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()) as said:
            result = watch.run(["sh", "-c", script, "sh", os.path.join(tmp, "ran")], 0.5, attempts, capture=True)
        return result, said.getvalue()

    def test_a_hang_then_an_end_gives_the_end(self):
        # the first attempt leaves a mark and hangs, the second sees it and exits 3
        result, said = self.watched('[ -e "$1" ] && { echo second; exit 3; }; touch "$1"; exec sleep 100', 3)
        self.assertEqual((result.returncode, result.stdout), (3, "second\n"))
        self.assertEqual(said.count(watch.HUNG), 1)
        self.assertIn("attempt 1 of 3", said)
        self.assertIn("running it again", said)

    def test_every_attempt_hung_is_124(self):
        result, said = self.watched("exec sleep 100", 2)
        self.assertEqual(result.returncode, watch.TIMED_OUT)
        self.assertEqual(said.count(watch.HUNG), 2)
        self.assertNotIn("attempt 3", said)

    def test_an_end_in_time_is_not_a_hang(self):
        result, said = self.watched("echo done; exit 0", 3)
        self.assertEqual((result.returncode, result.stdout, said), (0, "done\n", ""))


class Records(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.prefix = os.path.join(self.tmp.name, "prefix")
        os.makedirs(self.prefix)
        with open(os.path.join(self.prefix, ".built"), "w") as f:
            f.write("hash1\n")
        self.builds = {"fake": campaign.Build("fake", self.prefix, "hash1", {"content_hash": "hash1"})}
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def campaign(self, seed=None, settings=None, env_pad=True):
        with contextlib.redirect_stdout(io.StringIO()):
            return campaign.Campaign(self.out, "test", self.builds, items("a", "b", "c", "d"), 1, seed=seed,
                                     settings=settings or {"n": 1}, env_pad=env_pad)

    def execute(self, c, run, script):
        with contextlib.redirect_stdout(io.StringIO()):
            return c.execute(run, ["sh", "-c", script], 30)

    def test_a_hang_is_kept_and_the_run_starts_again(self):
        c = self.campaign()
        marker = os.path.join(self.tmp.name, "hung-once")
        with contextlib.redirect_stdout(io.StringIO()):
            record = c.execute(c.pending()[0], ["sh", "-c", f"[ -e {marker} ] && exit 0; touch {marker}; "
                                                "echo before the hang; exec sleep 100"], 1)
        self.assertEqual(record["status"], "ok")
        self.assertEqual(len(record["hangs"]), 1)
        hang = record["hangs"][0]
        with open(os.path.join(self.out, hang["backtraces"])) as f:
            text = f.read()
        # gdb attached to the hung process (the sleep), not to the shell that started it
        self.assertIn("sleep 100", text)
        self.assertRegex(text, r"(?m)^#0 ")
        self.assertEqual(len(hang["waits"]), 1)
        self.assertIn("nanosleep", hang["waits"][0])
        with open(os.path.join(self.out, hang["stdout"])) as f:
            self.assertEqual(f.read(), "before the hang\n")

        # the study's summary reports it
        from analysis import study_summary
        lines = study_summary.hang_lines(self.tmp.name)
        self.assertIn("- out, fake: 1 of 2", lines)
        self.assertTrue(any(line.startswith("| out | fake | r01-") and "nanosleep" in line for line in lines))

    def test_a_run_that_always_hangs_fails(self):
        c = self.campaign()
        with contextlib.redirect_stdout(io.StringIO()):
            record = c.execute(c.pending()[0], ["sh", "-c", "echo attempt; exec sleep 100"], 1)
        self.assertEqual(record["status"], "timeout")
        self.assertEqual([h["attempt"] for h in record["hangs"]], list(range(1, campaign.HANG_ATTEMPTS + 1)))
        self.assertIn("hung 3 times in a row", record["reason"])
        # the last attempt's output is the run's own
        self.assertIsNone(record["hangs"][-1]["stdout"])
        self.assertIsNotNone(record["stdout"])
        self.assertTrue(campaign.record_problems(self.out))

    def test_resume_skips_recorded_runs(self):
        c = self.campaign(seed=3)
        first = c.pending()
        self.assertEqual(len(first), 4)
        for run in first[:2]:
            self.execute(c, run, "true")
        again = self.campaign()  # no seed: the recorded one
        self.assertEqual(again.seed, 3)
        self.assertEqual([r.key for r in again.pending()], [r.key for r in first[2:]])
        self.assertEqual(len(again.meta["sessions"]), 2)
        with self.assertRaises(SystemExit):
            self.campaign(settings={"n": 2})
        with self.assertRaises(SystemExit):
            self.campaign(seed=4)
        with self.assertRaises(SystemExit), contextlib.redirect_stdout(io.StringIO()):  # another plan
            campaign.Campaign(self.out, "test", self.builds, items("a", "b", "c", "e"), 1, settings={"n": 1})

    def test_record_env_pad_and_files(self):
        c = self.campaign(seed=11)
        run = c.pending()[0]
        record = self.execute(c, run, 'printf %s "$SPC_ENV_PAD" | wc -c')
        self.assertEqual(record["env_pad"], campaign.pad_length(11, run.key, True))
        with open(os.path.join(self.out, record["stdout"])) as f:
            self.assertEqual(int(f.read()), record["env_pad"])
        self.assertIsNone(record["stderr"])  # empty: not kept
        self.assertFalse(os.path.exists(c.path(run, ".err")))
        self.assertEqual((record["status"], record["build_hash"], record["what"], record["key"]),
                         ("ok", "hash1", run.item.name, run.key))
        failed = self.execute(c, c.pending()[0], "echo oops >&2; exit 2")
        self.assertEqual((failed["status"], failed["reason"], failed["stderr_tail"]),
                         ("failed", "exit status 2", "oops\n"))
        self.assertEqual([r["key"] for r in campaign.read_records(self.out)], [run.key, failed["key"]])

    def test_fixed_pad(self):
        c = self.campaign(env_pad=0)
        record = self.execute(c, c.pending()[0], 'printf %s "$SPC_ENV_PAD" | wc -c')
        self.assertEqual(record["env_pad"], 0)

    def test_replaced_build_stops(self):
        c = self.campaign()
        self.execute(c, c.pending()[0], "true")
        with open(os.path.join(self.prefix, ".built"), "w") as f:
            f.write("hash2\n")
        with self.assertRaises(campaign.BuildReplaced):
            self.execute(c, c.pending()[0], "true")
        with self.assertRaises(SystemExit):  # its folder cannot go on with another build
            campaign.Campaign(self.out, "test", {"fake": self.builds["fake"]._replace(content_hash="hash2")},
                              items("a", "b", "c", "d"), 1, settings={"n": 1})

    def test_replaced_while_running(self):
        c = self.campaign()
        with self.assertRaises(campaign.BuildReplaced):
            self.execute(c, c.pending()[0], f"echo hash2 > {self.prefix}/.built")
        self.assertEqual(campaign.read_records(self.out)[0]["status"], "build-replaced")

    def test_use_builds_takes_exactly_those(self):
        self.assertEqual(campaign.build_hashes("spc=ab12, nospc=cd34"), {"spc": "ab12", "nospc": "cd34"})
        for bad in ("", "spc", "spc=", "=ab"):
            with self.assertRaises(ValueError):
                campaign.build_hashes(bad)
        with open(os.path.join(self.prefix, "build-info.json"), "w") as f:
            json.dump({"variant": "fake", "content_hash": "hash1"}, f)
        where, study.where = study.where, lambda variant=None: self.prefix
        try:
            build = campaign.resolve_builds({"fake"}, expected={"fake": "hash1"})["fake"]
            self.assertEqual((build.prefix, build.content_hash), (self.prefix, "hash1"))
            with self.assertRaises(SystemExit) as stop:
                campaign.resolve_builds({"fake"}, expected={"fake": "hash0"})
            self.assertIn("is hash1, not the build hash0 asked for", str(stop.exception))
        finally:
            study.where = where

    def test_json_files_are_written_whole(self):
        path = os.path.join(self.tmp.name, "x.json")
        campaign.write_json(path, {"a": [1, 2]})
        campaign.write_json(path, {"b": "c"})
        with open(path) as f:
            self.assertEqual(json.load(f), {"b": "c"})
        self.assertFalse(os.path.exists(path + ".tmp"))

    def test_study_meta_names_each_build(self):
        with open(os.path.join(self.prefix, "build-info.json"), "w") as f:
            json.dump({"variant": "fake", "content_hash": "hash1"}, f)
        where, study.where = study.where, lambda variant=None: self.prefix
        try:
            campaign.study_meta(os.path.join(self.tmp.name, "meta.json"), "./run.sh --profile smoke", "smoke",
                                campaign.build_hashes("fake=hash1"))
        finally:
            study.where = where
        with open(os.path.join(self.tmp.name, "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual((meta["command"], meta["profile"], meta["builds"]),
                         ("./run.sh --profile smoke", "smoke", {"fake": {"variant": "fake", "content_hash": "hash1"}}))
        self.assertIn("cpu", meta["machine"])

    def test_finished_campaign_is_packed_and_readable(self):
        with contextlib.redirect_stdout(io.StringIO()):
            with self.campaign() as c:
                for run in c.pending():
                    c.execute(run, ["sh", "-c", f"echo {run.key}"], 30)
        self.assertFalse(os.path.exists(os.path.join(self.out, "raw")))
        self.assertTrue(os.path.exists(os.path.join(self.out, "raw.tar.xz")))
        raw = campaign.RawFiles(self.out)
        for record in campaign.read_records(self.out):
            self.assertEqual(raw.read(record["stdout"]), record["key"] + "\n")
        with self.assertRaises(FileNotFoundError):
            raw.read("raw/nothing.out")
        with open(os.path.join(self.out, "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual((meta["interrupted"], len(meta["plan"])), (False, 4))

    def test_pack_adds_to_an_archive_and_gzips_large_records(self):
        os.makedirs(os.path.join(self.out, "raw"))
        for name, text in (("one.out", "1"), ("empty.err", "")):
            with open(os.path.join(self.out, "raw", name), "w") as f:
                f.write(text)
        campaign.pack(self.out)
        os.makedirs(os.path.join(self.out, "raw"))
        with open(os.path.join(self.out, "raw", "two.out"), "w") as f:
            f.write("2")
        with open(os.path.join(self.out, "runs.jsonl"), "w") as f:
            f.write((json.dumps({"key": "x" * 100}) + "\n") * 20000)
        campaign.pack(self.out)
        raw = campaign.RawFiles(self.out)
        self.assertEqual((raw.read("raw/one.out"), raw.read("raw/two.out")), ("1", "2"))
        with self.assertRaises(FileNotFoundError):
            raw.read("raw/empty.err")
        self.assertFalse(os.path.exists(os.path.join(self.out, "runs.jsonl")))
        self.assertEqual(len(campaign.read_records(self.out)), 20000)


class Drivers(unittest.TestCase):
    def test_event_cost_table(self):
        def record(case, start):
            return {"status": "ok", "case": case, "messages": 100,
                    "result": {"rank0": {"send": 1000, "start": start, "match": 800},
                               "rank1": {"send": 1200, "start": start, "match": 800}}}
        text = event_cost.table([record("no handle", 500), record("handles, no-op callbacks", 1500),
                                 dict(record("handles, no-op callbacks", 9999), status="failed")])
        # per message, both ranks' mean: send (1000 + 1200) / (2 x 100) = 11.0; start 1000 / 200 = 5.0, then 15.0
        self.assertIn("| `PMPI_Send` | 11.0 | 11.0 | +0.0 |", text)
        self.assertIn("| the receive's start (`mca_pml_ob1_recv_req_start`) | 5.0 | 15.0 | +10.0 |", text)
        self.assertIn("| the arrival's match (`mca_pml_ob1_recv_frag_callback_match`) | 8.0 | 8.0 | +0.0 |", text)
        self.assertIn("| `PMPI_Send` | – | 11.0 | – |", event_cost.table([record("handles, no-op callbacks", 1)]))


if __name__ == "__main__":
    unittest.main()
