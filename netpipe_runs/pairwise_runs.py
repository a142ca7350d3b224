#!/usr/bin/env python3
"""Runs the paper's multi-threaded pairwise benchmark (bench/pairwise.c, seed
004 section 6.1, Table 3) in each study configuration, for T threads per
rank, R rounds interleaved, over vader; saves raw output and per-run metadata.

Setups (--setups, default all of them):
  ours-mpit     our build, nothing attached; the program starts its counters
                through MPI_T before the warm-up: the Table 3 reproduction
  baseline      SPC compiled out                          (--no-counters)
  ours-off      our build, all counters off               (--no-counters)
  ours-all      our build, mpi_spc_attach=all; the program reads them
  upstream-off  upstream 4.1.4 SPC, all off               (--no-counters)
  upstream-all  upstream 4.1.4 SPC, mpi_spc_attach=all; read as continuous
In the "off" setups nothing turns a counter on: the program runs with
--no-counters and mpi_spc_attach is empty.  Reading happens outside the
timed part, so the "all" setups time the same code as with --no-counters.

Each round runs every (setup, T) once, in an order shuffled per round with a
recorded seed, so drift and the machine's placement modes spread over all.

Thread placement: --bind-to none (default).  The machine has 2 cores and the
benchmark up to 8 threads per rank.  Bound to one core per rank, a rank's
threads could only time-share that core while the other rank's core idles;
unbound, any runnable thread of either rank can use any idle core, the
closest this machine comes to the paper's one core per thread.

usage: netpipe_runs/pairwise_runs.py [--profile short|full] [--out DIR] ...
Results: DIR/runs.jsonl (one line per run: metadata and the program's JSON),
DIR/raw/*.out|*.err, DIR/meta.json, DIR/bin/ (the programs, one per build).
Tables: /usr/bin/python3 analysis/pairwise_report.py DIR"""
import argparse
import datetime
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import study  # noqa: E402


class Setup(NamedTuple):
    key: str
    name: str
    config: str       # study.CONFIGURATIONS key
    program_args: tuple


SETUPS = [
    Setup("ours-mpit", "ours, counters started through MPI_T", "ours-off", ()),
    Setup("baseline", "baseline (SPC compiled out)", "baseline", ("--no-counters",)),
    Setup("ours-off", "ours, all off", "ours-off", ("--no-counters",)),
    Setup("ours-all", "ours, all on (attach all)", "ours-all", ()),
    Setup("upstream-off", "upstream, all off", "upstream-off", ("--no-counters",)),
    Setup("upstream-all", "upstream, all on (attach all)", "upstream-all", ()),
]

PROFILES = {
    # rounds, threads, iterations, warm-up
    "short": {"rounds": 2, "threads": [1, 2, 4, 8], "iterations": 100, "warmup": 10},
    "full": {"rounds": 10, "threads": [1, 2, 4, 8], "iterations": 100, "warmup": 10},
}


def utc_stamp():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def compile_program(prefix, source, target, log):
    """Compiles bench/SOURCE with the build's own mpicc; returns the command."""
    command = [os.path.join(prefix, "bin", "mpicc"), "-std=c11", "-O2", "-Wall", "-pthread",
               os.path.join(study.REPO, "bench", source), "-o", target]
    result = subprocess.run(command, capture_output=True, text=True)
    with open(log, "a") as f:
        f.write("$ " + shlex.join(command) + "\n" + result.stdout + result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"compiling {source} with {command[0]} failed:\n{result.stderr}")
    return command


def session_members(sid):
    """Processes in session SID: what a command started with
    start_new_session=True has started, in any process group (Open MPI
    gives each rank a group of its own)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid:  # after "pid (comm)": state ppid pgrp session
                members.append(int(entry))
    return members


def run_with_timeout(command, timeout, env):
    """Runs COMMAND in a session of its own; on timeout asks mpirun to stop
    (it takes its ranks down), then kills whatever of that session is left."""
    started = time.time()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
        return process.returncode, out, err, time.time() - started, False
    except subprocess.TimeoutExpired:
        pass
    out, err = "", ""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        out, err = process.communicate(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    for _ in range(50):
        left = session_members(process.pid)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    if process.poll() is None:
        out, err = process.communicate()
    return process.returncode, out or "", err or "", time.time() - started, True


def result_line(stdout):
    """The program's JSON line (the first line that parses as a JSON object)."""
    for line in stdout.splitlines():
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


