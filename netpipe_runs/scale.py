"""Memory per rank against the number of ranks (issue 36, item 1): at each
rank count, bench/footprint_job.c (a ring of 100 messages of 1 KiB a rank,
then held) runs on the compiled-out build (nospc) and on the spc build with
live counters on and every counter and communicator attached
(mpi_spc_live 1, mpi_spc_attach all,traffic); while it is held, each rank's
resident memory (VmRSS), its proportional share of it (Pss, shared pages
divided among the processes that map them) and, under spc, its live file's
size and the bytes of it that are in memory (allocated tmpfs pages) are
read from /proc and the file system.  One binary, compiled once by the spc
build's mpicc, runs on both builds (LD_LIBRARY_PATH chooses the library).
The ranks are oversubscribed on this machine's cores; memory does not
depend on speed.

Writes OUT/runs.jsonl (a record per rank count and build: every rank's
figures), OUT/table.md (medians per rank, spc minus nospc) and OUT/meta.json
(machine, builds, command).

usage: python3 -m netpipe_runs.footprint [--ranks 2,16,64] [--out DIR] [--timeout S]"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from netpipe_runs import campaign, study

BUILDS = {"nospc": [], "spc": ["--mca", "mpi_spc_live", "1", "--mca", "mpi_spc_attach", "all,traffic"]}


def proc_kib(pid, path, key):
    """A 'Key:   N kB' figure of /proc/PID/PATH, in KiB."""
    with open(f"/proc/{pid}/{path}") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(f"{key} not in /proc/{pid}/{path}")


def measure(prefix, program, ranks, extra, live_dir, timeout):
    """Every rank's figures while footprint_job is held, ranks in order."""
    hold = tempfile.mkdtemp(prefix="footprint-")
    command = [os.path.join(prefix, "bin", "mpirun"), "-np", str(ranks), "--oversubscribe",
               "--mca", "btl", "self,vader", "-x", "LD_LIBRARY_PATH", *extra,
               "--mca", "mpi_spc_live_dir", live_dir, program, hold]
    env = study.environment(LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
    print("$ " + " ".join(command), flush=True)
    job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        ready = [os.path.join(hold, f"ready.{rank}") for rank in range(ranks)]
        deadline = time.monotonic() + timeout
        while not all(os.path.exists(p) and os.path.getsize(p) for p in ready):
            if job.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{ranks} ranks did not reach the hold (status {job.poll()}):\n"
                                   + (job.stdout.read() if job.poll() is not None else ""))
            time.sleep(0.1)
        time.sleep(0.5)  # the last rank's write of ready is done; let it reach its wait
        figures = []
        for rank, path in enumerate(ready):
            pid = int(open(path).read())
            row = {"rank": rank, "rss_kib": proc_kib(pid, "status", "VmRSS"),
                   "pss_kib": proc_kib(pid, "smaps_rollup", "Pss")}
            files = [f for f in os.listdir(live_dir) if f.endswith(f".{rank}")]
            if files:
                st = os.stat(os.path.join(live_dir, files[0]))
                row.update(live_file_bytes=st.st_size, live_resident_bytes=st.st_blocks * 512)
            figures.append(row)
        open(os.path.join(hold, "go"), "w").close()
        output, _ = job.communicate(timeout=timeout)
        if job.returncode != 0:
            raise RuntimeError(f"the job of {ranks} ranks failed (status {job.returncode}):\n{output}")
        return figures
    finally:
        if job.poll() is None:
            campaign.end_tree(job)
        shutil.rmtree(hold, ignore_errors=True)


def median(rows, key):
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else None


def table(records):
    lines = ["| ranks | nospc RSS | spc RSS | spc - nospc RSS | nospc Pss | spc Pss | spc - nospc Pss "
             "| live file | live file in memory |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    by = {(r["ranks"], r["build"]): r.get("figures") for r in records}
    for ranks in sorted({r["ranks"] for r in records}):
        off, on = by.get((ranks, "nospc")), by.get((ranks, "spc"))
        if not off or not on:
            failed = [b for b in BUILDS if not by.get((ranks, b))]
            lines.append(f"| {ranks} | the job failed on {', '.join(failed)} (runs.jsonl says how) |" + " |" * 7)
            continue
        cells = [median(off, "rss_kib"), median(on, "rss_kib"), median(on, "rss_kib") - median(off, "rss_kib"),
                 median(off, "pss_kib"), median(on, "pss_kib"), median(on, "pss_kib") - median(off, "pss_kib")]
        lines.append(f"| {ranks} | " + " | ".join(f"{c:,.0f} KiB" for c in cells)
                     + f" | {median(on, 'live_file_bytes'):,.0f} B | {median(on, 'live_resident_bytes'):,.0f} B |")
    return "\n".join(lines) + "\n\nMedians over the ranks of one job; RSS and Pss per rank.\n"


def main():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.footprint", description=__doc__.split("\n")[0],
                                     epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="2,16,64", help="comma list of rank counts (default 2,16,64)")
    parser.add_argument("--out", default=None, help="results folder (default results/<UTC time>-footprint)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a job may take to reach its hold")
    args = parser.parse_args()
    try:
        counts = [int(n) for n in args.ranks.split(",")]
    except ValueError:
        parser.error(f"--ranks takes a comma list of numbers, not '{args.ranks}'")
    if not counts or min(counts) < 2:
        parser.error("--ranks: every count at least 2")
    out = args.out or os.path.join(study.REPO, "results", campaign.utc_stamp() + "-footprint")
    os.makedirs(out, exist_ok=True)
    prefixes = {variant: study.build(variant) for variant in BUILDS}
    scratch = tempfile.mkdtemp(prefix="footprint-bin-")
    program = os.path.join(scratch, "footprint_job")
    subprocess.run([os.path.join(prefixes["spc"], "bin", "mpicc"), "-O2",
                    os.path.join(study.REPO, "bench", "footprint_job.c"), "-o", program], check=True)
    meta = {"machine": study.machine(), "command": " ".join(sys.argv), "date": campaign.utc_now().strftime("%Y-%m-%d %H:%M UTC"),
            "builds": {v: {"prefix": p, "content_hash": campaign.built_hash(p)} for v, p in prefixes.items()}}
    campaign.write_json(os.path.join(out, "meta.json"), meta)
    records = []
    with open(os.path.join(out, "runs.jsonl"), "w") as runs:
        for n, ranks in enumerate(counts, 1):
            for variant, extra in BUILDS.items():
                print(f"== [{n}/{len(counts)}] {ranks} ranks, {variant}", flush=True)
                live_dir = tempfile.mkdtemp(prefix="footprint-live-")
                # A job Open MPI itself fails is a finding, recorded, not the end of the run.
                try:
                    record = {"ranks": ranks, "build": variant,
                              "figures": measure(prefixes[variant], program, ranks, extra, live_dir, args.timeout)}
                except RuntimeError as error:
                    print(f"footprint: {error}", flush=True)
                    record = {"ranks": ranks, "build": variant, "failed": str(error)[-4000:]}
                finally:
                    shutil.rmtree(live_dir, ignore_errors=True)
                records.append(record)
                runs.write(json.dumps(record) + "\n")
                runs.flush()
    text = (f"# Memory per rank against ranks\n\n{meta['date']}, {meta['machine']['cpu']} "
            f"({meta['machine']['cores']} cores), Open MPI {study.OMPI_VERSION}, commit "
            f"{meta['machine']['commit'][:12]}.\n\n```sh\npython3 -m netpipe_runs.footprint --ranks {args.ranks}\n```\n\n"
            + table(records))
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    print(text)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
