"""Costs against the number of ranks on one node (issue 36, items 1 and 2):
at each rank count, bench/scale_job.c (a ring of 100 messages of 1 KiB a
rank, then held; it times its own MPI_Init and MPI_Finalize) runs, over
the transport asked for (ob1 over shared memory unless told), on

  nospc       the compiled-out build;
  spc         the spc build with live counters on and every counter and
              communicator attached (mpi_spc_live 1, mpi_spc_attach
              all,traffic);
  spc-report  the same with the finalize report and its CSV
              (mpi_spc_dump_enabled): its MPI_Finalize less spc's is the
              report's time.

While a job is held, each rank's resident memory (VmRSS), its proportional
share (Pss: shared pages divided among the processes that map them) and its
live file's size and bytes in memory are read; under spc, `spc-top --once`
is timed and spc-exporter scraped (a first scrape, then one measured: the
client's time, the bytes served and the exporter's own
ompi_spc_exporter_scrape_seconds).  One binary, compiled once by the spc
build's mpicc, runs on every build (LD_LIBRARY_PATH chooses the library).
The ranks are oversubscribed on this machine's cores: memory does not
depend on that, times do (they are this machine's, for their growth with
the ranks).  A job Open MPI itself fails is recorded as failed.

Writes OUT/runs.jsonl (a record per rank count and configuration), OUT/table.md
(medians over the ranks of a job) and OUT/meta.json (machine, builds, command).

Open MPI 5.0.7 instead of 4.1.4: SPC_OMPI_VERSION=5.0.7 in the environment
(netpipe_runs/study.py), with both builds of it in the cache.

usage: python3 -m netpipe_runs.scale [--ranks 2,16,64] [--transport NAME] [--out DIR]
                                    [--timeout S]"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from netpipe_runs import campaign, study

LIVE = ["--mca", "mpi_spc_live", "1", "--mca", "mpi_spc_attach", "all,traffic"]
CONFIGURATIONS = {"nospc": ("nospc", []), "spc": ("spc", LIVE),
                  "spc-report": ("spc", LIVE + ["--mca", "mpi_spc_dump_enabled", "true"])}


def proc_kib(pid, path, key):
    """A 'Key:   N kB' figure of /proc/PID/PATH, in KiB."""
    with open(f"/proc/{pid}/{path}") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(f"{key} not in /proc/{pid}/{path}")


def readers(prefix, live_dir):
    """spc-top --once's time, and one measured scrape of spc-exporter."""
    started = time.monotonic()
    top = subprocess.run([os.path.join(prefix, "bin", "spc-top"), "--once", "--dir", live_dir],
                         capture_output=True, text=True, timeout=120)
    top_ms = (time.monotonic() - started) * 1e3
    if top.returncode != 0 or "OMPI_SPC_SEND" not in top.stdout:
        raise RuntimeError(f"spc-top --once failed ({top.returncode}): {top.stderr[-2000:]}")
    exporter = subprocess.Popen([os.path.join(prefix, "bin", "spc-exporter"), "--listen", "127.0.0.1:0",
                                 "--dir", live_dir], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        url = re.search(r"(http://\S+/metrics)", exporter.stdout.readline()).group(1)
        urllib.request.urlopen(url, timeout=60).read()
        started = time.monotonic()
        text = urllib.request.urlopen(url, timeout=60).read().decode()
        client_ms = (time.monotonic() - started) * 1e3
        own = re.search(r"^ompi_spc_exporter_scrape_seconds (\S+)$", text, re.M)
        return {"top_once_ms": round(top_ms, 2), "scrape_client_ms": round(client_ms, 2),
                "scrape_bytes": len(text.encode()), "scrape_series": text.count("\nompi_spc_"),
                "scrape_own_ms": round(float(own.group(1)) * 1e3, 3) if own else None}
    finally:
        campaign.end_tree(exporter)


def run_job(prefix, program, ranks, transport, extra, with_readers, timeout):
    """Every rank's figures while the job is held and its times after, and
    (with_readers) what the readers cost."""
    hold = tempfile.mkdtemp(prefix="scale-")
    live_dir = os.path.join(hold, "live")
    command = [os.path.join(prefix, "bin", "mpirun"), "-np", str(ranks), "--oversubscribe",
               *study.transport_arguments(transport), "-x", "LD_LIBRARY_PATH", *extra,
               "--mca", "mpi_spc_live_dir", live_dir, "--mca", "mpi_spc_dump_file",
               os.path.join(hold, "report.csv"), program, hold]
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
            files = [f for f in os.listdir(live_dir) if f.endswith(f".{rank}")] if os.path.isdir(live_dir) else []
            if files:
                st = os.stat(os.path.join(live_dir, files[0]))
                row.update(live_file_bytes=st.st_size, live_resident_bytes=st.st_blocks * 512)
            figures.append(row)
        record = {"figures": figures}
        if with_readers:
            record["readers"] = readers(prefix, live_dir)
        open(os.path.join(hold, "go"), "w").close()
        output, _ = job.communicate(timeout=timeout)
        if job.returncode != 0:
            raise RuntimeError(f"the job of {ranks} ranks failed (status {job.returncode}):\n{output}")
        for row in figures:
            with open(os.path.join(hold, f"times.{row['rank']}")) as f:
                init_ns, finalize_ns = (int(v) for v in f.read().split())
            row.update(init_ms=init_ns / 1e6, finalize_ms=finalize_ns / 1e6)
        return record
    finally:
        if job.poll() is None:
            campaign.end_tree(job)
        shutil.rmtree(hold, ignore_errors=True)


def median(rows, key):
    values = [r[key] for r in rows or [] if r.get(key) is not None]
    return statistics.median(values) if values else None


def cell(value, unit, digits=0):
    return "" if value is None else f"{value:,.{digits}f} {unit}"


def tables(records):
    by = {(r["ranks"], r["configuration"]): r for r in records}
    memory = ["| ranks | nospc RSS | spc RSS | spc - nospc RSS | nospc Pss | spc Pss | spc - nospc Pss "
              "| live file | live file in memory |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    times = ["| ranks | MPI_Init nospc / spc | MPI_Finalize nospc / spc | the report | `spc-top --once` "
             "| a scrape (exporter's own time) | its bytes, series |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for ranks in sorted({r["ranks"] for r in records}):
        runs = {c: by.get((ranks, c), {}) for c in CONFIGURATIONS}
        failed = [c for c, r in runs.items() if "figures" not in r]
        if failed:
            memory.append(f"| {ranks} | failed: {', '.join(failed)} (runs.jsonl says how) |" + " |" * 7)
            times.append(f"| {ranks} | failed: {', '.join(failed)} |" + " |" * 5)
            continue
        off, on, report = (runs[c]["figures"] for c in CONFIGURATIONS)
        d = lambda key: median(on, key) - median(off, key)  # noqa: E731
        memory.append(f"| {ranks} | " + " | ".join(cell(v, "KiB") for v in (
            median(off, "rss_kib"), median(on, "rss_kib"), d("rss_kib"),
            median(off, "pss_kib"), median(on, "pss_kib"), d("pss_kib")))
            + f" | {cell(median(on, 'live_file_bytes'), 'B')} | {cell(median(on, 'live_resident_bytes'), 'B')} |")
        read = runs["spc"].get("readers", {})
        times.append(
            f"| {ranks} | {cell(median(off, 'init_ms'), 'ms', 1)} / {cell(median(on, 'init_ms'), 'ms', 1)}"
            f" | {cell(median(off, 'finalize_ms'), 'ms', 1)} / {cell(median(on, 'finalize_ms'), 'ms', 1)}"
            f" | {cell(median(report, 'finalize_ms') - median(on, 'finalize_ms'), 'ms', 1)}"
            f" | {cell(read.get('top_once_ms'), 'ms', 1)} | {cell(read.get('scrape_client_ms'), 'ms', 1)}"
            f" ({cell(read.get('scrape_own_ms'), 'ms', 2)}) | {cell(read.get('scrape_bytes'), 'B')},"
            f" {read.get('scrape_series', '')} |")
    return ("## Memory per rank\n\n" + "\n".join(memory) + "\n\n## Times\n\n" + "\n".join(times)
            + "\n\nMedians over the ranks of one job (RSS, Pss and times per rank); the report's time is the "
            "median MPI_Finalize of spc-report less spc's; the readers' under spc, one run each.\n")


def main():
    parser = argparse.ArgumentParser(prog="python3 -m netpipe_runs.scale", description=__doc__.split("\n")[0],
                                     epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="2,16,64", help="comma list of rank counts (default 2,16,64)")
    parser.add_argument("--out", default=None, help="results folder (default results/<UTC time>-scale)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a job may take to reach its hold")
    transports = study.TRANSPORTS + study.OTHER_TRANSPORTS
    parser.add_argument("--transport", default="vader", choices=[t.name for t in transports],
                        help="how the ranks talk (default vader: ob1 over shared memory; "
                             + "; ".join(f"{t.name}: {t.paper_case}" for t in transports[1:]) + ")")
    args = parser.parse_args()
    transport = study.transport(args.transport)
    try:
        counts = [int(n) for n in args.ranks.split(",")]
    except ValueError:
        parser.error(f"--ranks takes a comma list of numbers, not '{args.ranks}'")
    if not counts or min(counts) < 2:
        parser.error("--ranks: every count at least 2")
    out = args.out or os.path.join(study.REPO, "results", campaign.utc_stamp() + "-scale")
    os.makedirs(out, exist_ok=True)
    prefixes = {variant: study.build(variant) for variant in ("nospc", "spc")}
    scratch = tempfile.mkdtemp(prefix="scale-bin-")
    program = os.path.join(scratch, "scale_job")
    subprocess.run([os.path.join(prefixes["spc"], "bin", "mpicc"), "-O2",
                    os.path.join(study.REPO, "bench", "scale_job.c"), "-o", program], check=True)
    meta = {"machine": study.machine(), "command": " ".join(sys.argv), "transport": transport._asdict(),
            "date": campaign.utc_now().strftime("%Y-%m-%d %H:%M UTC"),
            "builds": {v: {"prefix": p, "content_hash": campaign.built_hash(p)} for v, p in prefixes.items()}}
    campaign.write_json(os.path.join(out, "meta.json"), meta)
    records = []
    with open(os.path.join(out, "runs.jsonl"), "w") as runs:
        for n, ranks in enumerate(counts, 1):
            for name, (variant, extra) in CONFIGURATIONS.items():
                print(f"== [{n}/{len(counts)}] {ranks} ranks, {name}", flush=True)
                record = {"ranks": ranks, "configuration": name}
                try:
                    record.update(run_job(prefixes[variant], program, ranks, transport, extra, name == "spc",
                                          args.timeout))
                except (RuntimeError, OSError, subprocess.SubprocessError) as error:
                    print(f"scale: {error}", flush=True)
                    record["failed"] = str(error)[-4000:]
                records.append(record)
                runs.write(json.dumps(record) + "\n")
                runs.flush()
    text = (f"# Costs against ranks on one node\n\n{meta['date']}, {meta['machine']['cpu']} "
            f"({meta['machine']['cores']} cores), Open MPI {study.OMPI_VERSION}, {transport.paper_case}, commit "
            f"{meta['machine']['commit'][:12]}.\n\n```sh\n"
            + ("" if study.OMPI_VERSION == "4.1.4" else f"SPC_OMPI_VERSION={study.OMPI_VERSION} ")
            + f"python3 -m netpipe_runs.scale --ranks {args.ranks}"
            + ("" if args.transport == "vader" else f" --transport {args.transport}") + "\n```\n\n"
            + tables(records))
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    print(text)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