class Campaign:
    """The bookkeeping every driver shares: output folder, builds, programs,
    progress, one JSON line per run."""

    def __init__(self, kind, out, source, variants):
        self.kind, self.out, self.source = kind, out, source
        for sub in ("raw", "bin"):
            os.makedirs(os.path.join(out, sub), exist_ok=True)
        self.runs_file = os.path.join(out, "runs.jsonl")
        self.prefixes, self.builds, self.programs, self.skipped = {}, {}, {}, {}
        for variant in variants:
            try:
                prefix = study.build(variant)
                program = os.path.join(out, "bin", f"{os.path.splitext(source)[0]}-{variant}")
                compile_program(prefix, source, program, os.path.join(out, "bin", "compile.log"))
            except (SystemExit, RuntimeError) as error:
                # study.build exits on a failed build: the other builds still run.
                self.skipped[variant] = str(error) or "build failed"
                print(f"!! build '{variant}' unusable, its runs are skipped: {error}", flush=True)
                continue
            self.prefixes[variant] = prefix
            self.builds[variant] = study.build_info(prefix)
            self.programs[variant] = program
        self.started = None

    def write_meta(self, args, extra):
        meta = {"kind": self.kind, "command": shlex.join([sys.argv[0]] + sys.argv[1:]),
                "cwd": os.getcwd(), "date": utc_stamp(), "arguments": vars(args),
                "builds": self.builds, "prefixes": self.prefixes,
                "skipped_builds": self.skipped, "machine": study.machine(),
                "mpi_env": study.MPI_ENV, "python": sys.version.split()[0]}
        meta.update(extra)
        with open(os.path.join(self.out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=2)

    def run(self, k, total, label, tag, command, timeout, metadata):
        """Runs one item, saves it, shows progress; never raises on failure."""
        if self.started is None:
            self.started = time.time()
        stamp = utc_stamp()
        returncode, out, err, seconds, timed_out = run_with_timeout(command, timeout,
                                                                    study.environment())
        if timed_out:
            err += f"\n[pairwise_runs.py: no end after {timeout:g} s; mpirun and its ranks were stopped]\n"
        name = f"{k:04d}-{tag}"
        for suffix, text in (("out", out), ("err", err)):
            with open(os.path.join(self.out, "raw", f"{name}.{suffix}"), "w") as f:
                f.write(text)
        result = result_line(out)
        if timed_out:
            status = "timeout"
        elif returncode == 0 and result is not None:
            status = "ok"
        elif returncode == 3 and result is not None:
            status = "check-failed"   # the program's exact counts were wrong
        elif returncode == 4 and result is not None:
            status = "not-applicable"
        else:
            status = "failed"
        # Others may rebuild a prefix in place while a campaign runs: say so.
        build = metadata.get("build")
        try:
            with open(os.path.join(self.prefixes[build], ".built")) as f:
                hash_now = f.read().strip()
        except (KeyError, OSError):
            hash_now = None
        if build and hash_now != self.builds[build].get("content_hash"):
            print(f"!! build '{build}' changed during the campaign (now {hash_now})", flush=True)
        record = dict(metadata, item=k, time=stamp, seconds=round(seconds, 3), status=status,
                      build_hash_after_run=hash_now,
                      returncode=returncode, command=shlex.join(command),
                      stdout=f"raw/{name}.out", stderr=f"raw/{name}.err", result=result)
        if status != "ok":
            record["stderr_tail"] = err[-4000:]
        with open(self.runs_file, "a") as f:
            f.write(json.dumps(record) + "\n")
        elapsed = time.time() - self.started
        left = elapsed / k * (total - k)
        human = next((line for line in out.splitlines() if line.startswith("# ")), "")
        print(f"[{k}/{total}] {label}: {status} in {seconds:.1f} s, about {left:.0f} s left"
              + (f"\n    {human[2:]}" if human and status in ("ok", "check-failed") else "")
              + (f"\n    stderr: {err.strip()[-600:]}" if status in ("failed", "timeout") else ""),
              flush=True)
        return status


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Profiles: short = 2 rounds, full = 10 rounds; "
                                            "both T = 1 2 4 8, I = 100, warm-up 10.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short",
                        help="short (default) or full")
    parser.add_argument("--out", help="results folder (default results/pairwise/<UTC time>)")
    parser.add_argument("--setups", default=",".join(s.key for s in SETUPS),
                        help="comma list of setups (default: all): "
                             + ", ".join(s.key for s in SETUPS))
    parser.add_argument("--threads", help="comma list of threads per rank (default 1,2,4,8)")
    parser.add_argument("--rounds", type=int, help="repetitions of every (setup, T) (profile)")
    parser.add_argument("--iterations", type=int, help="measured iterations (100)")
    parser.add_argument("--warmup", type=int, help="warm-up iterations (10)")
    parser.add_argument("--window", type=int, default=256, help="messages per window (256)")
    parser.add_argument("--size", type=int, default=64, help="bytes per message (64)")
    parser.add_argument("--no-ack", action="store_true", help="pass --no-ack to the program")
    parser.add_argument("--bind-to", default="none", help="mpirun --bind-to (default none, see above)")
    parser.add_argument("--transport", default="vader", choices=[t.name for t in study.TRANSPORTS],
                        help="BTL pair (default vader, as in the paper)")
    # A T=8 run takes 2-6 s here; Open MPI 4.1.4 itself hangs in about 1 of
    # 30-40 of them (all three builds), so a hang should not cost minutes.
    parser.add_argument("--timeout", type=float, default=90, help="seconds per mpirun (90)")
    parser.add_argument("--seed", type=int, help="seed of the per-round order (default: time)")
    args = parser.parse_args()

    profile = PROFILES[args.profile]
    rounds = args.rounds or profile["rounds"]
    iterations = args.iterations or profile["iterations"]
    warmup = profile["warmup"] if args.warmup is None else args.warmup
    try:
        threads = ([int(t) for t in args.threads.split(",")] if args.threads
                   else profile["threads"])
    except ValueError:
        parser.error(f"--threads must be a comma list of whole numbers, not '{args.threads}'")
    known = {s.key: s for s in SETUPS}
    wanted = [key.strip() for key in args.setups.split(",") if key.strip()]
    unknown = [key for key in wanted if key not in known]
    if unknown or not wanted:
        parser.error(f"unknown setup(s) {', '.join(unknown) or '(none)'}; choose from "
                     + ", ".join(known))
    if rounds < 1 or iterations < 1 or warmup < 0 or any(t < 1 for t in threads):
        parser.error("--rounds, --iterations and every --threads value must be at least 1, "
                     "--warmup at least 0")
    seed = args.seed if args.seed is not None else int(time.time())
    out = os.path.abspath(args.out or os.path.join(study.REPO, "results", "pairwise", utc_stamp()))
    os.makedirs(out, exist_ok=True)
    print(f"== pairwise: {len(wanted)} setups x T in {threads} x {rounds} rounds -> {out}",
          flush=True)

    setups = [known[key] for key in wanted]
    variants = sorted({study.configuration(s.config).build for s in setups})
    campaign = Campaign("pairwise", out, "pairwise.c", variants)
    transport = study.transport(args.transport)
    campaign.write_meta(args, {"profile": args.profile, "rounds": rounds, "threads": threads,
                               "iterations": iterations, "warmup": warmup, "window": args.window,
                               "size": args.size, "ack": not args.no_ack, "seed": seed,
                               "bind_to": args.bind_to, "transport": transport._asdict(),
                               "setups": [s._asdict() for s in setups]})

    runnable = [s for s in setups if study.configuration(s.config).build in campaign.programs]
    rng = random.Random(seed)
    items = []
    for round_ in range(rounds):
        order = [(s, t) for s in runnable for t in threads]
        rng.shuffle(order)
        items += [(round_, s, t) for s, t in order]
    for k, (round_, setup, t) in enumerate(items, 1):
        config = study.configuration(setup.config)
        command = (study.mpirun(campaign.prefixes[config.build], config, transport,
                                bind_to=args.bind_to)
                   + [campaign.programs[config.build], "--threads", str(t), "--window",
                      str(args.window), "--size", str(args.size), "--iterations", str(iterations),
                      "--warmup", str(warmup)]
                   + (["--no-ack"] if args.no_ack else []) + list(setup.program_args))
        campaign.run(k, len(items), f"{setup.key} T={t} round {round_ + 1}",
                     f"{setup.key}-T{t}-r{round_ + 1}", command, args.timeout,
                     {"setup": setup.key, "setup_name": setup.name, "configuration": config.key,
                      "build": config.build,
                      "build_hash": campaign.builds[config.build].get("content_hash"),
                      "attach": study.attach_list(config), "threads": t, "round": round_ + 1,
                      "transport": transport.name})
    print(f"saved: {out}\ntables: /usr/bin/python3 analysis/pairwise_report.py {out}")


if __name__ == "__main__":
    main()
