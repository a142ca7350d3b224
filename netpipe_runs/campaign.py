"""A planned, interleaved, resumable campaign of MPI runs, and the one record
format of its results: the toolkit every study driver is built on.

    items = [campaign.Item("ours-all-T8", "spc", {"configuration": "ours-all", "threads": 8})]
    builds = campaign.resolve_builds({"spc"}, cached=False)
    with campaign.Campaign(out, "pairwise", builds, items, rounds=3, seed=None,
                           settings={"threads": [8]}) as c:
        for run in c.pending():
            c.execute(run, command, timeout=90, judge=campaign.bench_judge)

A campaign folder holds meta.json (settings, seed, plan, builds, machine),
runs.jsonl (one JSON record per finished run, see Campaign.execute) and raw/
(each run's stdout, stderr and other files), which becomes raw.tar.xz once
every planned run is recorded (pack()); read_records() and RawFiles read
either form.  Run the same command with the same folder again to resume: the
recorded runs are skipped, the seed and plan are the recorded ones."""
import argparse
import datetime
import gzip
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from typing import NamedTuple

from netpipe_runs import study

RECORDS = "runs.jsonl"
# Attempts of a run whose every attempt hangs: Open MPI 4.1.4 itself hangs in
# a few of 100 8-thread pairwise runs over vader (docs/study.md), and a run
# that hangs three times in a row is no longer chance.
HANG_ATTEMPTS = 3
ARCHIVE = "raw.tar.xz"
PAD_LIMIT = 4096        # pads are 0 .. PAD_LIMIT - 1 bytes
GZIP_RECORDS_OVER = 1 << 20  # pack() compresses a larger runs.jsonl


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def utc_stamp():
    """The UTC time as results folders are named: 20261123T172029Z."""
    return utc_now().strftime("%Y%m%dT%H%M%SZ")


# --- the plan -----------------------------------------------------------------

class Item(NamedTuple):
    """One thing to run once per round."""
    name: str          # unique within a round and file-name safe, e.g. "ours-all-T8"
    build: str         # the Open MPI build (variant) it runs in
    fields: dict       # recorded with each of its runs: configuration, transport, ...
    block: str = ""    # items of one block run together, blocks in the order given
    kind: str = ""     # runs of one kind take about as long (time left)


class Run(NamedTuple):
    index: int         # 1-based position in the whole plan
    round: int         # 1-based
    position: int      # 1-based position within its block of the round
    item: Item

    @property
    def key(self):
        """The run's name in records and file names: r01-ours-all-T8."""
        return f"r{self.round:02d}-{self.item.name}"


