#!/usr/bin/env python3
"""NetPIPE latency and bandwidth sweeps of the overhead study's configurations
(netpipe_runs/study.py), interleaved round by round, every raw output kept.

Each round runs every chosen configuration once per transport and sweep, in
an order shuffled per round from a recorded seed, so slow drift of this noisy
machine falls on all configurations alike and each configuration can be
paired with the baseline run of its own round.  NetPIPE 3.7.2 (Debian's
source package netpipe 3.7.2-8, checked against its .dsc) is compiled against
each Open MPI build and cached by the build's content hash.

  latency sweep    1 B to 64 KiB   (NPmpi -l 1 -u 65536 -p 0 -n REPEATS)
  bandwidth sweep  64 KiB to 8 MiB (fewer repeats: one 8 MiB round trip is ms)

Results in --out: raw/ (NetPIPE's output file, stdout and stderr of every
run), manifest.json (one entry per run: configuration, build and content
hash, counters attached, transport, round, start time, CPU, command, status,
and the stderr of a failed run), meta.json (the settings, the seed, each
round's order, the builds and study.machine()).  A failed or timed-out run is
recorded and the sweep goes on, and so is a run whose Open MPI build was
rebuilt under the sweep (it is not run: builds are never mixed).
/usr/bin/python3 analysis/netpipe_report.py DIR makes the plots and tables.

Before the runs: study.build() brings each needed Open MPI build up to date
(seconds when current; a rebuild of about 7 to 16 minutes when files it is
made of changed), NetPIPE is compiled once per build, and each configuration
with counters attached runs a short check with mpi_spc_dump_enabled
(raw/check-*.txt) that warns when SEND, RECV or MATCH_TIME, where attached,
did not count.

The baseline is always run, whatever --configurations says: every overhead
is a ratio to the baseline run of the same round."""
import argparse
import datetime
import fcntl
import glob
import hashlib
import json
import os
import random
import re
import selectors
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import study  # noqa: E402

CACHE = os.environ.get("SPC_CACHE", "/var/cache/ompi-spc")
NETPIPE_PACKAGE = "netpipe=3.7.2-8"
NETPIPE_ORIG = "netpipe_3.7.2.orig.tar.gz"
# NetPIPE's makefile compiles `mpi` with $(MPICC), not $(CC): `make mpi CC=...`
# would silently use whatever mpicc is first on PATH (Debian's Open MPI).
NETPIPE_RECIPE = "make mpi MPICC={mpicc}"

# Repeats per size differ by transport: a 1-byte round trip takes ~0.75 us on
# vader and ~10 us on tcp here.  Sizes are NetPIPE's own sequence (two per
# octave with -p 0).  The timeout is per mpirun, 20 times the slowest run seen
# (full: 15 s, a tcp bandwidth sweep).  Measured on a quiet machine: short
# about 1.2 minutes, full about 2 minutes per round.
PROFILES = {
    "short": {"rounds": 3, "timeout": 120, "sweeps": {
        "latency": {"low": 1, "high": 65536, "repeats": {"vader": 3000, "tcp": 500}},
        "bandwidth": {"low": 65536, "high": 8388608, "repeats": {"vader": 20, "tcp": 10}}}},
    "full": {"rounds": 10, "timeout": 300, "sweeps": {
        "latency": {"low": 1, "high": 65536, "repeats": {"vader": 10000, "tcp": 2000}},
        "bandwidth": {"low": 65536, "high": 8388608, "repeats": {"vader": 100, "tcp": 50}}}},
}

SIZE_LINE = re.compile(rb"(\d+):\s+(\d+) bytes\s+(\d+) times -->")


def say(text):
    print(text, flush=True)


# --- NetPIPE, built against one Open MPI build --------------------------------

def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def netpipe_source():
    """The orig tarball, fetched and checked against its .dsc by
    ompi_patches/fetch_debian_source.sh (the Debian diff tarball is not used:
    it is missing on the mirror, and NetPIPE builds from the orig alone)."""
    src = os.path.join(CACHE, "netpipe", "src")
    package, version = NETPIPE_PACKAGE.split("=")
    fetch = [os.path.join(study.REPO, "ompi_patches", "fetch_debian_source.sh"), package, version,
             NETPIPE_ORIG, src]
    if subprocess.run(fetch).returncode != 0:
        sys.exit("netpipe_sweep.py: no verified NetPIPE source (see the message above)")
    orig = os.path.join(src, NETPIPE_ORIG)
    return orig, sha256(orig)


