"""Tests of the one reader of callgrind_annotate listings (callgrind_counts:
parse_listing, function_profile, inclusive_instructions, judge_files), which
callgrind_counts, event_cost and instruction_budget take their counts from,
on real callgrind data: callgrind_sample.callgrind, recorded from
callgrind_sample.c (its first lines say how), and the listing
callgrind_annotate made of it, callgrind_sample.listing.  Without MPI; needs
valgrind's callgrind_annotate (install_deps.sh).

usage: python3 -m netpipe_runs.test_callgrind  (from the repository's root)"""
import os
import unittest

from netpipe_runs import callgrind_counts, study

SAMPLE = os.path.join(study.REPO, "netpipe_runs", "callgrind_sample.callgrind")
LISTING = os.path.join(study.REPO, "netpipe_runs", "callgrind_sample.listing")

# The listing's functions in its order, each at its first line.  Above main
# stand the C library's and the loader's frames, charged with all main calls;
# "(below main)" is cut at its space, as every name is.  The match's second
# line (its code inlined from callgrind_sample_inline.h, 20) and the
# annotated source (lines with counts too) add nothing; once_b, 0.39% of the
# total, is there: the listing is not cut at callgrind_annotate's default
# threshold.
INCLUSIVE = {"main": 1783, "__libc_start_main@@GLIBC_2.34": 1783, "(below": 1783, "0x000000000001ab70": 1783,
             "leaf": 1440, "mca_pml_ob1_recv_frag_callback_match": 1303, "PMPI_Send": 480, "once_a": 7, "once_b": 7}
# Self: a function of no instructions of its own stands as "." and is left out.
SELF = {"leaf": 1440, "mca_pml_ob1_recv_frag_callback_match": 219, "PMPI_Send": 90, "once_a": 7, "once_b": 7}
# The match's second line: the 20 instructions of its inlined code.
INLINED = 20
MATCH_LINE = "1,303 (73.08%)  ././callgrind_sample.c:mca_pml_ob1_recv_frag_callback_match [/tmp/cgs/callgrind_sample]"


def listing():
    with open(LISTING) as f:
        return f.read()


class Listing(unittest.TestCase):
    def test_the_real_listing(self):
        profile = callgrind_counts.parse_listing(listing())
        self.assertEqual(list(profile.items()), list(INCLUSIVE.items()))

    def test_counts_add_up_as_the_program_makes_them(self):
        # Collected only inside the two roots: they make the total, the
        # functions that call none are their own count, and the self counts
        # make the total but for the match's inlined line, which the profile
        # leaves out (a function's first line only).
        inclusive = callgrind_counts.parse_listing(listing())
        own = callgrind_counts.function_profile(SAMPLE, inclusive=False)
        total = inclusive["main"]
        self.assertEqual(inclusive["PMPI_Send"] + inclusive["mca_pml_ob1_recv_frag_callback_match"], total)
        for name in ("leaf", "once_a", "once_b"):
            self.assertEqual(inclusive[name], own[name])
        self.assertEqual(sum(own.values()) + INLINED, total)

    def test_the_parser_reads_what_the_lines_say(self):
        # The control: a count changed, a line gone (the function's next line
        # counts then), a line without its percentage (older
        # callgrind_annotate) are each seen.
        text = listing()
        self.assertIn(MATCH_LINE, text)
        changed = callgrind_counts.parse_listing(text.replace(MATCH_LINE, MATCH_LINE.replace("1,303", "1,304")))
        self.assertEqual(changed["mca_pml_ob1_recv_frag_callback_match"], 1304)
        gone = callgrind_counts.parse_listing(text.replace(MATCH_LINE + "\n", ""))
        self.assertEqual(gone, dict(INCLUSIVE, mca_pml_ob1_recv_frag_callback_match=INLINED))
        bare = callgrind_counts.parse_listing(text.replace(MATCH_LINE, MATCH_LINE.replace(" (73.08%)", "")))
        self.assertEqual(bare, INCLUSIVE)


class Files(unittest.TestCase):
    """What the drivers read: callgrind_annotate run on the recorded file."""

    def test_function_profile(self):
        profile = callgrind_counts.function_profile(SAMPLE)
        self.assertEqual(list(profile.items()), list(INCLUSIVE.items()))
        self.assertEqual(list(callgrind_counts.function_profile(SAMPLE, inclusive=False).items()),
                         list(SELF.items()))

    def test_inclusive_instructions_in_the_listings_order(self):
        # FUNCTIONS names send first; the listing has the match first, and
        # so do the records (runs.jsonl) the drivers have written.
        found = callgrind_counts.inclusive_instructions(SAMPLE)
        self.assertEqual(list(found.items()), [("match", 1303), ("send", 480)])
        # a whole name only: "once" is part of once_a's and once_b's
        self.assertEqual(callgrind_counts.inclusive_instructions(SAMPLE, {"part": "once", "leaf": "leaf",
                                                                          "none": "no_such"}),
                         {"leaf": 1440})

    def test_judge_files(self):
        judge = callgrind_counts.judge_files({0: SAMPLE, 1: SAMPLE})
        self.assertEqual(judge(0, "", ""), ("ok", "", {"rank0": {"match": 1303, "send": 480},
                                                        "rank1": {"match": 1303, "send": 480}}))
        self.assertEqual(judge(1, "", ""), ("failed", "exit status 1", None))
        status, reason, result = callgrind_counts.judge_files({0: SAMPLE + ".missing"})(0, "", "")
        self.assertEqual((status, result), ("failed", None))
        self.assertTrue(reason.startswith("callgrind_annotate: "), reason)


if __name__ == "__main__":
    unittest.main()