def interleave(items, rounds, seed):
    """The plan: every item once per round, each block of a round in an order
    shuffled from SEED, so drift falls on all items alike."""
    names = [item.name for item in items]
    if len(set(names)) != len(names):
        raise ValueError(f"item names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    rng = random.Random(seed)
    blocks = {}
    for item in items:
        blocks.setdefault(item.block, []).append(item)
    plan = []
    for round_ in range(1, rounds + 1):
        for members in blocks.values():
            for position, item in enumerate(rng.sample(members, len(members)), 1):
                plan.append(Run(len(plan) + 1, round_, position, item))
    return plan


def pad_length(seed, key, env_pad):
    """Bytes of environment pad for the run KEY: drawn from (SEED, KEY) when
    ENV_PAD is True, so a resumed run gets the same; ENV_PAD itself when it
    is a number."""
    if env_pad is True:
        return random.Random(f"{seed}/{key}").randrange(PAD_LIMIT)
    return int(env_pad)


# --- builds -------------------------------------------------------------------

class Build(NamedTuple):
    variant: str
    prefix: str
    content_hash: str
    info: dict


class BuildReplaced(Exception):
    pass


def built_hash(prefix):
    """The content hash of the build now in PREFIX (None while it is rebuilt)."""
    try:
        with open(os.path.join(prefix, ".built")) as f:
            return f.read().strip()
    except OSError:
        return None


def resolve_builds(variants, cached=False, expected=None):
    """{variant: Build}, each build's prefix and content hash taken once, at
    the campaign's start; exits with the reason if one is unusable.  cached:
    only builds current with the sources (never a build); EXPECTED
    ({variant: content hash}): exactly those builds as they are in the cache,
    whatever the sources are now (what run.sh started with)."""
    builds = {}
    for variant in sorted(set(variants)):
        try:
            if expected is not None:
                prefix = study.where(variant)
                if variant not in expected or built_hash(prefix) != expected[variant]:
                    raise study.BuildUnavailable(
                        f"the Open MPI build '{variant}' in {prefix} is {built_hash(prefix) or 'missing'}, "
                        f"not the build {expected.get(variant, '(none named)')} asked for: it was replaced")
            else:
                prefix = study.build(variant, cached=cached)
            info = study.build_info(prefix)
        except (study.BuildUnavailable, OSError, ValueError) as error:
            sys.exit(f"campaign: {error}")
        builds[variant] = Build(variant, prefix, info["content_hash"], info)
    return builds


# How the study compiles its MPI programs with each build's mpicc.
C_FLAGS = ("-std=c11", "-O2", "-Wall", "-pthread")


def compile_programs(out, builds, source, flags=C_FLAGS, library=False):
    """SOURCE (a path from the repository's root: bench/pairwise.c) compiled
    by each build's own mpicc into OUT/bin/, a program NAME-VARIANT or, with
    LIBRARY, a shared object libNAME-VARIANT.so: {variant: path}; exits with
    the compiler's message on failure."""
    folder = os.path.join(out, "bin")
    os.makedirs(folder, exist_ok=True)
    name = os.path.splitext(os.path.basename(source))[0]
    programs = {}
    for variant, build in builds.items():
        programs[variant] = os.path.join(folder, f"lib{name}-{variant}.so" if library else f"{name}-{variant}")
        # the MPI_T client header and spc/names.h, which every build can use
        includes = ["-I" + os.path.join(study.REPO, "pvar_export", "include"),
                    "-I" + os.path.join(study.REPO, "spc", "include")]
        command = [os.path.join(build.prefix, "bin", "mpicc"), *flags, *(["-fPIC", "-shared"] if library else []),
                   *includes, os.path.join(study.REPO, source), "-o", programs[variant]]
        result = subprocess.run(command, capture_output=True, text=True)
        with open(os.path.join(folder, "compile.log"), "a") as f:
            f.write("$ " + " ".join(command) + "\n" + result.stdout + result.stderr)
        if result.returncode != 0:
            sys.exit(f"campaign: compiling {source} with {command[0]} failed:\n{result.stderr}")
    return programs


def compile_listeners(out, builds, configurations):
    """bench/event_listener.c as a shared library for each build that a
    configuration that listens (study.Configuration.listens) runs on:
    {variant: path}."""
    variants = {c.build for c in configurations if c.listens}
    if not variants:
        return {}
    return compile_programs(out, {v: b for v, b in builds.items() if v in variants}, "bench/event_listener.c",
                            flags=C_FLAGS + ("-Wextra", "-Werror"), library=True)


# --- running one command ------------------------------------------------------

def _proc_stats():
    """(pid, ppid, session) of every live (not zombie) process, from /proc."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()  # after "pid (comm)": state ppid pgrp session
            except (OSError, IndexError):
                continue
            if fields[0] != "Z":
                yield int(entry), int(fields[1]), int(fields[3])


def tree(pid):
    """PID's descendants and every process of the session PID leads: what a
    command started in a session of its own has started (Open MPI gives each
    rank a process group of its own; a rank whose mpirun died keeps the
    session but loses its parent)."""
    stats = list(_proc_stats())
    children = {}
    for child, parent, _ in stats:
        children.setdefault(parent, []).append(child)
    found, todo = {p for p, _, session in stats if session == pid and p != pid}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return sorted(found)


def end_tree(proc, grace=10.0):
    """Ends PROC and everything it started: SIGTERM to its process group
    first (mpirun takes its ranks down and reaps them), then, GRACE seconds
    later, SIGKILL by id to whatever of the tree is left."""
    below = tree(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    for _ in range(100):
        alive = {pid for pid, _, _ in _proc_stats()}
        left = [pid for pid in (set(below) | set(tree(proc.pid))) & alive]
        if proc.poll() is None:
            left.append(proc.pid)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.poll()
        time.sleep(0.05)
    proc.wait()


def run_tree(command, env, timeout, stdout_path, stderr_path, watch=None, grace=10.0, on_timeout=None):
    """Runs COMMAND in a session of its own, stdout and stderr into files;
    calls WATCH(stderr so far) about once a second.  Returns (exit status,
    or None if it ran past TIMEOUT seconds and was ended, seconds).  On a
    timeout, ON_TIMEOUT(pid) looks at the tree while it still hangs; then,
    as on Ctrl-C, the whole process tree is ended (end_tree), and so is
    anything the command left behind when it exited."""
    started = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    try:
        while True:
            left = started + timeout - time.monotonic()
            try:
                returncode = proc.wait(timeout=max(0.0, min(1.0, left)))
                break
            except subprocess.TimeoutExpired:
                if left <= 1.0 and time.monotonic() >= started + timeout:
                    if on_timeout:
                        on_timeout(proc.pid)
                    end_tree(proc, grace)
                    returncode = None
                    break
                if watch:
                    with open(stderr_path, errors="replace") as f:
                        watch(f.read())
    except KeyboardInterrupt:
        end_tree(proc, grace)
        raise
    if tree(proc.pid):
        end_tree(proc, grace)
    return returncode, time.monotonic() - started


# --- a hung run ---------------------------------------------------------------

# What starts ranks rather than being one: their backtraces say nothing of a hang.
LAUNCHERS = {"mpirun", "mpiexec", "orterun", "orted", "prterun", "prted", "prte", "sh", "bash", "env"}


def _command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def backtraces(pid):
    """Every thread's backtrace in each process of PID's tree but its
    launchers, taken with gdb while the tree still hangs: the text of a
    hang's finding.  A process gdb cannot attach to says why instead."""
    sections = []
    for member in [pid, *tree(pid)]:
        try:
            with open(f"/proc/{member}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        if name in LAUNCHERS:
            continue
        try:
            gdb = subprocess.run(["gdb", "-batch", "-nx", "-p", str(member), "-ex", "thread apply all bt"],
                                 capture_output=True, text=True, timeout=120)
            text = gdb.stdout if "Thread" in gdb.stdout else gdb.stdout + gdb.stderr
        except (OSError, subprocess.TimeoutExpired) as error:
            text = f"no backtrace: {error}\n"
        sections.append(f"=== process {member}: {_command_line(member)}\n{text}")
    return "".join(sections) or "no process of the tree but its launchers was left\n"


def waits(backtrace_text):
    """Where each process's threads were when it hung: per process, the
    outermost MPI call of each thread (or its innermost frame when it was in
    none) with how many threads were there, e.g. "MPI_Recv x7, opal_progress x1"."""
    processes = []
    for section in backtrace_text.split("=== process ")[1:]:
        places = {}
        for thread in section.split("\nThread ")[1:]:
            frames = [line.split(" in ", 1)[1].split(" (", 1)[0] if " in " in line else line.split()[1]
                      for line in thread.splitlines() if line.startswith("#") and len(line.split()) > 1]
            calls = [f.lstrip("P") for f in frames if f.startswith(("MPI_", "PMPI_"))]
            place = calls[-1] if calls else (frames[0] if frames else "?")
            places[place] = places.get(place, 0) + 1
        if places:
            processes.append(", ".join(f"{place} x{n}" for place, n in sorted(places.items())))
    return processes


# --- judging a run ------------------------------------------------------------

def exit_judge(returncode, stdout, stderr):
    """ok on exit status 0."""
    return ("ok", "", None) if returncode == 0 else ("failed", f"exit status {returncode}", None)


def result_line(stdout):
    """The program's JSON line (the first line that parses as a JSON object)."""
    for line in stdout.splitlines():
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def bench_judge(returncode, stdout, stderr):
    """A bench/ MPI program: its JSON line is the result, its exit status
    (bench/mpi_bench.h, enum bench_exit) the verdict."""
    codes = study.bench_exit_codes()
    result = result_line(stdout)
    statuses = {codes["OK"]: "ok", codes["CHECK_FAILED"]: "check-failed",
                codes["NOT_APPLICABLE"]: "not-applicable"}
    if result is not None and returncode in statuses:
        return statuses[returncode], "", result
    reason = f"exit status {returncode}" + ("" if result is not None else ", no JSON line")
    return "failed", reason, result


# --- records and raw files ----------------------------------------------------

def write_json(path, data):
    """PATH holds DATA as JSON, replaced whole (a reader never sees half a
    file): how every JSON file of the study is written (meta.json and the
    others; runs.jsonl, one line per run, is appended by Campaign.execute)."""
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def read_records(folder):
    """The records of a campaign folder (runs.jsonl, or runs.jsonl.gz)."""
    path = os.path.join(folder, RECORDS)
    if os.path.exists(path):
        f = open(path)
    elif os.path.exists(path + ".gz"):
        f = gzip.open(path + ".gz", "rt")
    else:
        return []
    with f:
        return [json.loads(line) for line in f if line.strip()]


def record_problems(folder):
    """Why the campaign in FOLDER is not a complete record of good runs: no
    meta.json, planned runs not recorded, runs that ended otherwise than ok
    (or not-applicable, which is an answer).  Empty when it is one."""
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            plan = json.load(f)["plan"]
    except (OSError, ValueError, KeyError) as error:
        return [f"{folder}: no readable meta.json with a plan ({error})"]
    records = {r["key"]: r for r in read_records(folder)}
    found = [f"{folder}: {len([k for k in plan if k not in records])} of {len(plan)} planned runs not recorded"
             ] if any(k not in records for k in plan) else []
    return found + [f"{folder}: run {key} {r['status']}: {r.get('reason', '')}" for key, r in records.items()
                    if r["status"] not in ("ok", "not-applicable")]


def folder_argument(doc):
    """The one argument of a report that takes one results folder; DOC, its
    usage, on -h or --help (exit 0) or on any other number of arguments
    (exit 1)."""
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(doc)
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit(doc)
    return sys.argv[1]


def report_main(doc, make):
    """main() of a report script taking one campaign folder: MAKE(out, ok_records)
    returns the markdown it writes to OUT/summary.md and prints."""
    out = folder_argument(doc)
    records = [r for r in read_records(out) if r["status"] == "ok"]
    if not records:
        sys.exit(f"{os.path.basename(sys.argv[0])}: no successful run recorded in {out}")
    text = make(out, records)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    print(text)


class RawFiles:
    """The raw files of a campaign folder by their recorded path (raw/...):
    from the folder when there, else from raw.tar.xz."""

    def __init__(self, folder):
        self.folder, self._archive = folder, None

    def read(self, path):
        if os.path.exists(os.path.join(self.folder, path)):
            with open(os.path.join(self.folder, path), "rb") as f:
                return f.read().decode(errors="replace")
        if self._archive is None:
            self._archive = {}
            archive = os.path.join(self.folder, ARCHIVE)
            if os.path.exists(archive):
                with tarfile.open(archive, "r:xz") as tar:
                    for member in tar:
                        if member.isfile():
                            self._archive[member.name] = tar.extractfile(member).read()
        if path not in self._archive:
            raise FileNotFoundError(f"{path}: neither in {self.folder} nor in its {ARCHIVE}")
        return self._archive[path].decode(errors="replace")


def pack(folder):
    """Moves raw/ into raw.tar.xz (adding to one already there), drops empty
    files, and gzips a runs.jsonl larger than 1 MiB: what a finished
    campaign keeps."""
    raw = os.path.join(folder, "raw")
    archive = os.path.join(folder, ARCHIVE)
    if os.path.isdir(raw):
        files = {}
        if os.path.exists(archive):
            with tarfile.open(archive, "r:xz") as tar:
                files = {m.name: (m, tar.extractfile(m).read()) for m in tar if m.isfile()}
        for base, _, names in os.walk(raw):
            for name in names:
                path = os.path.join(base, name)
                if os.path.getsize(path):
                    relative = os.path.relpath(path, folder)
                    with open(path, "rb") as f:
                        files[relative] = (None, f.read())
        if files:
            with tarfile.open(archive + ".tmp", "w:xz") as tar:
                for relative in sorted(files):
                    member, data = files[relative]
                    info = member or tarfile.TarInfo(relative)
                    info.size = len(data)
                    if member is None:
                        info.mtime = int(os.path.getmtime(os.path.join(folder, relative)))
                    tar.addfile(info, io.BytesIO(data))
            os.replace(archive + ".tmp", archive)
        shutil.rmtree(raw)
    records = os.path.join(folder, RECORDS)
    if os.path.exists(records) and os.path.getsize(records) > GZIP_RECORDS_OVER:
        with open(records, "rb") as f, gzip.open(records + ".gz", "wb") as g:
            shutil.copyfileobj(f, g)
        os.remove(records)


# --- the campaign -------------------------------------------------------------

def add_arguments(parser, timeout, out_hint):
    """The options every driver has: --out, --seed, --timeout, --cached, --use-builds."""
    parser.add_argument("--out", help=f"results folder (default {out_hint}); an unfinished "
                        "campaign's folder resumes it")
    parser.add_argument("--seed", type=int, help="seed of the per-round order and the environment pads "
                        "(default: from the clock; a resumed campaign keeps its own)")
    parser.add_argument("--timeout", type=float, default=timeout,
                        help="seconds per mpirun before its whole process tree is ended "
                             + (f"({timeout:g})" if timeout else "(default: the profile's)"))
    builds = parser.add_mutually_exclusive_group()
    builds.add_argument("--cached", action="store_true",
                        help="use the Open MPI builds only if they are built and current "
                             "(build_ompi.sh --cached); never start a build")
    builds.add_argument("--use-builds", metavar="VARIANT=HASH,...", type=build_hashes,
                        help="use exactly these builds as they are in the cache, whatever the sources "
                             "are now (run.sh passes the builds it started with); never start a build")


def build_hashes(text):
    """--use-builds: "spc=78ae3aa14c2bff3a,nospc=..." -> {variant: hash}."""
    pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
    if not pairs or any(len(pair) != 2 or not all(pair) for pair in pairs):
        raise ValueError(text)
    return {variant.strip(): content_hash.strip() for variant, content_hash in pairs}


def output_folder(out, kind):
    """--out, or results/KIND/<UTC time>; created, and checked writable."""
    folder = os.path.abspath(out or os.path.join(study.REPO, "results", kind, utc_stamp()))
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, ".writable"), "w"):
            pass
        os.remove(os.path.join(folder, ".writable"))
    except OSError as error:
        sys.exit(f"campaign: cannot write the results folder {folder}: {error.strerror}")
    return folder


