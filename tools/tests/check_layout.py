"""The README's Layout section lists what is there.  The folders it names
are its backquoted paths that end in "/" (`spc/`, `tools/live/`), written
from the repository's root; other paths are written without the final "/"
or outside backquotes.  The folders there are those of `git ls-files`: every
top-level folder and each of their subfolders (two levels), except below
`results/`, whose subfolders are runs, not layout.  The test fails if the
Layout names a folder that does not exist (at any depth) or misses one of
the two levels.  It first shows, on planted folders, that it reports both.

usage: python3 check_layout.py REPO"""
import os
import re
import subprocess
import sys

from common import check, finish


def layout_folders(readme_text):
    """The folders the "## Layout" section names, or None without one."""
    section = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", readme_text, re.M | re.S)
    if not section:
        return None
    return {path for path in re.findall(r"`([^`\s]+/)`", section.group(1))}


def tree_folders(files):
    """(folders that must be named, every folder) of the tracked files."""
    must, every = set(), set()
    for path in files:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth]) + "/"
            every.add(folder)
            if depth <= 2 and not (depth == 2 and parts[0] == "results"):
                must.add(folder)
    return must, every


def compare(named, files):
    """The problems: named folders that do not exist, folders not named."""
    must, every = tree_folders(files)
    return ([f"the Layout names {folder}, which does not exist" for folder in sorted(named - every)] +
            [f"the Layout does not name {folder}" for folder in sorted(must - named)])


def control():
    files = ["spc/src/core.cc", "spc/include/spc/spc.h", "results/20261123T211827Z/summary.md", "run.sh"]
    text = "# x\n\n## Layout\n\n- `spc/`: core (`spc/src/`, `spc/include/`), `results/`, `run.sh`.\n\n## After\n`late/`\n"
    named = layout_folders(text)
    check(named == {"spc/", "spc/src/", "spc/include/", "results/"},
          f"control: the planted Layout's folders are not what it names ({named})")
    check(not compare(named, files), f"control: a planted Layout that matches is reported ({compare(named, files)})")
    missing = compare(named, files + ["planted_missing/sub/file.txt"])
    check(missing == ["the Layout does not name planted_missing/", "the Layout does not name planted_missing/sub/"],
          f"control: a planted folder the Layout misses is not reported as such ({missing})")
    extra = compare(named | {"planted_gone/"}, files)
    check(extra == ["the Layout names planted_gone/, which does not exist"],
          f"control: a planted Layout folder that does not exist is not reported as such ({extra})")
    check(not compare(named | {"spc/include/spc/"}, files), "control: a deeper folder that exists is refused")
    check(layout_folders("# no layout here\n") is None, "control: a README without Layout is not noticed")


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    repo = sys.argv[1]
    control()
    with open(os.path.join(repo, "README.md")) as f:
        named = layout_folders(f.read())
    listed = subprocess.run(["git", "-C", repo, "ls-files", "-z"], capture_output=True, text=True)
    if check(named is not None, "README.md has no '## Layout' section") and \
            check(listed.returncode == 0 and listed.stdout, f"git ls-files in {repo} failed: {listed.stderr}"):
        print("the Layout names:", " ".join(sorted(named)))
        for problem in compare(named, listed.stdout.split("\0")[:-1]):
            check(False, problem)
    finish()


if __name__ == "__main__":
    main()
