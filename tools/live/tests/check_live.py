#!/usr/bin/env python3
"""Live counters read from outside running MPI jobs (docs/live.md):
the jobs are live_job.c in the "spc" Open MPI build with mpi_spc_live on, held
at known points; the readers are the programs spc-top, spc-record and
spc-exporter as built.  Every value asserted is predicted from the traffic
the job was told to make.

usage: check_live.py MODE --mpirun M --job J --top T --record R --exporter E --scratch DIR [...]
modes:
  exact       N sends, held: each rank reads exactly N (SEND, RECV, user bytes),
              then N + M at the next hold; with --unexpected K, first two
              holds without an exchange: under ob1 the queue level and
              watermark K, UNEXPECTED K from the first hold (counted as they
              arrive), under ucx UNEXPECTED 0 then K (counted as they are
              received), under cm no UNEXPECTED; with --keep the finalized
              values stay readable after the job and --clean removes them,
              without it the files are gone.  --btl, --threads, --pml.
  kill        kill -9 rank 1 at the first hold: its file reads dead with the N
              sends it made, rank 0's, ended by mpirun, keeps its N too,
              --clean removes the files, a new job in the same folder reads
              exactly.  --pml.
  files       the files are 0600 and the user's, within 128 KiB (32 threads;
              mpi_spc_live_threads 1000 makes them larger, 0 is named and
              the default kept, also from a parameters file), another user
              cannot read them
              (its spc-top shows only that there are files of others),
              mpi_spc_live_group opens them to that group; damaged files give
              an error naming them, not a crash, and the good job still shows.
  full        a live folder with no room for the file (a 16 KiB tmpfs, in a
              mount namespace): the job runs, counts exactly, each rank says
              once that live reading is off.
  record      spc-record over a job of known length: samples while it runs,
              the last equals the finalize report's CSV for every rank and
              counter; analysis/live_plot.py draws it.
  prometheus  Debian's prometheus scrapes spc-exporter: the query API returns
              exactly each rank's SEND of a held job, labelled by rank.
  nodes       two simulated nodes (tools/spc-simnodes), one exporter per
              node, one Prometheus: the sum over ranks of SEND is the job's
              total, and each series carries its node's name.
  pml         a job under --pml NAME (ucx or cm; --mpirun-arg gives the
              arguments that select it, as in exact and kill, where every
              spc-top read checks what the PML leaves out): spc-top, spc-exporter and
              spc-record leave out what that PML does not count, and read
              SEND and the user bytes exactly; first the control, the same
              job under ob1, whose readers show those counters."""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

N, M, SIZE = 30, 20, 100   # sends per phase, and bytes per message
# The segment files' name prefix, as spc/live.h defines it.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "spc", "include", "spc",
                       "live.h")) as header:
    PREFIX = re.search(r'^#define SPC_LIVE_FILE_PREFIX "([^"]+)"', header.read(), re.M).group(1)
FAILURES = []


def check(condition, message):
    print(("ok: " if condition else "FAIL: ") + message, flush=True)
    if not condition:
        FAILURES.append(message)
    return condition


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


# --- the job --------------------------------------------------------------------