def netpipe_binary(prefix):
    """NPmpi compiled by PREFIX's mpicc, cached per build content hash."""
    info = study.build_info(prefix)
    folder = os.path.join(CACHE, "netpipe", f"{info['variant']}-{info['content_hash']}")
    binary, stamp = os.path.join(folder, "NPmpi"), os.path.join(folder, ".built")
    recipe = f"{NETPIPE_PACKAGE} orig; " + NETPIPE_RECIPE.format(mpicc=os.path.join(prefix, "bin", "mpicc"))

    def current():
        if not os.path.exists(binary) or not os.path.exists(stamp):
            return False
        with open(stamp) as f:
            return f.read().strip() == recipe

    if current():
        return binary
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    with open(os.path.join(CACHE, "netpipe", ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one fetch or build at a time
        if current():
            return binary
        orig, digest = netpipe_source()
        say(f"== building NetPIPE against {prefix} into {folder}")
        subprocess.run(["rm", "-rf", folder], check=True)
        os.makedirs(folder)
        subprocess.run(["tar", "-xzf", orig, "-C", folder], check=True)
        tree = os.path.join(folder, "NetPIPE-3.7.2")
        with open(os.path.join(folder, "build.log"), "w") as log:
            made = subprocess.run(NETPIPE_RECIPE.format(mpicc=os.path.join(prefix, "bin", "mpicc")).split(),
                                  cwd=tree, stdout=log, stderr=subprocess.STDOUT)
        if made.returncode != 0:
            sys.exit(f"netpipe_sweep.py: building NetPIPE failed; see {folder}/build.log")
        os.rename(os.path.join(tree, "NPmpi"), binary)
        subprocess.run(["rm", "-rf", tree], check=True)
        # The wrapper sets a RUNPATH; make sure it names this build's libmpi.
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, env=env).stdout
        libmpi = next((line.strip() for line in ldd.splitlines() if "libmpi.so" in line), "")
        if os.path.join(prefix, "lib") not in libmpi:
            sys.exit(f"netpipe_sweep.py: {binary} does not load libmpi from {prefix}/lib: '{libmpi}'")
        with open(os.path.join(folder, "netpipe-build.json"), "w") as f:
            json.dump({"source": NETPIPE_PACKAGE, "orig": NETPIPE_ORIG, "orig_sha256": digest,
                       "recipe": recipe, "openmpi_build": info, "libmpi": libmpi}, f, indent=2)
        with open(stamp, "w") as f:
            f.write(recipe + "\n")
        return binary


def build_hash(prefix):
    try:
        with open(os.path.join(prefix, ".built")) as f:
            return f.read().strip()
    except OSError:
        return None


def netpipe_sizes(low, high):
    """The message sizes NPmpi visits with -p 0 (its main loop, src/netpipe.c
    lines 533-643 of 3.7.2): to check a run is complete."""
    sizes, length = [], low
    inc, nq = (low // 2 if low > 1 else 1), (1 if low > 1 else 0)
    while length <= high:
        if nq > 2 and nq % 2:
            inc += inc
        sizes.append(length)
        length, nq = length + inc, nq + 1
    return sizes


# --- one run ------------------------------------------------------------------

def descendants(pid):
    """Process ids below PID, from /proc, so a hung run's ranks are ended by id."""
    children = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.split("/")[2]))
        except (OSError, IndexError, ValueError):
            pass
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def end(proc):
    """SIGTERM lets mpirun take its ranks down and reap them; SIGKILL, by id,
    whatever is still alive 10 s later."""
    below = descendants(proc.pid)
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    for pid in [proc.pid] + below:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def run_streaming(command, env, timeout, stdout_path, stderr_path, on_progress):
    """Runs COMMAND, stderr (where NetPIPE reports each size) streamed to
    ON_PROGRESS and saved.  Returns (returncode or None on timeout, stderr)."""
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=env)
        try:
            return follow(proc, err, time.monotonic() + timeout, on_progress)
        except KeyboardInterrupt:
            end(proc)
            raise
        finally:
            proc.stderr.close()


def follow(proc, err, deadline, on_progress):
    text = b""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stderr, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=min(1.0, deadline - time.monotonic())):
                on_progress(text)
                continue
            chunk = os.read(proc.stderr.fileno(), 65536)
            if not chunk:
                break
            err.write(chunk)
            err.flush()
            text += chunk
            on_progress(text)
    try:
        returncode = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        end(proc)
        returncode = None
    return returncode, text.decode(errors="replace")


