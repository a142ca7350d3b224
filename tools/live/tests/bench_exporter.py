#!/usr/bin/env python3
"""What watching costs (docs/cluster.md, "Cost of watching"): a benchmark,
not a test.

  scrape  spc-exporter's CPU time and memory per scrape with K ranks held on
          this node (cluster_job under mpirun, every counter on): the
          exporter's on-CPU time (all its threads' /proc schedstat) over S scrapes,
          its resident memory (VmRSS, VmHWM), the client's wall time per
          scrape, the bytes and series served.
  ab      in-process A/B: a 2-rank ping-pong (scrape_pingpong.c) alternates
          blocks of round trips while an outside scraper is asked to scrape
          the exporter every 100 ms ("watched") or to stay idle ("quiet");
          the ratio of the median one-way time of watched over quiet blocks,
          per run, over several runs.

usage: /usr/bin/python3 tools/live/tests/bench_exporter.py --mpirun M --job CLUSTER_JOB
           --pingpong SCRAPE_PINGPONG --exporter E --out DIR [--ranks 1,8,32] [--scrapes 200]
           [--runs 5] [--blocks 20] [--round-trips 500000]
Writes DIR/config.json, DIR/scrape.jsonl, DIR/ab.jsonl and DIR/summary.md;
progress on stderr."""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

LIVE_MCA = [("mpi_spc_live", "1"), ("mpi_spc_attach", "all")]


