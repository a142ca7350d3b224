"""Runs the marked blocks of the README and of docs/ as printed.  In each
document given, every part between the front-door markers

    <!-- front-door: begin ... -->   and   <!-- front-door: end -->

(a document may have several) is taken, and their fenced blocks become one
bash script per document, in order: ```sh blocks verbatim, ```python,
```c and ```fortran blocks written to the file their first comment names
(e.g. "# ping.py: ...", "! sends.f90: ..."), each in the folder the commands are in at that point.  A
```text block right after a ```sh block is that block's output: every line
of it but "..." must be a line of what the block printed (spacing aside).
Any other block fails the test, so nothing marked goes unrun.  Each
document's script runs on its own, from REPO, in a scratch folder of its
own.  Other markers (<!-- live: begin --> and the like, which only place
sections) are not blocks this test knows.

It fails when: a document given has no front-door part, or a begin without
its end; a part has fewer than 3 ```sh blocks in all; a document under REPO
(README.md, docs/*.md) has front-door markers but was not given, so a block
moved to another page cannot drop out of testing; a script ends non-zero;
an expected line was not printed.  Before all that it shows, on planted
documents, that each of these checks sees what it looks for (the control).

usage: /usr/bin/python3 check_readme.py [--parse-only] REPO SCRATCH DOCUMENT...
  --parse-only: the control and the checks above but without running the
  scripts (prints them); needs no Open MPI build."""
import glob
import os
import re
import subprocess
import sys
import tempfile

from common import check, finish

BEGIN, END = "<!-- front-door: begin", "<!-- front-door: end -->"
FILE_NAME = re.compile(r"^(?:#|/\*|//|!) ([\w.-]+\.(?:py|c|f90)):")
MARK = "@@@ readme block {} done @@@"


def blocks(text):
    """[(language, body)] of the fenced blocks in text, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]


def marked_parts(text):
    """([text of each front-door part], [problems])."""
    parts, problems, at = [], [], 0
    while True:
        start = text.find(BEGIN, at)
        if start < 0:
            break
        stop = text.find(END, start)
        next_begin = text.find(BEGIN, start + len(BEGIN))
        if stop < 0 or 0 <= next_begin < stop:
            problems.append("a front-door begin marker has no end marker before the next begin")
            break
        parts.append(text[start:stop])
        at = stop + len(END)
    if not parts and not problems:
        problems.append("no front-door marked block (every document given must have one)")
    if text.count(END) > len(parts) and not problems:
        problems.append("a front-door end marker has no begin marker")
    return parts, problems


def script_of(section_blocks):
    """The bash script, {sh block number: expected lines} and [problems]."""
    lines, expected, problems, last_sh = ["set -euo pipefail"], {}, [], None
    for number, (language, body) in enumerate(section_blocks):
        if language == "sh":
            lines += [body.rstrip("\n"), "echo '" + MARK.format(number) + "'"]
            last_sh = number
        elif language in ("python", "c", "fortran"):
            names = [FILE_NAME.match(line) for line in body.splitlines()[:2]]
            names = [n.group(1) for n in names if n]
            last_sh = None
            if not names:
                problems.append(f"block {number} ({language}) names no file in its first comment")
            elif "SPC_README_EOF" in body:
                problems.append(f"block {number} contains the heredoc marker")
            else:
                lines += [f"cat > '{names[0]}' <<'SPC_README_EOF'", body.rstrip("\n"), "SPC_README_EOF"]
        elif language == "text":
            if last_sh is None:
                problems.append(f"block {number} (text) does not follow a sh block")
            else:
                expected[last_sh] = [line for line in body.splitlines() if line.strip() and line != "..."]
            last_sh = None
        else:
            problems.append(f"block {number} is ```{language}, which this test cannot run")
    return "\n".join(lines) + "\n", expected, problems


def document(text):
    """The script of a document's marked parts, its expected lines, [problems]."""
    parts, problems = marked_parts(text)
    section_blocks = [block for part in parts for block in blocks(part)]
    if parts and sum(language == "sh" for language, _ in section_blocks) < 3:
        problems.append("its marked blocks hold fewer than 3 sh blocks")
    script, expected, more = script_of(section_blocks)
    return script, expected, problems + more