def completed_sizes(path):
    try:
        with open(path) as f:
            return [int(line.split()[0]) for line in f if len(line.split()) == 3]
    except (OSError, ValueError):
        return []


# --- do the attached counters count? -----------------------------------------

# Counters a 1-byte ping-pong always hits; the others of Table 4 may stay 0.
SURE = ("SEND", "RECV", "MATCH_TIME")
DUMP_LINE = re.compile(r"OMPI_SPC_(\w+)(.*)")


def counter_check(prefix, binary, config, transport, path):
    """A short ping-pong with mpi_spc_dump_enabled: which counters came out
    non-zero, and which of SURE that the configuration attaches did not."""
    command = study.mpirun(prefix, config, transport) + ["--mca", "mpi_spc_dump_enabled", "true", binary,
                                                         "-l", "1", "-u", "1", "-p", "0", "-n", "200",
                                                         "-o", os.devnull]
    env = dict(study.environment(), LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
    returncode, _ = run_streaming(command, env, 60, path, path + ".stderr", lambda text: None)
    nonzero = set()
    for name in (path, path + ".stderr"):  # the dump's stream differs between ours and upstream
        with open(name) as f:
            for line in f:
                match = DUMP_LINE.search(line)
                if match and any(int(n) > 0 for n in re.findall(r"\b\d+\b", match.group(2))):
                    nonzero.add(match.group(1))
    attached = set(SURE) if config.counters == ("all",) else set(config.counters) & set(SURE)
    return {"returncode": returncode, "nonzero": sorted(nonzero), "missing": sorted(attached - nonzero),
            "output": os.path.basename(path)}


# --- the sweep ----------------------------------------------------------------

class Progress:
    """One terminal line per run (rewritten in place on a terminal)."""

    def __init__(self, total):
        self.total, self.durations, self.tty = total, {}, sys.stdout.isatty()

    def eta(self, remaining, kind, running_for):
        """Seconds left: runs to go times the mean duration of their kind."""
        every = [d for ds in self.durations.values() for d in ds]
        if not every:
            return None
        mean = lambda k: (sum(self.durations[k]) / len(self.durations[k])) if self.durations.get(k) else \
            sum(every) / len(every)
        return sum(mean(k) for k in remaining) + max(0.0, mean(kind) - running_for)

    def show(self, line, final=False):
        if self.tty:
            sys.stdout.write("\r\033[K" + line + ("\n" if final else ""))
            sys.stdout.flush()
        elif final:
            say(line)


def run_one(plan, index, sweeps, prefixes, builds, binaries, timeout, out, progress, cpu, n_configs, rounds):
    """Runs plan[index]; returns its manifest entry."""
    r, transport, sweep, position, config = plan[index]
    settings = sweeps[sweep]
    repeats = settings["repeats"][transport.name]
    stem = f"{sweep}-{transport.name}-r{r:02d}-{config.key}"
    paths = {k: os.path.join(out, "raw", stem + ext)
             for k, ext in (("output", ".np"), ("stdout", ".stdout"), ("stderr", ".stderr"))}
    prefix, build = prefixes[config.build], builds[config.build]
    command = study.mpirun(prefix, config, transport) + [
        binaries[config.build], "-l", str(settings["low"]), "-u", str(settings["high"]),
        "-p", "0", "-n", str(repeats), "-o", paths["output"]]
    # RUNPATH loses to LD_LIBRARY_PATH: keep a stray one from choosing the library.
    env = dict(study.environment(), LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
    expected = netpipe_sizes(settings["low"], settings["high"])
    kind = (transport.name, sweep)
    remaining = [(t.name, s) for (_, t, s, _, _) in plan[index + 1:]]
    head = (f"[{index + 1}/{len(plan)}] round {r + 1}/{rounds} {transport.name} {sweep}: "
            f"configuration {position + 1} of {n_configs} ({config.key})")
    started, clock = datetime.datetime.now(datetime.timezone.utc), time.monotonic()

    def on_progress(text):
        sizes = SIZE_LINE.findall(text)
        size = f", {int(sizes[-1][1])} B ({len(sizes)} of {len(expected)} sizes)" if sizes else ""
        eta = progress.eta(remaining, kind, time.monotonic() - clock)
        progress.show(head + size + (f", about {eta / 60:.1f} min left" if eta is not None else ""))

    on_progress(b"")
    load = os.getloadavg()[0]
    stderr = ""
    if build_hash(prefix) != build["content_hash"]:
        # build_ompi.sh rebuilds in place when the repository changes: never mix builds.
        status, reason = "failed", "the Open MPI build changed during the sweep; not run"
        stderr = f"{prefix} is no longer build {build['content_hash']}"
    else:
        returncode, stderr = run_streaming(command, env, timeout, paths["stdout"], paths["stderr"], on_progress)
        progress.durations.setdefault(kind, []).append(time.monotonic() - clock)
        got = completed_sizes(paths["output"])
        if returncode is None:
            status, reason = "timeout", f"ended after {timeout:.0f} s"
        elif returncode != 0:
            status, reason = "failed", f"mpirun exit status {returncode}"
        elif got != expected:
            status, reason = "failed", f"{len(got)} of {len(expected)} sizes in the output"
        else:
            status, reason = "ok", ""
    seconds = time.monotonic() - clock
    progress.show(f"{head}: {status}{' (' + reason + ')' if reason else ''} in {seconds:.1f} s", final=True)
    entry = {"run": index, "round": r, "position": position, "transport": transport.name, "btl": transport.btl,
             "sweep": sweep, "configuration": config.key, "configuration_name": config.name,
             "build": config.build, "content_hash": build["content_hash"],
             "attach": study.attach_list(config), "low": settings["low"], "high": settings["high"],
             "repeats": repeats, "started": started.isoformat(timespec="seconds"), "seconds": round(seconds, 2),
             "loadavg_1min_before": load, "cpu": cpu, "command": command,
             "output": os.path.relpath(paths["output"], out), "stdout": os.path.relpath(paths["stdout"], out),
             "stderr": os.path.relpath(paths["stderr"], out), "status": status, "reason": reason}
    if status != "ok":
        entry["stderr_tail"] = stderr[-3000:]
    return entry


def parse_list(text, lookup, everything):
    if not text:
        return list(everything)
    return [lookup(name.strip()) for name in text.split(",") if name.strip()]


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]) + "\n\nconfigurations: " +
        ", ".join(c.key for c in study.CONFIGURATIONS) + "\ntransports: " +
        ", ".join(f"{t.name} ({t.paper_case})" for t in study.TRANSPORTS) + "\n\nprofiles:\n" +
        "\n".join(f"  {name}: {p['rounds']} rounds, timeout {p['timeout']} s per run, " +
                  "; ".join(f"{s} {v['low']}..{v['high']} B, repeats " +
                            ", ".join(f"{t} {n}" for t, n in v["repeats"].items())
                            for s, v in p["sweeps"].items()) for name, p in PROFILES.items()))
    parser.add_argument("--profile", choices=PROFILES, default="short", help="settings (default short)")
    parser.add_argument("--rounds", type=int, help="rounds (default: the profile's)")
    parser.add_argument("--transports", help="comma-separated transports (default: all)")
    parser.add_argument("--configurations", help="comma-separated configuration keys (default: all; "
                        "the baseline is always added)")
    parser.add_argument("--sweeps", help="comma-separated: latency,bandwidth (default: both)")
    parser.add_argument("--seed", type=int, help="seed of the per-round order (default: from the clock)")
    parser.add_argument("--timeout", type=float, help="seconds per mpirun before it is ended "
                        "(default: the profile's)")
    parser.add_argument("--out", help="results folder (default results/netpipe/<UTC time>)")
    args = parser.parse_args()

    profile = PROFILES[args.profile]
    rounds = args.rounds if args.rounds is not None else profile["rounds"]
    timeout = args.timeout if args.timeout is not None else profile["timeout"]
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    if timeout <= 0:
        parser.error("--timeout must be positive")
    transports = parse_list(args.transports, study.transport, study.TRANSPORTS)
    configs = parse_list(args.configurations, study.configuration, study.CONFIGURATIONS)
    if study.BASELINE not in configs:
        configs.insert(0, study.BASELINE)
    configs = [c for c in study.CONFIGURATIONS if c in configs]  # study order, no duplicates
    sweep_names = [s.strip() for s in (args.sweeps or "latency,bandwidth").split(",") if s.strip()]
    for name in sweep_names:
        if name not in profile["sweeps"]:
            parser.error(f"unknown sweep '{name}'; choose from: {', '.join(profile['sweeps'])}")
    sweeps = {name: profile["sweeps"][name] for name in dict.fromkeys(sweep_names)}
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 2**31

    started = datetime.datetime.now(datetime.timezone.utc)
    out = os.path.abspath(args.out or os.path.join(study.REPO, "results", "netpipe",
                                                   started.strftime("%Y%m%dT%H%M%SZ")))
    try:
        os.makedirs(os.path.join(out, "raw"), exist_ok=True)
        with open(os.path.join(out, ".writable"), "w"):
            pass
        os.remove(os.path.join(out, ".writable"))
    except OSError as error:
        sys.exit(f"netpipe_sweep.py: cannot write the results folder {out}: {error.strerror}")
    if os.path.exists(os.path.join(out, "manifest.json")):
        sys.exit(f"netpipe_sweep.py: {out} already holds a sweep (manifest.json); choose another --out")

    prefixes = {v: study.build(v) for v in sorted({c.build for c in configs})}
    builds = {v: study.build_info(p) for v, p in prefixes.items()}
    binaries = {v: netpipe_binary(p) for v, p in prefixes.items()}
    machine = study.machine()
    checks = {}
    for config in configs:
        if config.counters:
            say(f"== counter check: {config.key}")
            checks[config.key] = counter_check(prefixes[config.build], binaries[config.build], config,
                                               study.transport("vader"),
                                               os.path.join(out, "raw", f"check-{config.key}.txt"))
            if checks[config.key]["missing"] or checks[config.key]["returncode"] != 0:
                what = ", ".join(checks[config.key]["missing"]) or "nothing (the check run failed)"
                say(f"   warning: {config.key} attaches {study.attach_list(config)}, yet {what} did not count: "
                    f"see raw/check-{config.key}.txt")

    rng = random.Random(seed)
    plan, orders = [], []
    for r in range(rounds):
        for transport in transports:
            for sweep in sweeps:
                order = rng.sample(configs, len(configs))
                orders.append({"round": r, "transport": transport.name, "sweep": sweep,
                               "order": [c.key for c in order]})
                plan += [(r, transport, sweep, position, config) for position, config in enumerate(order)]

    meta = {"command": " ".join([sys.argv[0]] + sys.argv[1:]), "cwd": os.getcwd(), "profile": args.profile,
            "rounds": rounds, "timeout_s": timeout, "seed": seed, "sweeps": sweeps,
            "transports": [t._asdict() for t in transports],
            "configurations": [dict(c._asdict(), attach=study.attach_list(c)) for c in configs],
            "baseline": study.BASELINE.key, "orders": orders,
            "builds": {v: dict(builds[v], prefix=prefixes[v], netpipe=binaries[v]) for v in builds},
            "netpipe": {"source": NETPIPE_PACKAGE, "orig": NETPIPE_ORIG,
                        "recipe": NETPIPE_RECIPE, "options": "-p 0 (no perturbation), -n fixed repeats; "
                        "NetPIPE reports the fastest of 3 trials per size"},
            "counter_check": checks, "machine": machine, "started": started.isoformat(timespec="seconds"),
            "finished": None, "interrupted": False}

    def save(name, data):
        with open(os.path.join(out, name + ".tmp"), "w") as f:
            json.dump(data, f, indent=1)
        os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))

    save("meta.json", meta)
    say(f"== {len(plan)} runs: {rounds} rounds x {len(transports)} transports x {len(sweeps)} sweeps x "
        f"{len(configs)} configurations (seed {seed}) into {out}")

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    # A kill ends the current mpirun and keeps the record, as Ctrl-C does.
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)
    manifest, progress = [], Progress(len(plan))
    try:
        for index in range(len(plan)):
            manifest.append(run_one(plan, index, sweeps, prefixes, builds, binaries, timeout, out, progress,
                                    machine["cpu"], len(configs), rounds))
            save("manifest.json", manifest)
    except KeyboardInterrupt:
        meta["interrupted"] = True
        say("\n== interrupted; what ran so far is recorded")
    meta["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    save("meta.json", meta)
    failed = [m for m in manifest if m["status"] != "ok"]
    reasons = {}
    for m in failed:
        reasons[m["reason"]] = reasons.get(m["reason"], 0) + 1
    say(f"== {len(manifest) - len(failed)} of {len(plan)} runs ok, {len(failed)} failed" +
        "".join(f"\n   {n} x {reason}" for reason, n in reasons.items()))
    shown = os.path.relpath(out) if not os.path.relpath(out).startswith("..") else out
    say(f"saved: {out}\nreport: /usr/bin/python3 analysis/netpipe_report.py {shown}")
    sys.exit(1 if meta["interrupted"] else 0)


if __name__ == "__main__":
    main()