class Progress:
    """One line per run (the running one rewritten in place on a terminal),
    with done/total and the time left: runs to go times the mean duration
    of their kind."""

    def __init__(self, total, done):
        self.total, self.done, self.durations = total, done, {}
        self.tty = sys.stdout.isatty()

    def left(self, remaining_kinds, kind=None, running_for=0.0):
        every = [d for ds in self.durations.values() for d in ds]
        if not every:
            return None

        def mean(k):
            ds = self.durations.get(k) or every
            return sum(ds) / len(ds)
        return sum(mean(k) for k in remaining_kinds) + (max(0.0, mean(kind) - running_for) if kind is not None
                                                         else 0.0)

    @staticmethod
    def human(seconds):
        if seconds is None:
            return ""
        return f", about {seconds / 60:.1f} min left" if seconds >= 120 else f", about {seconds:.0f} s left"

    def show(self, line, final=False):
        if self.tty:
            sys.stdout.write("\r\033[K" + line + ("\n" if final else ""))
            sys.stdout.flush()
        elif final:
            print(line, flush=True)


class Campaign:
    """Runs of ITEMS in ROUNDS interleaved rounds in the BUILDS resolved at
    its start, recorded in OUT.  SETTINGS (JSON) are what the driver was
    asked for: a folder holding a campaign of other settings is refused, one
    of the same settings resumed.  ENV_PAD: True gives every run a pad of a
    length drawn from the seed and its key; a number, that fixed length."""

    def __init__(self, out, kind, builds, items, rounds, seed=None, settings=None, env_pad=True):
        self.out, self.kind, self.builds, self.env_pad = out, kind, builds, env_pad
        self.settings = json.loads(json.dumps(settings or {}))
        os.makedirs(os.path.join(out, "raw"), exist_ok=True)
        self.meta_path = os.path.join(out, "meta.json")
        old = None
        if os.path.exists(self.meta_path):
            with open(self.meta_path) as f:
                old = json.load(f)
            if seed is None:
                seed = old.get("seed")
            there = dict(old.get("settings", {}), kind=old.get("kind"), rounds=old.get("rounds"),
                         seed=old.get("seed"), env_pad=old.get("env_pad"))
            now = dict(self.settings, kind=kind, rounds=rounds, seed=seed, env_pad=env_pad)
            differ = [f"{k}: {there.get(k)!r} there, {now.get(k)!r} now" for k in dict.fromkeys([*there, *now])
                      if there.get(k) != now.get(k)]
            if differ:
                sys.exit(f"campaign: {out} holds a {old.get('kind')} campaign of other settings "
                         f"({'; '.join(differ)}); choose another --out, or run its own command to resume it")
        self.seed = seed if seed is not None else int(time.time() * 1000) % 2**31
        self.plan = interleave(items, rounds, self.seed)
        self.records = read_records(out)
        done_hashes = {(r["build"], r.get("build_hash")) for r in self.records}
        for variant, recorded in sorted(done_hashes):
            if variant in builds and recorded != builds[variant].content_hash:
                sys.exit(f"campaign: {out} holds runs of build '{variant}' {recorded}, which is now "
                         f"{builds[variant].content_hash}; builds are never mixed in one campaign: "
                         "choose another --out")
        self.machine = study.machine()
        self.meta = old or {"kind": kind, "command": " ".join(sys.argv), "cwd": os.getcwd(),
                            "started": utc_now().isoformat(timespec="seconds"), "finished": None,
                            "rounds": rounds, "seed": self.seed, "env_pad": env_pad,
                            "settings": self.settings, "plan": [run.key for run in self.plan],
                            "machine": self.machine, "mpi_env": study.MPI_ENV,
                            "python": sys.version.split()[0], "sessions": []}
        if self.meta.get("plan") != [run.key for run in self.plan]:
            sys.exit(f"campaign: {out} holds a campaign of another plan; choose another --out")
        self.meta["builds"] = {v: dict(b.info, prefix=b.prefix) for v, b in builds.items()}  # as checked above
        self.meta["sessions"].append({"started": utc_now().isoformat(timespec="seconds"),
                                      "command": " ".join(sys.argv), "machine": self.machine,
                                      "resumed_after": len(self.records)})
        self.meta["interrupted"] = False
        self.save_meta()
        done = {r["key"] for r in self.records}
        self.todo = [run for run in self.plan if run.key not in done]
        self.progress = Progress(len(self.plan), len(self.plan) - len(self.todo))
        if done:
            print(f"== resuming {out}: {len(self.plan) - len(self.todo)} of {len(self.plan)} runs recorded",
                  flush=True)

    # -- bookkeeping

    def save_meta(self):
        write_json(self.meta_path, self.meta)

    def note(self, **entries):
        """Adds ENTRIES (JSON) to meta.json."""
        self.meta.update(json.loads(json.dumps(entries)))
        self.save_meta()

    def __enter__(self):
        def interrupt(signum, frame):
            raise KeyboardInterrupt
        self._old_term = signal.signal(signal.SIGTERM, interrupt)  # a kill is a Ctrl-C: record kept
        return self

    def __exit__(self, kind, error, tb):
        signal.signal(signal.SIGTERM, self._old_term)
        self.meta["interrupted"] = kind is not None
        self.meta["finished"] = utc_now().isoformat(timespec="seconds")
        self.meta["sessions"][-1]["finished"] = self.meta["finished"]
        self.save_meta()
        recorded = {r["key"] for r in read_records(self.out)}
        complete = all(run.key in recorded for run in self.plan)
        if complete:
            pack(self.out)
        statuses = {}
        for record in read_records(self.out):
            statuses[record["status"]] = statuses.get(record["status"], 0) + 1
        print(f"== {self.kind}: {len(recorded)} of {len(self.plan)} runs recorded ("
              + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) + ")"
              + ("" if complete else f"; run the same command again to resume in {self.out}"), flush=True)
        if kind is KeyboardInterrupt:
            print("\n== interrupted; what ran so far is recorded", flush=True)
            sys.exit(130)
        if kind is BuildReplaced:
            sys.exit(f"campaign: {error}; stopped. The runs so far are in {self.out}/{RECORDS}.")
        return False

    # -- runs

    def pending(self):
        """The planned runs not yet recorded, in plan order."""
        return list(self.todo)

    def check_build(self, variant):
        now = built_hash(self.builds[variant].prefix)
        if now != self.builds[variant].content_hash:
            raise BuildReplaced(f"the Open MPI build '{variant}' in {self.builds[variant].prefix} was replaced "
                                f"under this campaign (content hash {self.builds[variant].content_hash} at its "
                                f"start, {now or 'none: being rebuilt'} now)")

    def path(self, run, suffix):
        """raw/<key><suffix> inside the campaign folder, for a run's own files."""
        return os.path.join(self.out, "raw", run.key + suffix)

    def keep_hang(self, run, attempt, started, seconds, backtrace_text, output):
        """Saves a hung attempt's backtraces under raw/, and moves its OUTPUT
        (stdout and stderr paths) there too unless None (see execute);
        returns what the run's record says of it."""
        stem = self.path(run, f".hang{attempt}")
        with open(stem + ".txt", "w") as f:
            f.write(backtrace_text)
        kept = {"stdout": None, "stderr": None}
        for name, path in zip(kept, output or ()):
            if os.path.getsize(path):
                os.replace(path, f"{stem}.{name[3:]}")
                kept[name] = os.path.relpath(f"{stem}.{name[3:]}", self.out)
        return {"attempt": attempt, "started": started.isoformat(timespec="seconds"),
                "seconds": round(seconds, 3), "backtraces": os.path.relpath(stem + ".txt", self.out),
                "waits": waits(backtrace_text), **kept}

    def execute(self, run, command, timeout, judge=exit_judge, env=None, watch=None, outputs=None,
                label=None):
        """Runs COMMAND for RUN and appends its record to runs.jsonl:

          key, index, round, position, build, build_hash, the item's fields,
          env_pad (bytes), started (UTC), seconds, load_before (1-minute load
          average), machine, command, returncode, status, reason, result,
          stdout/stderr (raw/ paths, null when empty), outputs ({name: raw/
          path} of other files it wrote), and stderr_tail when not ok.

        status is the first of JUDGE(returncode, stdout, stderr) -> (status,
        reason, result), or "timeout" when every one of HANG_ATTEMPTS
        attempts ran past TIMEOUT seconds.  An attempt that hangs is a
        finding about the system under study, not the end of the run: its
        backtraces (every thread of every rank, backtraces()) and output
        are kept as raw/<key>.hang<N>.{txt,out,err}, the record's "hangs"
        lists them with where the ranks waited (waits()), and the run starts
        again.  ENV adds to study.environment(); WATCH(stderr so far) -> a
        text shown beside the progress line.  Stops the campaign
        (BuildReplaced) when the run's build is not the one it started with,
        before or after the run."""
        item = run.item
        self.check_build(item.build)
        pad = pad_length(self.seed, run.key, self.env_pad)
        head = f"[{self.progress.done + 1}/{self.progress.total}] {label or run.key}"
        remaining = [r.item.kind for r in self.todo if r.index > run.index]
        clock = time.monotonic()

        def show(detail=""):
            left = self.progress.left(remaining, item.kind, time.monotonic() - clock)
            self.progress.show(head + (f": {detail}" if detail else "") + Progress.human(left))

        def watcher(text):
            show(watch(text) if watch else "")
        show()
        stdout_path, stderr_path = self.path(run, ".out"), self.path(run, ".err")
        hangs = []
        for attempt in range(1, HANG_ATTEMPTS + 1):
            seen = {}
            started, load = utc_now(), os.getloadavg()[0]
            returncode, seconds = run_tree(command, study.environment(pad, **(env or {})), timeout, stdout_path,
                                           stderr_path, watcher,
                                           on_timeout=lambda pid: seen.update(text=backtraces(pid)))
            if returncode is not None:
                break
            last = attempt == HANG_ATTEMPTS  # its output stays where the record expects it
            hangs.append(self.keep_hang(run, attempt, started, seconds, seen.get("text", ""),
                                        None if last else (stdout_path, stderr_path)))
            self.progress.show(f"{head}: hung after {timeout:g} s (attempt {attempt} of {HANG_ATTEMPTS}; "
                               f"backtraces in {hangs[-1]['backtraces']})"
                               + ("; running it again" if attempt < HANG_ATTEMPTS else ""), final=True)
            for place in hangs[-1]["waits"]:
                print(f"    a process waited in: {place}", flush=True)
        with open(stdout_path, errors="replace") as f:
            stdout = f.read()
        with open(stderr_path, errors="replace") as f:
            stderr = f.read()
        if returncode is None:
            status, result = "timeout", None
            reason = (f"hung {HANG_ATTEMPTS} times in a row (no end after {timeout:g} s each; "
                      "backtraces in the record's hangs)")
        else:
            status, reason, result = judge(returncode, stdout, stderr)
        replaced = built_hash(self.builds[item.build].prefix) != self.builds[item.build].content_hash
        if replaced:
            status, reason = "build-replaced", "the Open MPI build was replaced while it ran"
        files = {}
        for name, path in (("stdout", stdout_path), ("stderr", stderr_path)):
            if os.path.getsize(path):
                files[name] = os.path.relpath(path, self.out)
            else:
                os.remove(path)
                files[name] = None
        record = dict(item.fields, key=run.key, index=run.index, round=run.round, position=run.position,
                      build=item.build, build_hash=self.builds[item.build].content_hash, env_pad=pad,
                      started=started.isoformat(timespec="seconds"), seconds=round(seconds, 3),
                      load_before=load, machine={k: v for k, v in self.machine.items() if k != "changed_files"},
                      command=command, returncode=returncode,
                      status=status, reason=reason, result=result, **files,
                      outputs={name: os.path.relpath(path, self.out) for name, path in (outputs or {}).items()},
                      hangs=hangs)
        if status != "ok":
            record["stderr_tail"] = stderr[-4000:]
        with open(os.path.join(self.out, RECORDS), "a") as f:
            f.write(json.dumps(record) + "\n")
        self.records.append(record)
        self.todo = [r for r in self.todo if r.key != run.key]
        self.progress.done += 1
        self.progress.durations.setdefault(item.kind, []).append(seconds)
        self.progress.show(f"{head}: {status}{' (' + reason + ')' if reason else ''} in {seconds:.1f} s"
                           + Progress.human(self.progress.left(remaining)), final=True)
        human = next((line[2:] for line in stdout.splitlines() if line.startswith("# ")), "")
        if human and status in ("ok", "check-failed"):
            print("    " + human, flush=True)  # a bench program's line for people
        if status not in ("ok", "not-applicable") and stderr.strip():
            print("    stderr: " + stderr.strip()[-600:].replace("\n", "\n    "), flush=True)
        if replaced:
            self.check_build(item.build)
        return record