def not_printed(stdout, expected):
    """The expected lines (per sh block) missing from stdout, as messages."""
    def normal(line):
        return " ".join(line.split())
    outputs, current = {}, []
    for line in stdout.splitlines():
        done = re.fullmatch(MARK.replace("{}", r"(\d+)"), line)
        if done:
            outputs[int(done.group(1))], current = current, []
        else:
            current.append(normal(line))
    return [f"block {number} did not print: {line}"
            for number, lines in expected.items() for line in lines
            if normal(line) not in set(outputs.get(number, []))]


def unlisted(repo, given):
    """Documents of repo with front-door markers that are not among given."""
    given = {os.path.realpath(path) for path in given}
    candidates = [os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "docs", "*.md")))
    return [path for path in candidates
            if os.path.isfile(path) and os.path.realpath(path) not in given and BEGIN in open(path).read()]


PLANTED_GOOD = f"""{BEGIN} -->
```sh
echo one
```

```text
one
```

```sh
true
```

```sh
true
```
{END}
"""


def control(scratch):
    """Each check on planted documents: silent on a good one, loud on a bad one."""
    fence = "```"
    script, expected, problems = document(PLANTED_GOOD)
    check(not problems and expected == {0: ["one"]}, f"control: a good planted document does not parse ({problems})")
    check(not not_printed("one\n" + MARK.format(0) + "\n", expected),
          "control: the planted block's printed line is not found")
    check(not_printed("two\n" + MARK.format(0) + "\n", expected),
          "control: a line the planted block did not print goes unreported")
    # (what is planted, the document, what the report must say)
    bad = [
        ("no marked block", "# A page\n\n" + fence + "sh\necho moved out of the markers\n" + fence + "\n",
         "no front-door marked block"),
        ("a begin without its end", PLANTED_GOOD.replace(END, ""), "has no end marker"),
        ("fewer than 3 sh blocks", PLANTED_GOOD.replace(fence + "sh\ntrue\n" + fence + "\n", "", 2),
         "fewer than 3 sh blocks"),
        ("a block it cannot run", PLANTED_GOOD.replace(fence + "sh\ntrue", fence + "yaml\ntrue", 1),
         "```yaml, which this test cannot run"),
        ("a text block after no sh block", PLANTED_GOOD.replace(fence + "sh\necho one", fence + "python\n# a.py: x", 1),
         "(text) does not follow a sh block"),
    ]
    for what, text, says in bad:
        problems = document(text)[2]
        check(any(says in problem for problem in problems),
              f"control: a planted document with {what} is not reported as such ({problems})")
    with tempfile.TemporaryDirectory(dir=scratch) as repo:
        os.makedirs(os.path.join(repo, "docs"))
        for name in ("README.md", "docs/moved.md"):
            with open(os.path.join(repo, name), "w") as f:
                f.write(PLANTED_GOOD)
        found = unlisted(repo, [os.path.join(repo, "README.md")])
        check(found == [os.path.join(repo, "docs", "moved.md")],
              f"control: a planted page with marked blocks left out of the list is not reported ({found})")


def main():
    arguments = sys.argv[1:]
    if "--help" in arguments or "-h" in arguments:
        print(__doc__)
        sys.exit(0)
    parse_only = "--parse-only" in arguments
    arguments = [a for a in arguments if a != "--parse-only"]
    if len(arguments) < 3 or any(a.startswith("-") for a in arguments):
        sys.exit(__doc__)
    repo, scratch, documents = arguments[0], arguments[1], arguments[2:]
    os.makedirs(scratch, exist_ok=True)
    control(scratch)

    for path in unlisted(repo, documents):
        check(False, f"{path} has front-door marked blocks but is not given to this test")
    scripts = []
    for path in documents:
        with open(path) as f:
            script, expected, problems = document(f.read())
        for problem in problems:
            check(False, f"{path}: {problem}")
        print(f"==== {path}: {len(expected)} sh blocks with their output to check")
        print(script)
        if not problems:
            scripts.append((path, script, expected))
    if parse_only:
        finish()

    for path, script, expected in scripts:
        with tempfile.TemporaryDirectory(dir=scratch) as folder:
            # mktemp -d in the document lands in this folder, removed afterwards.
            env = dict(os.environ, TMPDIR=folder)
            result = subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True,
                                    timeout=800)
        print(f"==== {path}: exit {result.returncode}")
        print(result.stdout)
        print(result.stderr)
        check(result.returncode == 0, f"{path}: its commands ended with exit {result.returncode}")
        for message in not_printed(result.stdout, expected):
            check(False, f"{path}: {message}")
    finish()


if __name__ == "__main__":
    main()
