"""Tests of how the study's Python is put together: no tracked Python file
(nor Python inside a tracked shell script) edits sys.path, the packages
netpipe_runs and analysis are imported as packages instead; and every
driver and report of them starts as `python3 -m` from the repository's root
and answers --help.  Each detector first shows it sees what it looks for.

usage: /usr/bin/python3 -m netpipe_runs.test_package  (from the repository's root)"""
import ast
import os
import re
import subprocess
import sys
import tempfile
import unittest

from netpipe_runs import study

PACKAGES = ("netpipe_runs", "analysis")
# What changes the import path: sys.path's own methods and item or whole
# assignment, `from sys import path` (a way round the first two), and
# site.addsitedir.  PYTHONPATH set for a child process is not an edit.
MUTATORS = {"insert", "append", "extend", "remove", "pop", "clear", "reverse", "sort", "__setitem__",
            "__delitem__", "__iadd__"}
# The same in shell scripts, which hold Python in heredocs (python3 - <<'PY').
SHELL_EDIT = re.compile(r"\bsys\.path\s*(\.\s*(" + "|".join(sorted(MUTATORS)) + r")\s*\(|\[[^]\n]*\]\s*=|\+?=[^=])"
                        r"|\bfrom\s+sys\s+import\s+(\w+\s*,\s*)*path\b|\bsite\.addsitedir\s*\(")


def is_sys_path(node):
    return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
            and node.value.id == "sys")


def python_edits(source, name):
    """[(line, what)] of the sys.path edits in Python SOURCE."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MUTATORS and is_sys_path(node.func.value):
                found.append((node.lineno, f"sys.path.{node.func.attr}()"))
            elif (node.func.attr == "addsitedir" and isinstance(node.func.value, ast.Name)
                  and node.func.value.id == "site"):
                found.append((node.lineno, "site.addsitedir()"))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if is_sys_path(target) or (isinstance(target, ast.Subscript) and is_sys_path(target.value)):
                    found.append((node.lineno, "assignment to sys.path"))
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            found.append((node.lineno, "from sys import path"))
    return sorted(found)


def shell_edits(source):
    """[(line, what)] of the lines of a shell script that edit sys.path."""
    return [(number, line.strip()) for number, line in enumerate(source.splitlines(), 1) if SHELL_EDIT.search(line)]


def kind(path):
    """"python", "shell" or None, by the name or else the #! line."""
    if path.endswith(".py"):
        return "python"
    if path.endswith(".sh"):
        return "shell"
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return None
    if first.startswith(b"#!"):
        return "python" if b"python" in first else "shell" if re.search(rb"\b(ba|da)?sh\b", first) else None
    return None


def edits(path):
    """[(line, what)] of the sys.path edits in the file PATH."""
    with open(path, errors="replace") as f:
        source = f.read()
    what = kind(path)
    return python_edits(source, path) if what == "python" else shell_edits(source) if what == "shell" else []


def tracked_files():
    listed = subprocess.run(["git", "-C", study.REPO, "ls-files", "-z"], capture_output=True, text=True)
    if listed.returncode != 0:
        raise unittest.SkipTest(f"not a git checkout, cannot list tracked files: {listed.stderr.strip()}")
    return [os.path.join(study.REPO, p) for p in listed.stdout.split("\0") if p and not p.startswith("results/")]


class NoPathEdits(unittest.TestCase):
    def planted(self, name, text):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        path = os.path.join(folder.name, name)
        with open(path, "w") as f:
            f.write(text)
        return edits(path)

    def test_detector_sees_every_kind_of_edit(self):
        found = self.planted("planted.py", "\n".join([
            "import os, site, sys",
            "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))",
            "sys.path.append('x')",
            "sys.path[0:0] = ['x']",
            "sys.path = ['x'] + sys.path",
            "sys.path += ['x']",
            "from sys import path",
            "site.addsitedir('x')",
            "del sys.path[0]",
        ]) + "\n")
        self.assertEqual([line for line, _ in found], [2, 3, 4, 5, 6, 7, 8, 9])
        # a script without .py, known by its #! line
        self.assertEqual(len(self.planted("tool", "#!/usr/bin/python3\nimport sys\nsys.path.append('x')\n")), 1)
        # Python in a shell script's heredoc, as run.sh once wrote meta.json
        found = self.planted("step.sh", "#!/bin/sh\npython3 - <<'PY'\nimport sys\nsys.path.insert(0, 'x')\n"
                                        "sys.path[0] = 'y'\nfrom sys import path\nPY\n")
        self.assertEqual([line for line, _ in found], [4, 5, 6])
        self.assertEqual(len(self.planted("runner", "#!/usr/bin/env bash\nsys.path.append('x')\n")), 1)

    def test_detector_leaves_reading_alone(self):
        self.assertEqual(self.planted("reads.py", "\n".join([
            "import sys",
            "# sys.path.insert(0, 'x') in a comment",
            "text = 'sys.path.insert(0, \"x\")'",
            "print(sys.path[0], len(sys.path), sys.path == [])",
            "paths = list(sys.path)",
            "paths.insert(0, 'x')",
        ]) + "\n"), [])
        self.assertEqual(self.planted("reads.sh", "#!/bin/sh\npython3 -c 'import sys; print(sys.path[0])'\n"
                                                  "[ \"$x\" == y ]\n"), [])

    def test_no_tracked_file_edits_sys_path(self):
        files = tracked_files()
        checked = [f for f in files if kind(f) == "python"]
        # the packages' files are among those read, and a Python script known by its #! line
        for name in ("netpipe_runs/campaign.py", "analysis/netpipe_report.py", "tools/spc-check-binary"):
            self.assertIn(os.path.join(study.REPO, name), checked)
        self.assertIn(os.path.join(study.REPO, "run.sh"), [f for f in files if kind(f) == "shell"])
        found = [f"{os.path.relpath(f, study.REPO)}:{line}: {what}" for f in files for line, what in edits(f)]
        self.assertEqual(found, [], "import the packages netpipe_runs and analysis instead (python3 -m "
                                    "from the repository's root)")


def runnable_modules():
    """Every module of the packages that runs (has a __main__ block), tests aside."""
    found = []
    for package in PACKAGES:
        for name in sorted(os.listdir(os.path.join(study.REPO, package))):
            if name.endswith(".py") and not name.startswith(("test_", "__")):
                with open(os.path.join(study.REPO, package, name)) as f:
                    if 'if __name__ == "__main__":' in f.read():
                        found.append(f"{package}.{name[:-3]}")
    return found


def start(module, *args):
    return subprocess.run([sys.executable, "-m", module, *args], cwd=study.REPO, capture_output=True, text=True,
                          timeout=120, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})


class Runnable(unittest.TestCase):
    def test_every_driver_and_report_answers_help(self):
        modules = runnable_modules()
        for expected in ("netpipe_runs.netpipe_sweep", "netpipe_runs.campaign", "netpipe_runs.ab_runs",
                         "analysis.netpipe_report", "analysis.study_summary"):
            self.assertIn(expected, modules)
        # the control: a module that does not start is seen as one
        self.assertNotEqual(start("netpipe_runs.no_such_module", "--help").returncode, 0)
        for module in modules:
            with self.subTest(module=module):
                result = start(module, "--help")
                self.assertEqual(result.returncode, 0, result.stderr[-2000:])
                self.assertIn("usage", result.stdout.lower())


if __name__ == "__main__":
    unittest.main()
