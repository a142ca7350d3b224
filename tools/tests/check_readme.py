"""Runs the README's "Counters for your program" section as printed: the
fenced blocks between the front-door markers become one bash script, in
order: ```sh blocks verbatim, ```python and ```c blocks written to the file
their first comment names (e.g. "# ping.py: ..."), each in the folder the
commands are in at that point.  A ```text block right after a ```sh block is
that block's output: every line of it but "..." must be a line of what the
block printed (spacing aside).  Any other block fails the test, so nothing in
the section goes unrun.

usage: /usr/bin/python3 check_readme.py README REPO SCRATCH"""
import os
import re
import subprocess
import sys
import tempfile

from common import check, finish

BEGIN, END = "<!-- front-door: begin", "<!-- front-door: end -->"
FILE_NAME = re.compile(r"^(?:#|/\*|//) ([\w.-]+\.(?:py|c)):")
MARK = "@@@ readme block {} done @@@"


def blocks(text):
    """[(language, body)] of the fenced blocks in text, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]


def script_of(section_blocks):
    """The bash script and {sh block number: expected lines}."""
    lines, expected, last_sh = ["set -euo pipefail"], {}, None
    for number, (language, body) in enumerate(section_blocks):
        if language == "sh":
            lines += [body.rstrip("\n"), "echo '" + MARK.format(number) + "'"]
            last_sh = number
        elif language in ("python", "c"):
            names = [FILE_NAME.match(line) for line in body.splitlines()[:2]]
            names = [n.group(1) for n in names if n]
            if not check(names, f"block {number} ({language}) names no file in its first comment"):
                continue
            if not check("SPC_README_EOF" not in body, f"block {number} contains the heredoc marker"):
                continue
            lines += [f"cat > '{names[0]}' <<'SPC_README_EOF'", body.rstrip("\n"), "SPC_README_EOF"]
            last_sh = None
        elif language == "text":
            if check(last_sh is not None, f"block {number} (text) does not follow a sh block"):
                expected[last_sh] = [line for line in body.splitlines() if line.strip() and line != "..."]
            last_sh = None
        else:
            check(False, f"block {number} is ```{language}, which this test cannot run")
    return "\n".join(lines) + "\n", expected


def normal(line):
    return " ".join(line.split())


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    readme, repo, scratch = sys.argv[1:]
    with open(readme) as f:
        text = f.read()
    start, stop = text.find(BEGIN), text.find(END)
    if not check(0 <= start < stop, "the README has no front-door markers"):
        finish()
    section_blocks = blocks(text[start:stop])
    check(sum(language == "sh" for language, _ in section_blocks) >= 3, "the section has fewer than 3 sh blocks")
    script, expected = script_of(section_blocks)
    print(script)
    os.makedirs(scratch, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        # mktemp -d in the section lands in this folder, removed afterwards.
        env = dict(os.environ, TMPDIR=folder)
        result = subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True,
                                timeout=800)
    print(result.stdout)
    print(result.stderr)
    check(result.returncode == 0, f"the section's commands ended with exit {result.returncode}")

    outputs, current = {}, []
    for line in result.stdout.splitlines():
        done = re.fullmatch(MARK.replace("{}", r"(\d+)"), line)
        if done:
            outputs[int(done.group(1))], current = current, []
        else:
            current.append(normal(line))
    for number, lines in expected.items():
        printed = set(outputs.get(number, []))
        for line in lines:
            check(normal(line) in printed, f"block {number} did not print: {line}")
    finish()


if __name__ == "__main__":
    main()