def say(text):
    print(text, file=sys.stderr, flush=True)


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def cpu_ns(pid):
    """On-CPU time of every thread of PID (cpp-httplib serves from a pool)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that ended
    return total


def memory_kib(pid):
    found = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
    return found


def start_exporter(exporter, live):
    proc = subprocess.Popen([exporter, "--listen", "127.0.0.1:0", "--dir", live, "--sweep", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    line = proc.stdout.readline()
    match = re.search(r"serving (http://\S+/metrics)", line)
    if not match:
        proc.kill()
        sys.exit(f"bench_exporter: spc-exporter did not start: {line}")
    return proc, match.group(1)


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def mca(pairs):
    return [a for name, value in pairs for a in ("--mca", name, value)]


def scrape_cost(args, ranks, work):
    live = tempfile.mkdtemp(dir=work, prefix=f"live-{ranks}-")
    hold = tempfile.mkdtemp(dir=work, prefix=f"hold-{ranks}-")
    job = subprocess.Popen([args.mpirun, "-np", str(ranks), "--oversubscribe", "--mca", "btl", "self,vader",
                            *mca(LIVE_MCA + [("mpi_spc_live_dir", live)]), args.job, "--phases", "10",
                            "--hold", hold], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                           start_new_session=True)
    exporter = None
    try:
        deadline = time.monotonic() + 120
        while len([f for f in os.listdir(hold) if f.startswith("ready.0.")]) < ranks:
            if job.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"bench_exporter: the {ranks}-rank job did not reach its hold")
            time.sleep(0.1)
        exporter, url = start_exporter(args.exporter, live)
        for _ in range(5):  # warm: first maps of every file
            get(url)
        before_cpu, walls, size = cpu_ns(exporter.pid), [], 0
        for _ in range(args.scrapes):
            t0 = time.perf_counter()
            text = get(url)
            walls.append(time.perf_counter() - t0)
            size = len(text)
        cpu = (cpu_ns(exporter.pid) - before_cpu) / args.scrapes
        memory = memory_kib(exporter.pid)
        series = int(re.search(rb"^ompi_spc_exporter_series (\d+)$", text, re.M).group(1))
        record = {"ranks": ranks, "scrapes": args.scrapes, "exporter_cpu_us_per_scrape": cpu / 1000,
                  "client_wall_us_median": statistics.median(walls) * 1e6,
                  "client_wall_us_min": min(walls) * 1e6, "client_wall_us_max": max(walls) * 1e6,
                  "bytes": size, "series": series, "rss_kib": memory.get("VmRSS"), "hwm_kib": memory.get("VmHWM")}
        say(f"scrape, {ranks} ranks: {record['exporter_cpu_us_per_scrape']:.0f} us CPU per scrape, "
            f"{record['client_wall_us_median']:.0f} us wall, {series} series, {size} bytes, "
            f"RSS {memory.get('VmRSS')} KiB")
        return record
    finally:
        if exporter:
            stop(exporter)
        open(os.path.join(hold, "go.0"), "w").close()
        try:
            job.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(hold, ignore_errors=True)


def ab_run(args, run, work):
    """One run of scrape_pingpong: blocks alternate watched and quiet."""
    live = tempfile.mkdtemp(dir=work, prefix="live-ab-")
    control = tempfile.mkdtemp(dir=work, prefix="control-ab-")
    exporter, url = start_exporter(args.exporter, live)
    stop_scraper = threading.Event()
    scrapes = [0]

    def scraper():
        # Every 100 ms while the ping-pong's control file says "watched".
        flag = os.path.join(control, "watched")
        while not stop_scraper.is_set():
            if os.path.exists(flag):
                get(url)
                scrapes[0] += 1
            time.sleep(0.1)

    thread = threading.Thread(target=scraper)
    thread.start()
    try:
        result = subprocess.run([args.mpirun, "-np", "2", "--mca", "btl", "self,vader",
                                 *mca(LIVE_MCA + [("mpi_spc_live_dir", live)]), args.pingpong,
                                 "--control", control, "--blocks", str(args.blocks),
                                 "--round-trips", str(args.round_trips)],
                                capture_output=True, text=True, timeout=600)
    finally:
        stop_scraper.set()
        thread.join()
        stop(exporter)
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(control, ignore_errors=True)
    if result.returncode != 0:
        sys.exit(f"bench_exporter: scrape_pingpong failed:\n{result.stdout}{result.stderr}")
    blocks = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    watched = [b["one_way_ns"] for b in blocks if b["watched"]]
    quiet = [b["one_way_ns"] for b in blocks if not b["watched"]]
    record = {"run": run, "blocks": blocks, "scrapes": scrapes[0],
              "watched_median_ns": statistics.median(watched), "quiet_median_ns": statistics.median(quiet)}
    record["ratio"] = record["watched_median_ns"] / record["quiet_median_ns"]
    say(f"ab run {run}: watched {record['watched_median_ns']:.0f} ns, quiet {record['quiet_median_ns']:.0f} ns "
        f"one-way, ratio {record['ratio']:.3f}, {scrapes[0]} scrapes")
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("mpirun", "job", "pingpong", "exporter", "out"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--ranks", default="1,8,32")
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--round-trips", type=int, default=500000)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="spc-bench-exporter-", dir="/dev/shm")
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"^Model name:\s*(.*)$", lscpu, re.M)
    config = {"command": " ".join(sys.argv), "cpu": model.group(1) if model else "?", "nproc": os.cpu_count(),
              "kernel": platform.release(), "load_before": open("/proc/loadavg").read().split()[:3],
              "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "live_mca": LIVE_MCA}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(os.path.join(args.out, "lscpu.txt"), "w") as f:
        f.write(lscpu)
    try:
        scrape = [scrape_cost(args, int(k), work) for k in args.ranks.split(",")]
        with open(os.path.join(args.out, "scrape.jsonl"), "w") as f:
            for record in scrape:
                f.write(json.dumps(record) + "\n")
        ab = [ab_run(args, run, work) for run in range(args.runs)]
        with open(os.path.join(args.out, "ab.jsonl"), "w") as f:
            for record in ab:
                f.write(json.dumps(record) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratios = sorted(r["ratio"] for r in ab)
    lines = [f"# Cost of watching ({config['started_utc']}, {config['cpu']}, {config['nproc']} CPUs)", "",
             f"`{config['command']}`", "",
             "| ranks on the node | exporter CPU per scrape | client wall per scrape (median) | series | bytes | "
             "exporter RSS (peak) |", "|---:|---:|---:|---:|---:|---:|"]
    for r in scrape:
        lines.append(f"| {r['ranks']} | {r['exporter_cpu_us_per_scrape']:.0f} us | {r['client_wall_us_median']:.0f} us "
                     f"| {r['series']} | {r['bytes']} | {r['rss_kib']} KiB ({r['hwm_kib']} KiB) |")
    lines += ["", f"In-process A/B, 2 ranks over vader, every counter on, live on: watched (a scrape every "
              f"100 ms) over quiet blocks, median one-way time per run, {len(ab)} runs: "
              f"median {statistics.median(ratios):.3f} [{ratios[0]:.3f}-{ratios[-1]:.3f}]; "
              f"one-way quiet {statistics.median(r['quiet_median_ns'] for r in ab):.0f} ns, "
              f"watched {statistics.median(r['watched_median_ns'] for r in ab):.0f} ns."]
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
