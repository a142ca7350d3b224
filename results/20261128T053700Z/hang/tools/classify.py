#!/usr/bin/env python3
"""Sorts the hangs of a hangrate.py run by what gdb read in the ranks:
  oos-lost: a rank holds its expected fragment in frags_cant_match and
            matches nothing more (the bug the patch fixes);
  posted-list-corrupt: a rank's posted-receive list does not lead back to
            its sentinel, or a thread is caught in match_incomming, which
            loops in such a list holding the matching lock (not fixed);
  unread:   no ob1 state was read (Debian before debian_types.o, or gdb failed).
usage: classify.py DIR"""
import json, os, re, sys

d = sys.argv[1]
runs = [json.loads(l) for l in open(os.path.join(d, "runs.jsonl"))]
rows = {}
for r in runs:
    c = rows.setdefault(r["config"], {"runs": 0, "ok": 0, "failed": [], "hung": {}})
    c["runs"] += 1
    if r["status"] == "ok":
        c["ok"] += 1
    elif r["status"] == "failed":
        tail = r.get("output_tail", "")
        c["failed"].append((r["run"], "segfault" if "Segmentation fault" in tail else tail[-120:].strip()))
    else:
        text = open(os.path.join(d, f"hang-{r['config']}-{r['run']}.txt")).read()
        if "CORRUPT" in text or "in match_incomming" in text:
            kind = "posted-list-corrupt"
        elif re.search(r"the expected \d+ is (the head|in the list but NOT at the head)", text):
            kind = "oos-lost"
        elif "ob1 MPI_COMM_WORLD" in text:
            kind = "other"
        else:
            kind = "unread"
        detail = ""
        m = re.search(r"peer 0: expected_sequence (\d+).*?frags_cant_match: (\d+) fragments.*?head (\d+)", text)
        if kind == "oos-lost" and m:
            detail = f" (rank 1 expects {m.group(1)}, {m.group(2)} fragments queued, head {m.group(3)})"
        c["hung"].setdefault(kind, []).append(f"{r['run']}{detail}")
for name, c in rows.items():
    hung = sum(len(v) for v in c["hung"].values())
    print(f"{name}: {c['runs']} runs, {c['ok']} ok, {hung} hung, {len(c['failed'])} failed")
    for kind, items in sorted(c["hung"].items()):
        print(f"  hung, {kind}: {len(items)}: " + "; ".join(items))
    for run, why in c["failed"]:
        print(f"  failed: run {run}: {why}")