class Job:
    """live_job under mpirun, in the background, holding at each phase."""

    def __init__(self, args, live_dir, phases, threads=1, unexpected=0, btl="self,vader", mca=(),
                 hold=True, spread_ms=0, mpirun_args=(), env=None, params_file=False, wrapper=()):
        self.hold = tempfile.mkdtemp(dir=args.scratch, prefix="hold-") if hold else None
        live = [("mpi_spc_live", "1"), ("mpi_spc_live_dir", live_dir)]
        if params_file:
            # the live parameters from a parameters file: libspc does not see
            # them when it loads, MPI_Init makes the segment
            path = os.path.join(args.scratch, f"params-{os.getpid()}-{time.monotonic_ns()}.conf")
            with open(path, "w") as f:
                f.writelines(f"{name} = {value}\n" for name, value in [*live, *mca])
            live, mca = [("mca_base_param_files", path)], ()
        command = [args.mpirun, "-np", "2", *mpirun_args, "--mca", "btl", btl, "--mca", "mpi_spc_attach", "all"]
        for name, value in live:
            command += ["--mca", name, value]
        for name, value in mca:
            command += ["--mca", name, value]
        command += [args.job, "--phases", ",".join(map(str, phases)), "--threads", str(threads),
                    "--size", str(SIZE), "--unexpected", str(unexpected), "--spread-ms", str(spread_ms)]
        if hold:
            command += ["--hold", self.hold]
        command = [*wrapper, *command]
        self.output = tempfile.NamedTemporaryFile(dir=args.scratch, prefix="job-", suffix=".log", delete=False)
        print("$ " + " ".join(command), flush=True)
        self.proc = subprocess.Popen(command, stdout=self.output, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)

    def log(self):
        with open(self.output.name, errors="replace") as f:
            return f.read()

    def wait_ready(self, phase, timeout=120):
        """The pids of both ranks once they wrote their ready files."""
        deadline = time.monotonic() + timeout
        paths = [os.path.join(self.hold, f"ready.{phase}.{rank}") for rank in (0, 1)]
        while time.monotonic() < deadline:
            if all(os.path.exists(p) and os.path.getsize(p) > 0 for p in paths):
                return [int(open(p).read()) for p in paths]
            if self.proc.poll() is not None:
                fail(f"the job ended (status {self.proc.returncode}) before phase {phase}:\n{self.log()}")
            time.sleep(0.02)
        self.end()
        fail(f"the job did not reach phase {phase} in {timeout} s:\n{self.log()}")

    def go(self, phase):
        open(os.path.join(self.hold, f"go.{phase}"), "w").close()

    def wait(self, timeout=120):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.end()
            fail(f"the job did not end in {timeout} s:\n{self.log()}")

    def end(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


# --- spc-top --once ------------------------------------------------------------

def top(args, live_dir, *options, user=None):
    command = [args.top, "--once", "--all", "--dir", live_dir, *options]
    if user:
        command = ["setpriv", "--reuid", user[0], "--regid", user[1], "--clear-groups"] + command
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    print(f"$ {' '.join(command)}  -> {result.returncode}\n{result.stdout}{result.stderr}", flush=True)
    return result


def parse_top(text):
    """{jobid: {"status", "node", "ranks": {rank: status}, "values": {counter: {rank: value}}}}"""
    jobs, job, columns = {}, None, []
    for line in text.splitlines():
        head = re.match(r"job (\S+) \((.*)\), (\d+) of (\d+) ranks on (\S+): (\S+)$", line)
        if head:
            job = jobs[head.group(1)] = {"status": head.group(6), "node": head.group(5), "ranks": {},
                                         "values": {}}
            continue
        if job is None:
            continue
        if line.startswith("  rank "):
            for rank, status in re.findall(r"rank (\d+): pid \d+ (\S+?)(?:;|$)", line):
                job["ranks"][int(rank)] = status
        elif line.startswith("counter "):
            columns = [int(r) for r in re.findall(r"rank (\d+)", line)]
        elif line.startswith("OMPI_SPC_"):
            fields = line.split()
            job["values"][fields[0]] = {rank: int(fields[2 + i]) for i, rank in enumerate(columns)}
            job["values"][fields[0]]["all"] = int(fields[2 + len(columns)])
    return jobs


def one_job(result):
    jobs = parse_top(result.stdout)
    if not check(len(jobs) == 1, f"spc-top shows one job (it shows {sorted(jobs)})"):
        fail("cannot go on")
    return next(iter(jobs.items()))


def expect_values(job, expected, what):
    for counter, per_rank in expected.items():
        for rank, value in per_rank.items():
            seen = job["values"].get("OMPI_SPC_" + counter, {}).get(rank)
            check(seen == value, f"{what}: rank {rank} {counter} = {value} (read {seen})")


def segment_files(live_dir):
    return sorted(f for f in os.listdir(live_dir) if f.startswith(PREFIX))


def fresh_dir(args, name):
    path = os.path.join(args.scratch, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    os.chmod(path, 0o755)
    return path


# --- modes ---------------------------------------------------------------------

def pml_of(args):
    """The job's PML: --pml, else ob1 (the prefix's default)."""
    return args.pml or "ob1"


def expect_pml(shown, seen, pml, what):
    """spc-top shows no row of what PML does not count and names exactly
    those; under ob1 every row and no such line.  This also tells that the
    job ran under PML: each PML leaves out a different set."""
    absent = NOT_COUNTED[pml]
    rows = [c for c in OB1_ONLY + ["UNEXPECTED"] if "OMPI_SPC_" + c in seen["values"]]
    note = re.search(r"^  \(not counted by this job's PML: (.*)\)$", shown.stdout, re.M)
    named = sorted(note.group(1).split()) if note else []
    check(sorted(set(OB1_ONLY + ["UNEXPECTED"]) - set(rows)) == sorted(absent)
          and named == sorted("OMPI_SPC_" + c for c in absent),
          f"{what}: under pml {pml} spc-top leaves out and names {absent} (rows {rows}, named {named})")


def unexpected_held(pml, k, p):
    """UNEXPECTED per rank held after phase p of [0, 0, N, M], K messages
    parked at rank 1 before phase 0, received at the start of phase 1 (None
    where the PML does not count it).  ob1 counts a message when it arrives
    with no receive posted: the K by the first hold.  ucx counts one when a
    receive is posted for a message UCX already holds: the K in phase 1,
    each received after waiting since before the first hold.  Rank 0
    receives nothing before phase 2, and no barrier runs (live_job.c), so
    the two quiet phases leave nothing to chance."""
    if pml == "cm":
        return None
    return {0: 0, 1: k if pml == "ob1" or p >= 1 else 0}


def exact(args):
    pml = pml_of(args)
    live = fresh_dir(args, f"exact-{args.btl}-{args.threads}")
    check(top(args, live).stdout.startswith("no live counters"), "control: an empty folder shows no job")
    t, k = args.threads, args.unexpected
    # With K unexpected messages, phase 0 makes only them (and the fence
    # behind them), so that the queue's watermark is exactly K while held,
    # and phase 1 only rank 1's receives of them, so that UNEXPECTED is
    # exact under ucx too once they are received.
    phases = [0, 0, N, M] if k else [N, M]
    mca = [("mpi_spc_live_keep", "1")] if args.keep else []
    job = Job(args, live, phases, threads=t, unexpected=k, btl="self," + args.btl, mca=mca,
              mpirun_args=args.mpirun_arg)
    jobid = None
    last = {}
    for p in range(len(phases)):
        job.wait_ready(p)
        shown = top(args, live)
        jobid, seen = one_job(shown)
        what = f"held after phase {p} {phases[:p + 1]}"
        if p == 0:
            check(seen["status"] == "running" and seen["ranks"] == {0: "running", 1: "running"},
                  f"job {jobid} and both ranks are running")
        expect_pml(shown, seen, pml, what)
        sent = t * sum(phases[:p + 1])                 # each way, by the phases
        extra_sent = k + 1 if k else 0                 # rank 0: K, then the fence
        extra_received = (1 if k else 0) + (k if p >= 1 else 0)  # rank 1: the fence, then the K
        expected = {
            "SEND": {0: sent + extra_sent, 1: sent}, "RECV": {0: sent, 1: sent + (k if p >= 1 else 0)},
            "BYTES_SENT_USER": {0: (sent + extra_sent) * SIZE, 1: sent * SIZE},
            "BYTES_RECEIVED_USER": {0: sent * SIZE, 1: (sent + extra_received) * SIZE}}
        if pml == "ob1":
            # levels and watermarks exist under ob1 only (the other PMLs
            # keep no queue of theirs: expect_pml checked they have no row)
            expected["UNEXPECTED_IN_QUEUE"] = {0: 0, 1: k if p == 0 else 0}
            if k and sent == 0:
                expected["MAX_UNEXPECTED_IN_QUEUE"] = {0: 0, 1: k}
        if k and sent == 0 and unexpected_held(pml, k, p) is not None:
            expected["UNEXPECTED"] = unexpected_held(pml, k, p)
        expect_values(seen, expected, what)
        if k and sent > 0:
            # the exchanges' blocking receives meet their messages waiting
            # or not as the ranks run: only that nothing goes back
            for counter in ("UNEXPECTED", "MAX_UNEXPECTED_IN_QUEUE"):
                if counter in last:
                    now = seen["values"].get("OMPI_SPC_" + counter, {}).get(1)
                    check(now is not None and now >= last[counter],
                          f"{what}: rank 1's {counter} does not go back ({last[counter]}, then {now})")
        last = {c[len("OMPI_SPC_"):]: v[1] for c, v in seen["values"].items()}
        job.go(p)
    check(job.wait() == 0, "the job ends cleanly")
    final_sends = {0: t * sum(phases) + (k + 1 if k else 0), 1: t * sum(phases)}
    if args.keep:
        shown = top(args, live)
        _, seen = one_job(shown)
        check(seen["ranks"] == {0: "finalized", 1: "finalized"}, "kept files read as finalized")
        expect_pml(shown, seen, pml, "finalized")
        expect_values(seen, {"SEND": final_sends}, "finalized")
        if k and "UNEXPECTED" in last:
            # MPI_Finalize receives nothing (a PMIx fence, no barrier):
            # rank 1's UNEXPECTED is that of the last hold
            expect_values(seen, {"UNEXPECTED": {1: last["UNEXPECTED"]}}, "finalized, as at the last hold")
        clean = subprocess.run([args.top, "--clean", "--dir", live], capture_output=True, text=True)
        print(clean.stdout + clean.stderr)
        check(clean.returncode == 0 and "2 files removed" in clean.stdout and segment_files(live) == [],
              "--clean removes the finalized files of ended processes")
    else:
        check(segment_files(live) == [], f"no file left after MPI_Finalize ({segment_files(live)})")


def kill(args):
    pml = pml_of(args)
    live = fresh_dir(args, "kill")
    job = Job(args, live, [N, M], btl="self,vader", mpirun_args=args.mpirun_arg)
    pids = job.wait_ready(0)
    os.kill(pids[1], signal.SIGKILL)
    status = job.wait()
    check(status != 0, f"mpirun reports the killed rank (status {status})")
    shown = top(args, live)
    jobid, seen = one_job(shown)
    check(seen["ranks"].get(1) == "dead" and seen["status"] == "dead",
          f"the killed rank reads dead, not running ({seen['ranks']})")
    # rank 0, ended by mpirun after rank 1 died, loses nothing of phase 0 either
    held = {"SEND": {0: N, 1: N}, "RECV": {0: N, 1: N}, "BYTES_SENT_USER": {0: N * SIZE, 1: N * SIZE},
            "BYTES_RECEIVED_USER": {0: N * SIZE, 1: N * SIZE}}
    expect_values(seen, held, f"what both ranks counted, under pml {pml}")
    expect_pml(shown, seen, pml, "the dead job")
    clean = subprocess.run([args.top, "--clean", "--dir", live], capture_output=True, text=True)
    print(clean.stdout + clean.stderr)
    check(clean.returncode == 0 and "2 files removed" in clean.stdout and segment_files(live) == [],
          "--clean removes both dead files")
    job = Job(args, live, [N], btl="self,vader", mpirun_args=args.mpirun_arg)
    job.wait_ready(0)
    shown = top(args, live)
    new_id, seen = one_job(shown)
    check(seen["ranks"] == {0: "running", 1: "running"}, "a new job in the same folder runs")
    expect_values(seen, {"SEND": {0: N, 1: N}, "BYTES_RECEIVED_USER": {0: N * SIZE, 1: N * SIZE}}, "the new job")
    expect_pml(shown, seen, pml, "the new job")
    job.go(0)
    check(job.wait() == 0, "the new job ends cleanly")


def files(args):
    # Another user must reach the files and run spc-top wherever this build
    # is (a clone under /root is closed to others): both go to /tmp.
    public = tempfile.mkdtemp(prefix="spc-live-files-")
    try:
        os.chmod(public, 0o755)
        shutil.copy(args.top, os.path.join(public, "spc-top"))
        args.top = os.path.join(public, "spc-top")
        args.scratch = public
        files_in(args)
    finally:
        shutil.rmtree(public, ignore_errors=True)


def files_in(args):
    live = fresh_dir(args, "files")
    job = Job(args, live, [N], mca=[("mpi_spc_live_keep", "1")], hold=False)
    check(job.wait() == 0, "a job with mpi_spc_live_keep ends cleanly")
    names = segment_files(live)
    check(len(names) == 2, f"two kept files ({names})")
    for name in names:
        st = os.stat(os.path.join(live, name))
        check(stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid(),
              f"{name} is mode 0600 and the user's ({oct(stat.S_IMODE(st.st_mode))}, uid {st.st_uid})")
    sizes = [os.path.getsize(os.path.join(live, name)) for name in names]
    check(all(64 * 1024 < size <= 128 * 1024 for size in sizes),
          f"a segment holds 32 threads by default, within 128 KiB ({sizes} bytes)")
    mine = top(args, live)
    check(mine.returncode == 0 and len(parse_top(mine.stdout)) == 1, "control: its user reads it")
    # mpi_spc_live_threads: more thread blocks, or a bad value named, the default kept
    # (from a parameters file the segment is made at MPI_Init, another path)
    for threads, by_file, want in (("1000", False, "1000 blocks"), ("0", False, "the default, and one line saying why"),
                                   ("0", True, "from a parameters file, the default, and one line saying why")):
        asked = fresh_dir(args, "files-threads-" + threads + ("-file" if by_file else ""))
        job = Job(args, asked, [N], mca=[("mpi_spc_live_keep", "1"), ("mpi_spc_live_threads", threads)],
                  hold=False, params_file=by_file)
        check(job.wait() == 0, f"a job with mpi_spc_live_threads {threads} ends cleanly")
        sizes = [os.path.getsize(os.path.join(asked, name)) for name in segment_files(asked)]
        said = job.log().count("mpi_spc_live_threads must be 1 to 65536")
        if threads == "0":
            good = len(sizes) == 2 and all(size <= 128 * 1024 for size in sizes) and said == 2
        else:
            good = len(sizes) == 2 and all(size > 1000 * 1024 for size in sizes) and said == 0
        shown = top(args, asked)
        check(good and shown.returncode == 0 and len(parse_top(shown.stdout)) == 1,
              f"mpi_spc_live_threads {threads}: {want} ({sizes} bytes, {said} lines), spc-top reads them")
    other = top(args, live, user=("nobody", "nogroup"))
    check(other.returncode == 0 and "2 live files of other users, not readable by this user, not shown"
          in other.stdout and "OMPI_SPC_SEND" not in other.stdout,
          "another user cannot read them: its spc-top counts them as others', with no error")
    # opened to a group: that group reads them
    grouped = fresh_dir(args, "files-group")
    job = Job(args, grouped, [N], mca=[("mpi_spc_live_keep", "1"), ("mpi_spc_live_group", "nogroup")],
              hold=False)
    check(job.wait() == 0, "a job with mpi_spc_live_group ends cleanly")
    for name in segment_files(grouped):
        st = os.stat(os.path.join(grouped, name))
        check(stat.S_IMODE(st.st_mode) == 0o640 and st.st_gid == int(
            subprocess.run(["getent", "group", "nogroup"], capture_output=True, text=True).stdout.split(":")[2]),
            f"{name} is mode 0640 and group nogroup's")
    member = top(args, grouped, user=("nobody", "nogroup"))
    check(member.returncode == 0 and "OMPI_SPC_SEND" in member.stdout,
          "a member of the group reads them (a site exporter's account)")
    # damaged files beside the good ones
    good = os.path.join(live, names[0])
    with open(good, "rb") as f:
        data = f.read()
    garbage, truncated = os.path.join(live, PREFIX + "garbage"), os.path.join(live, PREFIX + "truncated")
    damaged = {garbage: bytes((i * 7919) % 251 for i in range(8192)), truncated: data[:len(data) // 3]}
    for path, content in damaged.items():
        with open(path, "wb") as f:
            f.write(content)
    result = top(args, live)
    check(result.returncode == 1, f"spc-top exits 1 for unreadable files, not a crash ({result.returncode})")
    check(f"{garbage}: not a live counter segment" in result.stderr, "the garbage file is named, with the reason")
    check(f"{truncated}: cut short or damaged" in result.stderr, "the truncated file is named, with the reason")
    check(len(parse_top(result.stdout)) == 1, "the good job is still shown")


def full(args):
    """A live folder with no room for the file (a small /dev/shm): the job
    runs, counts exactly, and each rank says once that live reading is off.
    The folder is a 16 KiB tmpfs mounted in a mount namespace of the job's
    own (unshare: as root, or in a user namespace otherwise)."""
    folder = fresh_dir(args, "full")
    dump = os.path.join(args.scratch, "full-dump.csv")
    if os.path.exists(dump):
        os.remove(dump)
    namespace = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--mount"]
    mounted = [*namespace, "--", "sh", "-c", 'mount -t tmpfs -o size=16k tmpfs "$0" && exec "$@"', folder]
    probe = subprocess.run([*mounted, "df", "--output=size", folder], capture_output=True, text=True)
    check(probe.returncode == 0 and probe.stdout.split()[-1] == "16",
          f"control: a 16 KiB file system is mounted on the folder ({probe.stdout.strip()} {probe.stderr.strip()})")
    job = Job(args, folder, [N], hold=False, wrapper=mounted,
              mca=[("mpi_spc_dump_enabled", "true"), ("mpi_spc_dump_file", dump)])
    status = job.wait()
    log = job.log()
    print(log)
    check(status == 0 and "Bus error" not in log, f"the job ends cleanly in a full folder (status {status})")
    said = log.count("live reading is off")
    check(said == 2 and "No space left on device" in log,
          f"each rank says once that there is no room and live reading is off ({said} lines)")
    report = {(int(r["rank"]), r["counter"]): int(r["value"]) for r in read_csv(dump)} if os.path.exists(dump) else {}
    sent = {rank: report.get((rank, "OMPI_SPC_SEND")) for rank in (0, 1)}
    check(sent == {0: N, 1: N}, f"the ranks counted exactly all the same, {N} sends each ({sent})")


def read_csv(path):
    import csv
    with open(path) as f:
        return list(csv.DictReader(f))


# What each PML does not count (ompi_spc_pmls.def, restated here on purpose).
OB1_ONLY = ["OUT_OF_SEQUENCE", "MATCH_TIME", "OOS_MATCH_TIME", "UNEXPECTED_IN_QUEUE", "OOS_IN_QUEUE",
            "MAX_UNEXPECTED_IN_QUEUE", "MAX_OOS_IN_QUEUE", "BYTES_PUT", "BYTES_GET"]
NOT_COUNTED = {"ob1": [], "ucx": OB1_ONLY, "cm": OB1_ONLY + ["UNEXPECTED"]}


def pml(args):
    for name, mpirun_args in (("ob1", ["--mca", "pml", "ob1"]), (args.pml, args.mpirun_arg)):
        absent = NOT_COUNTED[name] or OB1_ONLY  # under ob1, the control: those are shown
        live = fresh_dir(args, "pml-" + name)
        out = os.path.join(args.scratch, f"pml-{name}.csv")
        if os.path.exists(out):
            os.remove(out)
        exporter = Exporter(args, live)
        job = Job(args, live, [N], mpirun_args=mpirun_args)
        recorder = None
        try:
            job.wait_ready(0)
            # started on the held job: under 5.0.7, spc-record started before
            # its job sometimes never found it (not yet understood)
            recorder = subprocess.Popen([args.record, "--dir", live, "--interval", "100", "--out", out,
                                         "--wait", "60"], stderr=subprocess.PIPE, text=True)
            shown = top(args, live)
            _, seen = one_job(shown)
            expect_values(seen, {"SEND": {0: N, 1: N}, "BYTES_SENT_USER": {0: N * SIZE, 1: N * SIZE},
                                 "BYTES_RECEIVED_USER": {0: N * SIZE, 1: N * SIZE}}, f"held under pml {name}")
            rows = [c for c in absent if "OMPI_SPC_" + c in seen["values"]]
            note = re.search(r"^  \(not counted by this job's PML: (.*)\)$", shown.stdout, re.M)
            metrics = http_get(exporter.url)
            series = [c for c in absent
                      if re.search(rf"^ompi_spc_{c.lower()}(_total|_seconds_total)?{{", metrics, re.M)]
            check(re.search(r"^ompi_spc_send_total\{.*\} " + str(N) + "$", metrics, re.M) is not None,
                  f"under pml {name} the exporter serves each rank's SEND, {N}")
            if name == "ob1":
                check(len(rows) == len(absent) and note is None,
                      f"control: spc-top --all shows {absent} under ob1, and no line of what it does not count")
                check(len(series) == len(absent), f"control: the exporter serves {absent} under ob1 ({series})")
            else:
                named = note.group(1).split() if note else []
                check(not rows and sorted(named) == sorted("OMPI_SPC_" + c for c in absent),
                      f"spc-top leaves out {absent} under pml {name} and names them (rows {rows}, named {named})")
                check(not series, f"the exporter serves no series of them ({series})")
            job.go(0)
            check(job.wait() == 0, f"the job under pml {name} ends cleanly")
            _, err = recorder.communicate(timeout=60)
            recorded = {r["counter"] for r in read_csv(out)} if os.path.exists(out) else set()
            check(recorder.returncode == 0 and "OMPI_SPC_SEND" in recorded, f"spc-record recorded it ({err.strip()})")
            left_out = [c for c in absent if "OMPI_SPC_" + c in recorded]
            check(left_out == (absent if name == "ob1" else []),
                  f"spc-record's rows of {absent} under pml {name}: {left_out}")
        finally:
            job.end()
            exporter.stop()
            if recorder is not None and recorder.poll() is None:
                recorder.kill()


def record(args):
    live = fresh_dir(args, "record")
    out = os.path.join(args.scratch, "record.csv")
    dump = os.path.join(args.scratch, "record-dump.csv")
    for path in (out, dump):
        if os.path.exists(path):
            os.remove(path)
    recorder = subprocess.Popen([args.record, "--dir", live, "--interval", "100", "--out", out, "--wait", "60"],
                                stderr=subprocess.PIPE, text=True)
    job = Job(args, live, [200], hold=False, spread_ms=1500,
              mca=[("mpi_spc_dump_enabled", "true"), ("mpi_spc_dump_file", dump)])
    check(job.wait() == 0, "the recorded job ends cleanly")
    _, err = recorder.communicate(timeout=60)
    print(err)
    check(recorder.returncode == 0, f"spc-record ends with the job, status 0 ({recorder.returncode})")
    rows = read_csv(out)
    samples = sorted({int(r["sample"]) for r in rows})
    check(len(samples) >= 5, f"samples every 100 ms over a 1.5 s job ({len(samples)})")
    # each rank's last sample: a rank that finalized a tick before the other
    # has no row in the later samples
    last_of = {}
    for r in rows:
        last_of[int(r["rank"])] = max(last_of.get(int(r["rank"]), -1), int(r["sample"]))
    last = {(int(r["rank"]), r["counter"]): int(r["value"]) for r in rows
            if int(r["sample"]) == last_of[int(r["rank"])]}
    report = {(int(r["rank"]), r["counter"]): int(r["value"]) for r in read_csv(dump)}
    check(len(report) == len(last) and len(report) > 200,
          f"the last sample has every rank and counter of the report ({len(last)} and {len(report)})")
    differ = [f"{key}: {last.get(key)} != {value}" for key, value in report.items() if last.get(key) != value]
    check(not differ, "the last sample equals the finalize report" + ("" if not differ else f": {differ[:5]}"))
    sends = [int(r["value"]) for r in rows if r["rank"] == "0" and r["counter"] == "OMPI_SPC_SEND"]
    check(sends == sorted(sends) and any(0 < s < 200 for s in sends) and sends[-1] == 200,
          f"rank 0's SEND grows while it is recorded, to 200 ({sends[:3]} ... {sends[-3:]})")
    # Each rank's time since MPI_Init: read by the clock of wall_time, so
    # wall_time less it is the rank's MPI_Init in every sample but the last,
    # which holds the time to MPI_Finalize, the largest (give or take a read
    # that raced its clock). A rank that finalized between spc-record's look
    # at its state and its read is read no more: no time repeats the last.
    since, inits = {}, {}
    for r in rows:
        rank, sample, value = int(r["rank"]), int(r["sample"]), float(r["since_mpi_init"])
        since.setdefault(rank, {})[sample] = value
        if sample != last_of[rank]:
            inits.setdefault(rank, []).append(float(r["wall_time"]) - value)
    repeated = {rank: [s for s, v in times.items() if v == times[last_of[rank]] and s != last_of[rank]]
                for rank, times in since.items()}
    check(not any(repeated.values()), f"spc-record reads a finalized rank once (the last time again in {repeated})")
    spread = {rank: max(t) - min(t) for rank, t in inits.items()}
    check(sorted(inits) == sorted(last_of) and all(s < 1e-5 for s in spread.values())
          and all(min(v.values()) > 0 and v[last_of[rank]] >= max(v.values()) - 1e-3 for rank, v in since.items()),
          f"spc-record's since_mpi_init: wall_time less it is each rank's MPI_Init in every sample (spread "
          f"{spread} s), the last the largest ({ {rank: v[last_of[rank]] for rank, v in since.items()} } s)")
    plots = os.path.join(args.scratch, "record-plots")
    shutil.rmtree(plots, ignore_errors=True)
    plot = subprocess.run(["/usr/bin/python3", args.plot, out, "--out", plots], capture_output=True, text=True)
    print(plot.stdout + plot.stderr)
    check(plot.returncode == 0 and all(os.path.getsize(os.path.join(plots, p)) > 10000
                                       for p in ("rates.png", "levels.png")),
          "analysis/live_plot.py draws rates.png and levels.png")


# --- Prometheus ----------------------------------------------------------------

def free_port(host="127.0.0.1"):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


class Exporter:
    def __init__(self, args, live_dir, listen="127.0.0.1:0", wrap=()):
        self.proc = subprocess.Popen([*wrap, args.exporter, "--listen", listen, "--dir", live_dir],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        line = self.proc.stdout.readline()
        print(line.strip(), flush=True)
        match = re.search(r"serving (http://\S+/metrics)", line)
        if not match:
            self.stop()
            fail(f"spc-exporter did not start: {line}{self.proc.stderr.read()}")
        self.url = match.group(1)
        self.address = self.url.split("/")[2]

    def stop(self):
        stop_group(self.proc, 10)


def stop_group(proc, grace):
    """Ends the process group PROC leads: SIGTERM, then SIGKILL after GRACE seconds."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class Prometheus:
    """Debian's prometheus on a free loopback port, scraping TARGETS every second."""

    def __init__(self, args, targets):
        self.folder = tempfile.mkdtemp(dir=args.scratch, prefix="prometheus-")
        self.start("scrape_configs:\n  - job_name: ompi-spc\n    static_configs:\n"
                   f"      - targets: {json.dumps(targets)}\n")

    def start(self, scrape_configs):
        """Runs it in self.folder with SCRAPE_CONFIGS (YAML), scraping every
        second; returns once it is ready."""
        binary = shutil.which("prometheus")
        if binary is None:
            fail("Debian's prometheus is not installed (install_deps.sh installs it): this test needs it")
        config = os.path.join(self.folder, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n" + scrape_configs)
        self.port = free_port()
        self.log = open(os.path.join(self.folder, "prometheus.log"), "w")
        command = [binary, f"--config.file={config}", f"--storage.tsdb.path={self.folder}/data",
                   f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"]
        print("$ " + " ".join(command), flush=True)
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if "Ready" in http_get(self.base + "/-/ready", timeout=1):
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        fail(f"prometheus did not become ready:\n{open(self.log.name).read()}")

    def query(self, expression):
        answer = json.loads(http_get(f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": expression})))
        if answer.get("status") != "success":
            fail(f"prometheus query {expression} failed: {answer}")
        return answer["data"]["result"]

    def wait_for(self, expression, ready, timeout=30):
        """The result of EXPRESSION once READY(result) holds (scrapes take a
        second or two), else the last result."""
        deadline = time.monotonic() + timeout
        result = []
        while time.monotonic() < deadline:
            result = self.query(expression)
            if ready(result):
                break
            time.sleep(0.5)
        print(f"prometheus: {expression} -> {json.dumps(result)}", flush=True)
        return result

    def stop(self):
        stop_group(self.proc, 20)


def by_label(result, label):
    return {series["metric"].get(label): float(series["value"][1]) for series in result}


def prometheus(args):
    live = fresh_dir(args, "prometheus")
    exporter = Exporter(args, live)
    server = None
    job = None
    try:
        text = http_get(exporter.url)
        check("ompi_spc_exporter_files_unreadable 0" in text and "ompi_spc_send_total{" not in text,
              "control: with no job the exporter serves no counter")
        launched = time.time()
        job = Job(args, live, [N, M], btl="self,vader")
        job.wait_ready(0)
        shown = top(args, live)
        jobid, _ = one_job(shown)
        share = re.search(r"^  time in MPI since MPI_Init \(MPI_TIME\): min (\d+)% \(rank \d\), mean \d+%, "
                          r"max (\d+)% \(rank \d\)$", shown.stdout, re.M)
        check(share is not None and 0 <= int(share.group(1)) <= int(share.group(2)) <= 100,
              "spc-top --once shows each rank's share of its time since MPI_Init inside MPI, at most 100% "
              "with one thread a rank")
        text = http_get(exporter.url)
        inits = {m.group(1): float(m.group(2)) for m in re.finditer(
            rf'^ompi_spc_mpi_init_timestamp_seconds{{jobid="{jobid}",step="",rank="(\d)",[^}}]*}} (\S+)$', text, re.M)}
        check(sorted(inits) == ["0", "1"] and all(launched <= t <= time.time() for t in inits.values()),
              f"each rank's MPI_Init as a Unix time, after the job was started and before now ({inits})")
        check("# HELP ompi_spc_send_total The number of times MPI_Send was called. (calls)\n"
              "# TYPE ompi_spc_send_total counter\n" in text, "HELP from the catalogue, TYPE counter")
        check(re.search(r'^# TYPE ompi_spc_match_time_seconds_total counter$', text, re.M) is not None,
              "timers in seconds, as counters")
        check(re.search(r'^# TYPE ompi_spc_unexpected_in_queue gauge$', text, re.M) is not None
              and re.search(r'^# TYPE ompi_spc_max_unexpected_in_queue gauge$', text, re.M) is not None,
              "levels and watermarks as gauges")
        node = socket.gethostname()
        check(f'ompi_spc_send_total{{jobid="{jobid}",step="",rank="0",local_rank="0",node="{node}",'
              f'mpi_jobid="{jobid}"}} {N}\n' in text,
              "the exporter's own text has rank 0's SEND, labelled with mpirun's job id (no Slurm), no step, "
              "its rank and local rank, the node")
        server = Prometheus(args, [exporter.address])
        want = {"0": float(N), "1": float(N)}
        result = server.wait_for(f'ompi_spc_send_total{{jobid="{jobid}"}}', lambda r: by_label(r, "rank") == want)
        check(by_label(result, "rank") == want, f"Prometheus has SEND = {N} for rank 0 and rank 1")
        check(all(s["metric"].get("node") == node and s["metric"].get("job") == "ompi-spc" for s in result),
              "labelled with the node, beside Prometheus's own job label")
        result = server.wait_for(f'ompi_spc_bytes_sent_user_total{{jobid="{jobid}"}}',
                                 lambda r: len(r) == 2)
        check(by_label(result, "rank") == {"0": float(N * SIZE), "1": float(N * SIZE)},
              "and the user bytes of each rank")
        share = (f'sum by (jobid) (ompi_spc_mpi_time_seconds_total{{jobid="{jobid}"}}) / '
                 f'sum by (jobid) (time() - ompi_spc_mpi_init_timestamp_seconds{{jobid="{jobid}"}})')
        result = server.wait_for(share, lambda r: len(r) == 1)
        value = float(result[0]["value"][1]) if len(result) == 1 else -1
        check(0 < value <= 1, f"one PromQL expression gives the job's share of time in MPI since MPI_Init ({value})")
        job.go(0)
        job.wait_ready(1)
        want = {"0": float(N + M), "1": float(N + M)}
        result = server.wait_for(f'ompi_spc_send_total{{jobid="{jobid}"}}', lambda r: by_label(r, "rank") == want)
        check(by_label(result, "rank") == want, f"after M more: SEND = {N + M} per rank")
        job.go(1)
        check(job.wait() == 0, "the job ends cleanly")
    finally:
        if job:
            job.end()
        if server:
            server.stop()
        exporter.stop()


def nodes(args):
    """Two simulated nodes; see the module's doc."""
    simnodes = args.simnodes
    folder = os.path.join(args.scratch, "simnodes")
    live = fresh_dir(args, "nodes")
    if os.path.exists(os.path.join(folder, "nodes")):  # left by a killed run
        subprocess.run([simnodes, "down", folder], capture_output=True)
    # A tag and subnet of this run's own, apart from a user's default nodes
    # and from another test run on the same machine.
    tag, net = f"t{os.getpid() & 0xffff:04x}", f"10.77.{10 + os.getpid() % 240}"
    up = subprocess.run([simnodes, "up", "2", folder, "--tag", tag, "--net", net],
                        capture_output=True, text=True)
    print(up.stdout + up.stderr)
    if up.returncode != 0:
        fail(f"spc-simnodes up failed (it needs root): {up.stderr}")
    exporters, server, job = [], None, None
    try:
        port = 9466
        with open(os.path.join(folder, "nodes")) as f:
            addresses = [line.split()[1] for line in f]
        for k, address in enumerate(addresses, 1):
            wrap = [simnodes, "run", folder, str(k)]
            exporters.append(Exporter(args, live, listen=f"{address}:{port}", wrap=wrap))
        server = Prometheus(args, [e.address for e in exporters])
        prefix = os.path.dirname(os.path.dirname(args.mpirun))
        with open(os.path.join(folder, "mpirun-args")) as f:
            placement = f.read().split()
        job = Job(args, live, [N], btl="self,tcp", mpirun_args=placement + ["--prefix", prefix])
        job.wait_ready(0)
        total = server.wait_for('sum(ompi_spc_send_total)', lambda r: r and float(r[0]["value"][1]) == 2 * N)
        check(total and float(total[0]["value"][1]) == 2 * N, f"the sum over ranks of SEND is the job's {2 * N}")
        series = server.query("ompi_spc_send_total")
        placed = {s["metric"]["rank"]: (s["metric"]["node"], s["metric"]["instance"]) for s in series}
        check(placed == {"0": ("n1", exporters[0].address), "1": ("n2", exporters[1].address)},
              f"each rank's series carries its node's name, from that node's exporter ({placed})")
        job.go(0)
        check(job.wait() == 0, "the two-node job ends cleanly")
    finally:
        if job:
            job.end()
        if server:
            server.stop()
        for exporter in exporters:
            exporter.stop()
        subprocess.run([simnodes, "down", folder], capture_output=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["exact", "kill", "files", "full", "record", "prometheus", "nodes", "pml"])
    for name in ("mpirun", "job", "top", "record", "exporter", "scratch"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--plot", help="analysis/live_plot.py (record)")
    parser.add_argument("--simnodes", help="tools/spc-simnodes (nodes)")
    parser.add_argument("--btl", default="vader")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--unexpected", type=int, default=0)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--pml", choices=["ucx", "cm"],
                        help="the PML the job runs under (pml, exact, kill; else ob1, the default)")
    parser.add_argument("--mpirun-arg", action="append", default=[],
                        help="an mpirun argument that selects --pml (repeat it)")
    args = parser.parse_args()
    if bool(args.pml) != bool(args.mpirun_arg) or (args.pml and args.mode not in ("pml", "exact", "kill")):
        parser.error("--pml and --mpirun-arg go together, in modes pml, exact and kill")
    os.makedirs(args.scratch, exist_ok=True)
    globals()[args.mode](args)
    print(f"{len(FAILURES)} failed" if FAILURES else "all checks passed", flush=True)
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
