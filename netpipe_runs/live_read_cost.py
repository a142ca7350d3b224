"""What reading a running job's live counters costs the reader: one full read
of a 2-rank job by spc-top (list the folder, map, check and sum every rank:
spc-top --time) and one scrape of spc-exporter (HTTP GET /metrics, timed by
this client, and the exporter's own ompi_spc_exporter_scrape_seconds).

The job is live_job (tools/live/tests/live_job.c) held after a known number of
sends with all counters on, so the reads see a job that runs; every scrape is
checked to hold that number (exit status BENCH_EXIT_CHECK_FAILED otherwise).
Output: one JSON line (microseconds), then a line for people starting "# ".

usage: python3 -m netpipe_runs.live_read_cost --mpirun M --job LIVE_JOB --top SPC_TOP
           --exporter SPC_EXPORTER --dir DIR [--reads N] [--scrapes N] [--btl self,vader]"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from netpipe_runs import campaign, study

SENDS = 1000


def main():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.live_read_cost",
                                     description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("mpirun", "job", "top", "exporter", "dir"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--scrapes", type=int, default=300)
    parser.add_argument("--btl", default="self,vader")
    args = parser.parse_args()
    codes = study.bench_exit_codes()
    os.makedirs(args.dir, mode=0o700, exist_ok=True)
    hold = tempfile.mkdtemp(prefix="live-read-cost-")
    job = subprocess.Popen([args.mpirun, "-np", "2", "--bind-to", "core", "--mca", "btl", args.btl,
                            "--mca", "mpi_spc_live", "1", "--mca", "mpi_spc_live_dir", args.dir,
                            "--mca", "mpi_spc_attach", "all", args.job, "--phases", str(SENDS),
                            "--hold", hold], start_new_session=True)
    exporter = None
    try:
        ready = [os.path.join(hold, f"ready.0.{rank}") for rank in (0, 1)]
        deadline = time.monotonic() + 60
        while not all(os.path.exists(p) and os.path.getsize(p) for p in ready):
            if job.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"live_read_cost: the job did not reach its hold (status {job.poll()})")
            time.sleep(0.02)
        top = subprocess.run([args.top, "--dir", args.dir, "--time", str(args.reads)], capture_output=True,
                             text=True, check=True)
        reads = json.loads(top.stdout)
        exporter = subprocess.Popen([args.exporter, "--listen", "127.0.0.1:0", "--dir", args.dir],
                                    stdout=subprocess.PIPE, text=True, start_new_session=True)
        url = re.search(r"(http://\S+/metrics)", exporter.stdout.readline()).group(1)
        client_us, own_us, size, wrong = [], [], 0, 0
        for _ in range(args.scrapes):
            started = time.perf_counter()
            with urllib.request.urlopen(url, timeout=10) as response:
                text = response.read().decode()
            client_us.append((time.perf_counter() - started) * 1e6)
            own_us.append(float(re.search(r"^ompi_spc_exporter_scrape_seconds (\S+)$", text, re.M).group(1)) * 1e6)
            size = len(text)
            sends = re.findall(r'^ompi_spc_send_total\{[^}]*\} (\d+)$', text, re.M)
            wrong += sends != [str(SENDS), str(SENDS)]
        result = {"benchmark": "live_read_cost", "segments": reads["segments"], "reads": args.reads,
                  "top_read_us": reads["microseconds_per_read"], "scrapes": args.scrapes,
                  "scrape_client_us_median": statistics.median(client_us),
                  "scrape_client_us_min": min(client_us), "scrape_client_us_max": max(client_us),
                  "scrape_exporter_us_median": statistics.median(own_us), "metrics_bytes": size,
                  "scrapes_wrong": wrong}
        print(json.dumps(result))
        print(f"# live_read_cost: spc-top full read of {reads['segments']} ranks {reads['microseconds_per_read']:.1f} us;"
              f" scrape {statistics.median(client_us):.0f} us at the client, "
              f"{statistics.median(own_us):.0f} us in the exporter, {size} bytes")
        open(os.path.join(hold, "go.0"), "w").close()
        status = job.wait(timeout=60)
        if wrong or reads["segments"] != 2 or status != 0:
            print(f"# live_read_cost: CHECK FAILED: {wrong} scrapes without SEND = {SENDS} on both ranks, "
                  f"{reads['segments']} segments read, job status {status}")
            sys.exit(codes["CHECK_FAILED"])
        sys.exit(codes["OK"])
    finally:  # each started in a session of its own: ended with all it started, as a campaign's runs are
        for proc in (exporter, job):
            if proc is not None:
                campaign.end_tree(proc, grace=5)


if __name__ == "__main__":
    main()
