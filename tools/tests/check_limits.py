"""The front page stays a front page and results/ a record, not an archive:
README.md has at most 300 lines (a feature's detail goes to its page in
docs/), results/ tracks at most 150 files (older runs reduced to their
summaries, the raw data left in the history), and every relative link of a
tracked markdown file leads to a file or folder that exists.  It first shows,
on planted cases, that it reports each.

usage: python3 check_limits.py REPO"""
import os
import re
import subprocess
import sys

from common import check, finish

README_LINES = 300
RESULTS_FILES = 150
# [text](target) outside code; a target with a scheme or only an anchor is not a file
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def over_limits(readme_text, files):
    problems = []
    lines = readme_text.count("\n")
    if lines > README_LINES:
        problems.append(f"README.md has {lines} lines, more than {README_LINES}: move a feature's detail "
                        "to its page in docs/")
    results = [f for f in files if f.startswith("results/")]
    if len(results) > RESULTS_FILES:
        problems.append(f"results/ tracks {len(results)} files, more than {RESULTS_FILES}: reduce older runs "
                        "to their summaries (results/README.md says how)")
    return problems


def broken_links(document, text, exists):
    """The relative links of DOCUMENT (a path from the root) that EXISTS(path) denies."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)  # examples, not links
    broken = []
    for target in LINK.findall(text):
        path = target.split("#", 1)[0]
        if not path or re.match(r"^[a-z]+:", path):
            continue
        resolved = os.path.normpath(os.path.join(os.path.dirname(document), path))
        if not exists(resolved):
            broken.append(f"{document} links to {target}, which does not exist")
    return broken


def control():
    small, files = "line\n" * README_LINES, ["results/README.md"] + [f"results/r/{n}" for n in range(RESULTS_FILES - 1)]
    check(not over_limits(small, files), "control: a README and results/ at their limits are reported")
    check(len(over_limits(small + "one more\n", files + ["results/r/planted"])) == 2,
          "control: a README and results/ one over their limits are not both reported")
    there = {"docs/study.md", "results/run", "README.md"}.__contains__
    text = ("[ok](study.md#netpipe) [up](../README.md) [web](https://example.org) [anchor](#x)\n"
            "```\n[in code](nowhere.md)\n```\n[planted](gone.md) [run](../results/run/)\n")
    broken = broken_links("docs/page.md", text, there)
    check(broken == ["docs/page.md links to gone.md, which does not exist"],
          f"control: a planted broken link is not the only one reported ({broken})")


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    repo = sys.argv[1]
    control()
    listed = subprocess.run(["git", "-C", repo, "ls-files", "-z"], capture_output=True, text=True)
    if not check(listed.returncode == 0 and listed.stdout, f"git ls-files in {repo} failed: {listed.stderr}"):
        finish()
    files = listed.stdout.split("\0")[:-1]
    tracked = set(files)
    for path in files:
        while path:
            path = os.path.dirname(path)
            tracked.add(path)
    with open(os.path.join(repo, "README.md")) as f:
        for problem in over_limits(f.read(), files):
            check(False, problem)
    documents = [f for f in files if f.endswith(".md")]
    for document in documents:
        with open(os.path.join(repo, document)) as f:
            for problem in broken_links(document, f.read(), lambda p: p.rstrip("/") in tracked):
                check(False, problem)
    print(f"README.md, results/ ({len([f for f in files if f.startswith('results/')])} files) and the links of "
          f"{len(documents)} markdown files checked")
    finish()


if __name__ == "__main__":
    main()