def study_meta(path, command, profile, use_builds):
    """The meta.json of a whole study (./run.sh): its command and profile,
    the machine, and each build of USE_BUILDS ({variant: hash}) as recorded
    in its build-info.json."""
    write_json(path, {"command": command, "profile": profile, "machine": study.machine(),
                      "builds": {variant: study.build_info(study.where(variant)) for variant in use_builds}})


def main():
    """python3 -m netpipe_runs.campaign check DIR...: exit 1, naming what is
    wrong, unless every DIR holds a complete record of good runs (run.sh
    checks each step so); meta FILE ...: a study's meta.json (run.sh writes
    it as each build is brought up)."""
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.campaign",
                                     description="The campaign toolkit's commands for run.sh and tests.")
    commands = parser.add_subparsers(dest="action", required=True)
    check = commands.add_parser("check", help="whether each DIR is a campaign that recorded every planned run, "
                                "and all ended well (exit 1 naming what is not)")
    check.add_argument("folders", nargs="+", metavar="DIR")
    meta = commands.add_parser("meta", help="write the meta.json of a study: command, profile, machine, builds")
    meta.add_argument("file")
    meta.add_argument("--command", dest="command_line", metavar="COMMAND", required=True,
                      help="the study's command line")
    meta.add_argument("--profile", required=True)
    meta.add_argument("--use-builds", required=True, type=build_hashes, metavar="VARIANT=HASH,...",
                      help="the builds the study runs in")
    args = parser.parse_args()
    if args.action == "meta":
        study_meta(args.file, args.command_line, args.profile, args.use_builds)
        return
    wrong = [problem for folder in args.folders for problem in record_problems(folder)]
    print("\n".join(wrong) or f"complete: {', '.join(args.folders)}")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
