#!/usr/bin/env python3
"""Hang rate of a 2-rank MPI command, several configurations interleaved.

usage: hangrate.py --runs N --limit S --out DIR NAME=MPIRUN:PROGRAM [NAME=...] [-- PROGRAM ARGS]

Each round runs every configuration once, in turn (ABAB...).  A run still
going after S seconds is a hang: every thread of each rank is backtraced
with gdb (and, when the ranks' libmpi has debug information, ob1's matching
state is printed by ob1_state.py), then the run's process group is killed.
One JSON line per run goes to DIR/runs.jsonl; a hang's text to
DIR/hang-NAME-I.txt."""
import json, os, signal, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return []
    return kids + [g for k in kids for g in children(k)]


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def inspect(pid):
    args = ["gdb", "-batch", "-nx", "-p", str(pid), "-ex", "thread apply all bt",
            "-ex", "source " + os.path.join(HERE, "ob1_state.py")]
    try:
        g = subprocess.run(args, capture_output=True, text=True, timeout=180)
        return g.stdout + ("" if "Thread" in g.stdout else g.stderr)
    except subprocess.TimeoutExpired as e:
        return f"gdb timed out: {e}\n"


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    runs, limit, out, configs = 100, 30.0, "out", []
    i = 0
    while i < len(argv):
        if argv[i] == "--runs":
            runs = int(argv[i + 1]); i += 2
        elif argv[i] == "--limit":
            limit = float(argv[i + 1]); i += 2
        elif argv[i] == "--out":
            out = argv[i + 1]; i += 2
        else:
            name, rest = argv[i].split("=", 1)
            mpirun, program = rest.split(":", 1)
            configs.append((name, mpirun, program)); i += 1
    os.makedirs(out, exist_ok=True)
    log = open(os.path.join(out, "runs.jsonl"), "a")
    counts = {name: [0, 0, 0] for name, _, _ in configs}  # ok, hung, failed
    for r in range(runs):
        for name, mpirun, program in configs:
            cmd = [mpirun, "--allow-run-as-root", "-np", "2", "--bind-to", "none",
                   "--mca", "btl", "self,vader", program] + extra
            start = time.monotonic()
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
            try:
                output, _ = p.communicate(timeout=limit)
                status = "ok" if p.returncode == 0 else "failed"
                text = None
            except subprocess.TimeoutExpired:
                status = "hung"
                ranks = [c for c in children(p.pid) if comm(c) not in ("mpirun", "orted", "sh")]
                text = f"command: {' '.join(cmd)}\nhung after {limit} s; ranks {ranks}\n"
                for c in ranks:
                    text += f"\n=== rank process {c}\n" + inspect(c)
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    output, _ = p.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    output, _ = p.communicate()
            seconds = time.monotonic() - start
            counts[name][("ok", "hung", "failed").index(status)] += 1
            rec = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "config": name, "run": r,
                   "status": status, "seconds": round(seconds, 2), "command": " ".join(cmd)}
            if status != "ok":
                rec["output_tail"] = (output or "")[-600:]
            log.write(json.dumps(rec) + "\n"); log.flush()
            if text is not None:
                with open(os.path.join(out, f"hang-{name}-{r}.txt"), "w") as f:
                    f.write(text + "\n=== mpirun output\n" + (output or ""))
        print(f"round {r + 1}/{runs}: " + "; ".join(f"{n} ok {c[0]} hung {c[1]} failed {c[2]}"
                                                    for n, c in counts.items()), flush=True)
    with open(os.path.join(out, "summary.txt"), "a") as f:
        for n, c in counts.items():
            f.write(f"{n}: {c[1]} hung, {c[2]} failed, {c[0]} ok of {sum(c)} runs (limit {limit} s)\n")
    print(open(os.path.join(out, "summary.txt")).read())


if __name__ == "__main__":
    main()
