#!/usr/bin/env python3
"""Jobs under Slurm across simulated nodes, one spc-exporter per node, one
Prometheus and a Pushgateway (docs/cluster.md).  The cluster is
tools/spc-simcluster's, started and stopped here (a tag, subnet and ports of
this run's own); the job is cluster_job.c in the "spc" Open MPI build with
mpi_spc_live on, held at known points.  Every value asserted is predicted
from the traffic the job was told to make: rank r sends N*(r+1) messages in
a phase of N, and where each rank runs is read from the files the ranks
wrote (rank from MPI_Comm_rank, node from gethostname), never from Slurm.

usage: check_cluster.py MODE --simcluster S --mpirun M --job J --exporter E --top T --record R --scratch DIR
                        [--mpirun-arg=ARG ...]
modes:
  launch  srun --mpi=pmix, salloc + mpirun and sbatch + mpirun on 3 nodes x 2
          ranks: Prometheus (targets by file-based service discovery) sums
          SEND by jobid to the job's total and by node to each node's ranks,
          each series labelled with Slurm's job id, its step, the rank and
          local rank; an exporter killed with SIGKILL and restarted serves the
          same totals; after the job the series are stale, the Pushgateway
          (and Prometheus through it) has the final totals, and the finalize
          CSV and spc-record name the job, step and node of every line.
  faults  scancel of a held job, a job held past its time limit (a minute:
          Slurm's unit) and kill -9 of one rank of a fourth: the exporters
          remove their files at the next sweep, and the surviving job's
          counts stay exact; two users' jobs on one node: each user's files
          are 0600 and theirs, the exporter (root) serves both, a user's
          spc-top shows only their own job.
  bad     a second exporter on a port in use says so and exits 1; a foreign
          and a damaged file in the folder are named once each, however many
          scrapes, and the job beside them is still served exactly.
  pml     launch's salloc + mpirun under pml ucx, which the --mpirun-arg
          options select (pml_mpirun_args of pvar_export/tests/meson.build),
          over tcp between the nodes (UCX_OVER_TCP): checked as in launch,
          and the report names the PML and what it does not count, the
          exporters serve no series of those; then the kill -9 of faults
          under pml ucx: the other ranks keep their counts.
In launch and pml, the finalize CSV has each rank's SEND, IRECV and user
bytes exactly, and under ob1 (launch) no line of what a PML does not count
and the exporters' series of those (the control)."""
import argparse
import atexit
import csv
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import check_live
from check_live import check, fail, http_get, stop_group

N, M, SIZE = 10, 5, 100   # messages per phase (times rank + 1), bytes per message
PORT = 9466                # each exporter listens on its own node's address
# UCX's shared-memory transports reach any process with the same kernel boot
# id (ucs_get_system_id), and the simulated nodes share this machine's
# kernel: unless told, UCX would run between them through /dev/shm.  So tcp
# (and self), on the nodes' interface, and at log level info UCX says which
# transports each connection took ("ep_cfg[N]: tag(tcp/eth0)").
UCX_OVER_TCP = ["-x", "UCX_TLS=tcp,self", "-x", "UCX_NET_DEVICES=eth0", "-x", "UCX_LOG_LEVEL=info"]


def sends(rank, phases):
    return sum(phases) * (rank + 1)


def selected_pml(mpirun_args):
    """The PML mpirun's arguments select: the value of their --mca pml."""
    for at in range(len(mpirun_args) - 2):
        if mpirun_args[at] in ("--mca", "-mca") and mpirun_args[at + 1] == "pml":
            return mpirun_args[at + 2]
    return "ob1"


def as_environment(mpirun_args):
    """mpirun's --mca NAME VALUE and -x NAME=VALUE as the environment that
    sets them for ranks srun starts."""
    env, rest = {}, list(mpirun_args)
    while rest:
        if rest[0] in ("--mca", "-mca") and len(rest) >= 3:
            env["OMPI_MCA_" + rest[1]] = rest[2]
            rest = rest[3:]
        elif rest[0] == "-x" and len(rest) >= 2 and "=" in rest[1]:
            name, value = rest[1].split("=", 1)
            env[name] = value
            rest = rest[2:]
        else:
            fail(f"no environment for the mpirun argument {rest[0]}")
    return env


# --- the cluster ------------------------------------------------------------------

class Cluster:
    """spc-simcluster up 3 nodes of 2 CPUs each; down in stop()."""

    def __init__(self, args, mode_index, nodes=3, cpus=2):
        self.args, self.nodes = args, nodes
        self.dir = os.path.join(args.scratch, "cluster")
        if os.path.exists(os.path.join(self.dir, "etc", "slurm.conf")):  # left by a killed run
            subprocess.run([args.simcluster, "down", self.dir], capture_output=True, timeout=120)
        shutil.rmtree(self.dir, ignore_errors=True)
        pid = os.getpid()
        # A tag, subnet and slurmctld port of this run's own: two runs cannot collide.
        self.tag = f"c{pid & 0xfff:03x}{mode_index}"
        self.net = f"10.77.{10 + (pid * 3 + 120 + mode_index) % 240}"
        self.port = check_live.free_port()
        # Job ids of this run's own too: Open MPI names its shared-memory
        # segments after the node (n1 in every cluster) and the job, in the
        # /dev/shm all clusters share (two runs' job 1 on n1 crashed each other)
        first_job = 1 + (pid % 50000) * 1000 + mode_index * 100
        started = time.monotonic()
        up = subprocess.run([args.simcluster, "up", str(nodes), self.dir, "--tag", self.tag, "--net", self.net,
                             "--port", str(self.port), "--cpus", str(cpus), "--first-job-id", str(first_job)],
                            capture_output=True, text=True, timeout=120)
        print(up.stdout + up.stderr, flush=True)
        if up.returncode != 0:
            self.stop()
            fail(f"spc-simcluster up failed: {up.stderr}")
        print(f"cluster up in {time.monotonic() - started:.1f} s", flush=True)
        self.env = dict(os.environ, SLURM_CONF=os.path.join(self.dir, "etc", "slurm.conf"))
        self.exporters = {}

    def address(self, k):
        return f"{self.net}.{10 + k}"

    def slurm(self, *command, timeout=60):
        result = subprocess.run(list(command), capture_output=True, text=True, env=self.env, timeout=timeout)
        print(f"$ {' '.join(command)} -> {result.returncode}\n{result.stdout}{result.stderr}", flush=True)
        return result

    def start_exporter(self, k, live, pushgateway=None):
        """spc-exporter on node k (under its hostname, in its namespace)."""
        wrap = [self.args.simcluster, "run", self.dir, str(k)]
        extra = ["--sweep", "1"] + (["--pushgateway", pushgateway] if pushgateway else [])
        exporter = Exporter(self.args, live, f"{self.address(k)}:{PORT}", wrap, extra)
        self.exporters[k] = exporter
        return exporter

    def stop(self):
        for exporter in self.exporters.values():
            exporter.stop()
        down = subprocess.run([self.args.simcluster, "down", self.dir], capture_output=True, text=True,
                              timeout=120)
        print(down.stdout + down.stderr, flush=True)
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        runtime = f"/run/spc-simcluster/{self.tag}"
        check(self.tag + "-" not in left and not os.path.exists(runtime),
              f"nothing of the cluster is left: no namespace {self.tag}-*, no {runtime}")


class Exporter(check_live.Exporter):
    """check_live's exporter, with options and its stderr kept."""

    def __init__(self, args, live, listen, wrap, extra):
        self.errors = tempfile.NamedTemporaryFile(dir=args.scratch, prefix="exporter-", suffix=".err",
                                                  delete=False)
        command = [*wrap, args.exporter, "--listen", listen, "--dir", live, *extra]
        print("$ " + " ".join(command), flush=True)
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.errors, text=True,
                                     start_new_session=True)
        line = self.proc.stdout.readline()
        print(line.strip(), flush=True)
        match = re.search(r"serving (http://\S+/metrics)", line)
        if not match:
            self.stop()
            fail(f"spc-exporter did not start: {line}{self.stderr()}")
        self.url = match.group(1)
        self.address = self.url.split("/")[2]

    def stderr(self):
        with open(self.errors.name, errors="replace") as f:
            return f.read()


def series_of(counters, text):
    """Those of counters (names without OMPI_SPC_) of which an exposition
    TEXT has a series."""
    return [c for c in counters if re.search(rf"^ompi_spc_{c.lower()}(_total|_seconds_total)?{{", text, re.M)]


def samples(text, name):
    """[(labels dict, value)] of metric NAME in an exposition TEXT."""
    found = []
    for line in text.splitlines():
        match = re.match(re.escape(name) + r"\{(.*)\} (\S+)$", line)
        if match:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(1)))
            found.append((labels, float(match.group(2))))
    return found


# --- Prometheus and the Pushgateway -------------------------------------------------

class Pushgateway:
    def __init__(self, args, host):
        binary = shutil.which("prometheus-pushgateway")
        if binary is None:
            fail("Debian's prometheus-pushgateway is not installed (install_deps.sh installs it)")
        self.folder = tempfile.mkdtemp(dir=args.scratch, prefix="pushgateway-")
        self.address = f"{host}:{check_live.free_port(host)}"
        self.log = open(os.path.join(self.folder, "pushgateway.log"), "w")
        command = [binary, f"--web.listen-address={self.address}",
                   f"--persistence.file={self.folder}/pushgateway.data", "--log.level=warn"]
        print("$ " + " ".join(command), flush=True)
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                http_get(f"http://{self.address}/-/ready", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        fail("the Pushgateway did not become ready")

    def metrics(self):
        return http_get(f"http://{self.address}/metrics")

    def stop(self):
        stop_group(self.proc, 10)


class Prometheus(check_live.Prometheus):
    """Debian's prometheus: the exporters through file-based service
    discovery (the targets file a site's configuration tool writes) and
    the Pushgateway with honor_labels, every second."""

    def __init__(self, args, targets, pushgateway):
        self.folder = tempfile.mkdtemp(dir=args.scratch, prefix="prometheus-")
        self.targets = os.path.join(self.folder, "ompi-spc-nodes.json")
        with open(self.targets, "w") as f:
            json.dump([{"targets": targets, "labels": {"cluster": "spcsim"}}], f)
        self.start("scrape_configs:\n"
                   "  - job_name: ompi-spc\n"
                   f"    file_sd_configs:\n      - files: ['{self.targets}']\n"
                   "  - job_name: pushgateway\n    honor_labels: true\n"
                   f"    static_configs:\n      - targets: ['{pushgateway}']\n")


def by_labels(result, *labels):
    return {tuple(s["metric"].get(label) for label in labels): float(s["value"][1]) for s in result}


# --- jobs -------------------------------------------------------------------------------

def live_env(cluster, live, dump):
    """The environment a job's ranks get: live counters on (kept for the
    Pushgateway), every counter, the finalize CSV, TCP on the nodes' subnet."""
    env = dict(cluster.env)
    env.update({"OMPI_MCA_mpi_spc_live": "1", "OMPI_MCA_mpi_spc_live_dir": live,
                "OMPI_MCA_mpi_spc_live_keep": "1", "OMPI_MCA_mpi_spc_attach": "all",
                "OMPI_MCA_mpi_spc_dump_enabled": "1", "OMPI_MCA_mpi_spc_dump_file": dump,
                "OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_btl_tcp_if_include": cluster.net + ".0/24",
                "OMPI_MCA_oob_tcp_if_include": cluster.net + ".0/24"})
    return env


class Job(check_live.Job):
    """cluster_job launched one of three ways, in the background, held
    (go, wait and end as check_live's job, plus Slurm's cancel); with
    mpirun_args, srun's ranks get them as environment."""

    def __init__(self, args, cluster, how, ranks, nodes, phases, live, name, user=None, slurm_options=(),
                 mpirun_args=()):
        self.args, self.cluster, self.ranks, self.phases, self.name = args, cluster, ranks, phases, name
        self.hold = tempfile.mkdtemp(dir=args.scratch, prefix=f"hold-{name}-")
        self.dump = os.path.join(self.hold, "final.csv")
        os.chmod(self.hold, 0o777)
        env = live_env(cluster, live, self.dump)
        if how == "srun":
            env.update(as_environment(mpirun_args))
        program = [args.job, "--phases", ",".join(map(str, phases)), "--hold", self.hold, "--size", str(SIZE)]
        prefix = os.path.dirname(os.path.dirname(args.mpirun))
        mpirun = [args.mpirun, "-np", str(ranks), "--prefix", prefix, "--map-by", "slot", *mpirun_args]
        job_name = f"spc-{cluster.tag}-{name}"
        if how == "srun":
            command = ["srun", f"--job-name={job_name}", f"-N{nodes}", f"-n{ranks}", *slurm_options, "--mpi=pmix",
                       *program]
        elif how == "salloc":
            command = ["salloc", f"--job-name={job_name}", f"-N{nodes}", f"-n{ranks}", *mpirun, *program]
        else:  # sbatch: the script runs on the allocation's first node and says which
            script = os.path.join(self.hold, "job.sh")
            with open(script, "w") as f:
                f.write("#!/bin/sh\nhostname >" + os.path.join(self.hold, "batch-host") + "\n"
                        "exec " + " ".join(mpirun + program) + "\n")
            os.chmod(script, 0o755)
            command = ["sbatch", "--wait", f"--job-name={job_name}", f"-N{nodes}", f"-n{ranks}",
                       "-o", os.path.join(self.hold, "batch.log"), script]
        if user:
            command = ["setpriv", "--reuid", user, "--regid", "nogroup", "--clear-groups"] + command
        self.output = open(os.path.join(self.hold, "launch.log"), "w")
        print("$ " + " ".join(command), flush=True)
        # another user's job starts in a folder it may enter (srun gives its
        # tasks the caller's folder)
        self.proc = subprocess.Popen(command, stdout=self.output, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True, cwd=args.scratch if user else None)
        self.slurm_id = None

    def log(self):
        text = open(self.output.name, errors="replace").read()
        batch = os.path.join(self.hold, "batch.log")
        return text + (open(batch, errors="replace").read() if os.path.exists(batch) else "")

    def wait_ready(self, phase, timeout=120):
        """{rank: (pid, host)} once every rank wrote its ready file."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            paths = {r: os.path.join(self.hold, f"ready.{phase}.{r}") for r in range(self.ranks)}
            if all(os.path.exists(p) for p in paths.values()):
                placed = {}
                for r, p in paths.items():
                    pid, host = open(p).read().split()
                    placed[r] = (int(pid), host)
                if self.slurm_id is None:
                    queue = self.cluster.slurm("squeue", "-h", "-n", f"spc-{self.cluster.tag}-{self.name}", "-o", "%i")
                    self.slurm_id = queue.stdout.strip()
                return placed
            if self.proc.poll() is not None:
                cores = glob.glob(os.path.join(self.cluster.dir, "log", "core*"))
                crashed = f"\na Slurm daemon dumped core: {cores}" if cores else ""
                fail(f"job {self.name} ended (status {self.proc.returncode}) before phase {phase}:\n{self.log()}"
                     + crashed)
            time.sleep(0.05)
        self.end()
        fail(f"job {self.name} did not reach phase {phase} in {timeout} s:\n{self.log()}")

    def end(self):
        if self.proc.poll() is None and self.slurm_id:
            self.cluster.slurm("scancel", self.slurm_id)
        super().end()


def expected_identity(placed, how, batch_host=None):
    """{rank: (node, local_rank, step)} from where the ranks ran: the local
    rank is the rank's place among the job's ranks on its node, by rank;
    the step Slurm's: 0 for srun's ranks and mpirun's daemons, "batch" for
    the ranks mpirun starts beside itself in a batch script."""
    identity = {}
    for rank, (_, host) in sorted(placed.items()):
        local = sum(1 for r, (_, h) in placed.items() if h == host and r < rank)
        step = "batch" if how == "sbatch" and host == batch_host else "0"
        identity[rank] = (host, local, step)
    return identity


# --- modes --------------------------------------------------------------------------------

def fresh_live(args, name):
    live = os.path.join(args.scratch, name)
    shutil.rmtree(live, ignore_errors=True)
    os.makedirs(live)
    os.chmod(live, 0o1777)  # as /dev/shm: every user's ranks write here
    return live


def launch(args):
    launches(args, 1, ("srun", "salloc", "sbatch"), [])


def pml(args):
    # cm's arguments pin libfabric to the loopback interface: one node only
    if selected_pml(args.mpirun_arg) != "ucx":
        fail(f"pml: the --mpirun-arg options select pml {selected_pml(args.mpirun_arg)}, not ucx")
    launches(args, 3, ("salloc",), args.mpirun_arg + UCX_OVER_TCP, kill=True)


def launches(args, mode_index, hows, mpirun_args, kill=False):
    """Each launch of hows, one job after the other, on one cluster; then,
    with kill, a rank killed."""
    cluster = Cluster(args, mode_index)
    pushgateway = prometheus = None
    jobs = []
    try:
        live = fresh_live(args, "live-launch")
        pushgateway = Pushgateway(args, cluster.net + ".1")
        for k in (1, 2, 3):
            cluster.start_exporter(k, live, pushgateway=pushgateway.address)
        prometheus = Prometheus(args, [e.address for e in cluster.exporters.values()], pushgateway.address)
        text = http_get(cluster.exporters[1].url)
        check("ompi_spc_exporter_series 0\n" in text and "ompi_spc_send_total{" not in text,
              "control: with no job an exporter serves no rank series")
        for how in hows:
            job = Job(args, cluster, how, 6, 3, [N, M], live, how, mpirun_args=mpirun_args)
            jobs.append(job)
            one_launch(args, cluster, prometheus, pushgateway, job, how, live, selected_pml(mpirun_args))
        if kill:
            kill_one_rank(args, cluster, live, jobs, {}, mpirun_args, selected_pml(mpirun_args))
    finally:
        for job in jobs:
            job.end()
        for server in (prometheus, pushgateway):
            if server:
                server.stop()
        cluster.stop()


def one_launch(args, cluster, prometheus, pushgateway, job, how, live, pml):
    # What the job's PML does not count; under ob1, the control, those it counts.
    absent = check_live.NOT_COUNTED[pml] or check_live.OB1_ONLY
    placed = job.wait_ready(0)
    slurm_id = job.slurm_id
    check(bool(re.fullmatch(r"\d+", slurm_id or "")), f"{how}: Slurm's job id {slurm_id} from squeue")
    batch_host = open(os.path.join(job.hold, "batch-host")).read().strip() if how == "sbatch" else None
    identity = expected_identity(placed, how, batch_host)
    hosts = sorted({host for host, _, _ in identity.values()})
    check(hosts == ["n1", "n2", "n3"], f"{how}: the 6 ranks run on n1, n2 and n3 ({hosts})")
    # spc-record on n1, from now until the job ends
    record_csv = os.path.join(job.hold, "record-n1.csv")
    recorder = subprocess.Popen([args.simcluster, "run", cluster.dir, "1", args.record, "--dir", live,
                                 "--job", slurm_id, "--interval", "200", "--out", record_csv, "--quiet",
                                 "--wait", "30"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
    # while held after phase 0
    total = sum(sends(r, [N]) for r in range(6))
    result = prometheus.wait_for(f'sum by (jobid) (ompi_spc_send_total{{job="ompi-spc",jobid="{slurm_id}"}})',
                                 lambda r: by_labels(r, "jobid") == {(slurm_id,): total})
    check(by_labels(result, "jobid") == {(slurm_id,): total},
          f"{how}: sum by (jobid) of SEND is the job's {total} across 3 nodes (Slurm's job id {slurm_id})")
    per_node = {(h,): float(sum(sends(r, [N]) for r, (host, _, _) in identity.items() if host == h)) for h in hosts}
    result = prometheus.wait_for(f'sum by (node) (ompi_spc_send_total{{job="ompi-spc",jobid="{slurm_id}"}})',
                                 lambda r: by_labels(r, "node") == per_node)
    check(by_labels(result, "node") == per_node, f"{how}: sum by (node) is each node's ranks' ({per_node})")
    series = prometheus.query(f'ompi_spc_send_total{{job="ompi-spc",jobid="{slurm_id}"}}')
    seen = {int(s["metric"]["rank"]): (s["metric"]["node"], int(s["metric"]["local_rank"]), s["metric"]["step"])
            for s in series}
    check(seen == identity, f"{how}: each rank's node, local_rank and step as the ranks say ({seen})")
    exported_by = {int(s["metric"]["rank"]): s["metric"]["instance"] for s in series}
    check(all(exported_by[r] == cluster.exporters[int(identity[r][0][1:])].address for r in identity),
          f"{how}: each rank served by its own node's exporter (one target per node)")
    # SIGKILL an exporter mid-job: a new one serves the same totals
    node2 = cluster.exporters[2]
    os.killpg(node2.proc.pid, signal.SIGKILL)
    node2.proc.wait()
    cluster.start_exporter(2, live, pushgateway=node2_push(cluster))
    text = http_get(cluster.exporters[2].url)
    mine = {int(labels["rank"]): value for labels, value in samples(text, "ompi_spc_send_total")
            if labels["jobid"] == slurm_id}
    want = {r: float(sends(r, [N])) for r, (host, _, _) in identity.items() if host == "n2"}
    check(mine == want, f"{how}: n2's exporter killed (SIGKILL) and restarted serves the same SEND {want}")
    series = series_of(absent, text)
    check(series == (absent if pml == "ob1" else []),
          f"{how}: under pml {pml}, of {absent} n2's exporter serves {series}")
    served = [int(v) for v in re.findall(r"^ompi_spc_exporter_series (\d+)$", text, re.M)]
    lines = len([line for line in text.splitlines() if re.match(r"ompi_spc_(?!exporter_)\w+\{", line)])
    check(served == [lines] and lines % 2 == 0 and lines > 0,
          f"{how}: ompi_spc_exporter_series says the rank series served ({served}, {lines} lines)")
    # phase 1
    job.go(0)
    job.wait_ready(1)
    total = sum(sends(r, [N, M]) for r in range(6))
    result = prometheus.wait_for(f'sum(ompi_spc_send_total{{job="ompi-spc",jobid="{slurm_id}"}})',
                                 lambda r: r and float(r[0]["value"][1]) == total)
    check(result and float(result[0]["value"][1]) == total, f"{how}: after M more, the sum is {total}")
    job.go(1)
    check(job.wait() == 0, f"{how}: the job ends cleanly\n{job.log() if job.proc.returncode else ''}")
    # after the job: the exporters' series are gone, the Pushgateway has the totals
    gone = prometheus.wait_for(f'ompi_spc_send_total{{job="ompi-spc",jobid="{slurm_id}"}}', lambda r: r == [])
    check(gone == [], f"{how}: after the job its series are gone from Prometheus (stale)")
    final = {r: float(sends(r, [N, M])) for r in range(6)}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pushed = {int(labels["rank"]): value for labels, value in samples(pushgateway.metrics(), "ompi_spc_send_total")
                  if labels.get("jobid") == slurm_id}
        if pushed == final:
            break
        time.sleep(0.5)
    check(pushed == final, f"{how}: the Pushgateway has every rank's final SEND ({pushed})")
    result = prometheus.wait_for(f'sum by (node) (ompi_spc_send_total{{job="ompi_spc_final",jobid="{slurm_id}"}})',
                                 lambda r: len(r) == 3)
    want = {(h,): float(sum(sends(r, [N, M]) for r, (host, _, _) in identity.items() if host == h)) for h in hosts}
    check(by_labels(result, "node") == want, f"{how}: and Prometheus has them from it after the job, per node")
    left = [f for f in os.listdir(live) if f.startswith(check_live.PREFIX)]
    check(left == [], f"{how}: the pushed files are removed ({left})")
    # spc-record's last sample on n1: the final values, with job, step, node and local rank
    try:
        out, _ = recorder.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        stop_group(recorder, 5)
        out = "(did not end)"
    print(out, flush=True)
    with open(record_csv) as f:
        rows = list(csv.DictReader(f))
    last = {}  # each rank's last sample: one rank may finalize a tick before another
    for r in rows:
        last[r["rank"]] = max(last.get(r["rank"], -1), int(r["sample"]))
    recorded = {int(r["rank"]): (int(r["value"]), r["jobid"], r["step"], r["node"], int(r["local_rank"]))
                for r in rows if int(r["sample"]) == last[r["rank"]] and r["counter"] == "OMPI_SPC_SEND"}
    want = {r: (sends(r, [N, M]), slurm_id, step, host, local) for r, (host, local, step) in identity.items()
            if host == "n1"}
    check(recorder.returncode == 0 and recorded == want,
          f"{how}: spc-record on n1 ends with the job; its last sample has n1's ranks' final SEND with job, "
          f"step, node and local rank ({recorded})")
    # the finalize table's job line (rank 0's output: srun's, salloc's, or the batch log)
    steps = "batch and 0" if how == "sbatch" else "0"
    line = f"job {slurm_id} (Slurm), step {steps}, on 3 nodes: n1, n2, n3"
    check(re.search("^" + re.escape(line) + "$", job.log(), re.M) is not None,
          f"{how}: the finalize table ends with '{line}'")
    # the finalize CSV names job, step and node of every line
    with open(job.dump) as f:
        rows = list(csv.DictReader(f))
    sent = {int(r["rank"]): (int(r["value"]), r["jobid"], r["step"], r["node"]) for r in rows
            if r["counter"] == "OMPI_SPC_SEND"}
    want = {r: (sends(r, [N, M]), slurm_id, identity[r][2], identity[r][0]) for r in range(6)}
    check(sent == want, f"{how}: the finalize CSV's SEND rows carry job, step and node ({sent})")
    values = {(int(r["rank"]), r["counter"].removeprefix("OMPI_SPC_")): int(r["value"]) for r in rows}
    want = {}
    for r in range(6):
        out, into = sends(r, [N, M]), sends((r - 1) % 6, [N, M])  # the ring: from rank r - 1
        want.update({(r, "SEND"): out, (r, "IRECV"): into, (r, "BYTES_SENT_USER"): out * SIZE,
                     (r, "BYTES_RECEIVED_USER"): into * SIZE})
    got = {key: values.get(key) for key in want}
    check(got == want, f"{how}: under pml {pml} the finalize CSV has each rank's SEND, IRECV and user bytes "
                       f"exactly ({got})")
    rows_of = sorted({name for _, name in values} & set(absent))
    check(rows_of == (sorted(absent) if pml == "ob1" else []),
          f"{how}: under pml {pml}, of {absent} the finalize CSV has rows of {rows_of}")
    note = [(name, sorted(names.split(", ")))
            for name, names in re.findall(r"^\(not counted by pml (\w+): (.*)\)$", job.log(), re.M)]
    check(note == ([] if pml == "ob1" else [(pml, sorted("OMPI_SPC_" + c for c in absent))]),
          f"{how}: the finalize table names what pml {pml} does not count, nothing under ob1 ({note})")
    if pml == "ucx":
        # every connection's transports as UCX_OVER_TCP asks: tcp between the ranks, self within one
        configs = re.findall(r"ep_cfg\[\d+\]: (.*)$", job.log(), re.M)
        lanes = set(re.findall(r"\b(\w+)/(\w+)\b", " ".join(configs)))
        check(configs and ("tcp", "eth0") in lanes and {tl for tl, _ in lanes} <= {"tcp", "self"},
              f"{how}: UCX connected the ranks over tcp on the nodes' eth0 ({sorted(lanes)}, "
              f"{len(configs)} connection configurations)")


def scrape_all(cluster):
    """{(slurm job id, rank): SEND} over every node's exporter, and the
    exporters' texts."""
    found, texts = {}, {}
    for k, exporter in cluster.exporters.items():
        texts[k] = http_get(exporter.url)
        for labels, value in samples(texts[k], "ompi_spc_send_total"):
            found[(labels["jobid"], int(labels["rank"]))] = value
    return found, texts


def wait_until(what, predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = what()
        if predicate(value):
            return value
        time.sleep(0.3)
    return what()


def faults(args):
    cluster = Cluster(args, 2, cpus=3)
    jobs = []
    try:
        live = fresh_live(args, "live-faults")
        for k in (1, 2, 3):
            cluster.start_exporter(k, live)
        # each launched once the one before runs (see two_users)
        for name, options in (("survivor", []), ("cancelled", []),
                              # Slurm's time limits are in minutes: this one ends a minute or so from now
                              ("timelimit", ["--time=1"])):
            jobs.append(Job(args, cluster, "srun", 3, 3, [N, M], live, name, slurm_options=options))
            jobs[-1].wait_ready(0)
        survivor, cancelled, timed = jobs
        timed_started = time.monotonic()
        expected = {(job.slurm_id, r): float(sends(r, [N])) for job in (survivor, cancelled, timed) for r in range(3)}
        seen = wait_until(lambda: scrape_all(cluster)[0], lambda v: v == expected)
        check(seen == expected, f"control: the three held jobs read exactly ({seen})")
        # scancel: Slurm kills the ranks; their files go at the next sweep
        check(cluster.slurm("scancel", cancelled.slurm_id).returncode == 0, "scancel of a held job")
        cancelled.wait()
        left = {key: value for key, value in expected.items() if key[0] != cancelled.slurm_id}
        seen = wait_until(lambda: scrape_all(cluster)[0], lambda v: v == left)
        check(seen == left, f"the cancelled job's series are gone, the others' exact ({seen})")
        want = {key: value for key, value in expected.items() if key[0] == survivor.slurm_id}
        files = wait_until(lambda: sorted(f for f in os.listdir(live) if f.startswith(check_live.PREFIX)),
                           lambda v: len(v) == 6)
        check(len(files) == 6, f"the cancelled job's files are removed by the exporters' sweep, the survivor's "
                               f"and the time-limited job's 3 each stay ({files})")
        removed = sum(e.stderr().count("its process is gone") for e in cluster.exporters.values())
        check(removed == 3, f"each node's exporter says it removed one dead rank's file ({removed} lines)")
        # the time limit: Slurm ends the job (SIGTERM, then SIGKILL after KillWait)
        try:
            timed.proc.wait(timeout=max(1, 200 - (time.monotonic() - timed_started)))
        except subprocess.TimeoutExpired:
            pass
        check(timed.proc.poll() is not None and "TIME LIMIT" in timed.log(),
              f"Slurm ends the job at its time limit, after {time.monotonic() - timed_started:.0f} s held")
        seen = wait_until(lambda: scrape_all(cluster)[0], lambda v: v == want)
        check(seen == want, f"the time-limited job's series are gone, the survivor's exact ({seen})")
        files = wait_until(lambda: sorted(f for f in os.listdir(live) if f.startswith(check_live.PREFIX)),
                           lambda v: len(v) == 3)
        check(len(files) == 3, f"the time-limited job's files are removed too ({files})")
        kill_one_rank(args, cluster, live, jobs, want)
        survivor.go(0)
        survivor.wait_ready(1)
        survivor.go(1)
        check(survivor.wait() == 0, "the survivor ends cleanly")
        two_users(args, cluster, live)
    finally:
        for job in jobs:
            job.end()
        cluster.stop()


def kill_one_rank(args, cluster, live, jobs, others, mpirun_args=(), pml="ob1"):
    """kill -9 of one rank of a job of 3 on 3 nodes, held, under the PML of
    mpirun_args, beside the held jobs whose series others are: the killed
    rank's series goes, every other rank's stays exact."""
    killed = Job(args, cluster, "srun", 3, 3, [N, M], live, "killed", mpirun_args=mpirun_args)
    jobs.append(killed)
    placed = killed.wait_ready(0)
    want = dict(others)
    want.update({(killed.slurm_id, r): float(sends(r, [N])) for r in range(3)})
    seen, texts = wait_until(lambda: scrape_all(cluster), lambda v: v[0] == want)
    check(seen == want, f"control: the job whose rank is killed reads exactly ({seen})")
    if pml != "ob1":  # the ranks srun started run that PML: no series of what it does not count
        series = [c for text in texts.values() for c in series_of(check_live.NOT_COUNTED[pml], text)]
        check(series == [], f"the job whose rank is killed runs pml {pml}: no series of {series}")
    os.kill(placed[1][0], signal.SIGKILL)
    gone = wait_until(lambda: scrape_all(cluster)[0], lambda v: (killed.slurm_id, 1) not in v)
    check((killed.slurm_id, 1) not in gone, "the killed rank's series is gone at the next sweep")
    check({k: v for k, v in gone.items() if k[0] != killed.slurm_id} == others,
          "the other jobs' counts are intact")
    # Slurm leaves the killed rank's step running (no --kill-on-bad-exit):
    # its other ranks, held, still read what they sent
    survivors = {k: v for k, v in gone.items() if k[0] == killed.slurm_id}
    check(survivors == {(killed.slurm_id, 0): float(sends(0, [N])), (killed.slurm_id, 2): float(sends(2, [N]))},
          f"the killed rank's job's other ranks keep their counts ({survivors})")
    killed.end()


def two_users(args, cluster, live):
    """A root job and a job of user nobody on node n1."""
    public = tempfile.mkdtemp(prefix="spc-cluster-users-")
    try:
        os.chmod(public, 0o755)
        top = os.path.join(public, "spc-top")
        shutil.copy(args.top, top)
        job_copy = os.path.join(public, "cluster_job")
        shutil.copy(args.job, job_copy)
        other = argparse.Namespace(**vars(args))
        other.job, other.scratch = job_copy, public
        users_live = os.path.join(public, "live")
        os.makedirs(users_live)
        os.chmod(users_live, 0o1777)
        exporter = cluster.exporters[1]
        exporter.stop()
        exporter = cluster.start_exporter(1, users_live)
        # both on n1, one CPU each (-O: 2 ranks on it)
        on_n1 = ["-w", "n1", "-O"]
        # one launch at a time: Debian 12's slurmd (22.05.8), given two steps'
        # launch requests in the same instant, corrupted its heap and aborted
        # once in CI (malloc in nodelist_find beside another thread's log write)
        root_job = Job(other, cluster, "srun", 2, 1, [N], users_live, "root", slurm_options=on_n1)
        user_job = None
        try:
            root_job.wait_ready(0)
            user_job = Job(other, cluster, "srun", 2, 1, [N], users_live, "nobody", user="nobody",
                           slurm_options=on_n1)
            user_job.wait_ready(0)
            owners = {}
            for name in os.listdir(users_live):
                st = os.stat(os.path.join(users_live, name))
                owners.setdefault(st.st_uid, set()).add(oct(st.st_mode & 0o777))
            nobody = int(subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True).stdout)
            check(owners == {0: {"0o600"}, nobody: {"0o600"}},
                  f"each user's files are 0600 and theirs ({owners})")
            text = http_get(exporter.url)
            seen = {(labels["jobid"], int(labels["rank"])): value
                    for labels, value in samples(text, "ompi_spc_send_total")}
            want = {(job.slurm_id, r): float(sends(r, [N])) for job in (root_job, user_job) for r in range(2)}
            check(seen == want, f"the exporter (root) serves both users' jobs exactly ({seen})")
            on_node1 = [args.simcluster, "run", cluster.dir, "1"]  # spc-top shows its own node's jobs
            mine = subprocess.run([*on_node1, "setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups",
                                   top, "--once", "--all", "--dir", users_live],
                                  capture_output=True, text=True, timeout=60)
            print(mine.stdout + mine.stderr, flush=True)
            jobs_shown = check_live.parse_top(mine.stdout)
            check(mine.returncode == 0 and len(jobs_shown) == 1 and
                  next(iter(jobs_shown.values()))["values"]["OMPI_SPC_SEND"] == {0: N, 1: 2 * N, "all": 3 * N}
                  and f"Slurm job {user_job.slurm_id} " in mine.stdout,
                  "nobody's spc-top shows its own job only, exactly, with no error")
            control = subprocess.run([*on_node1, top, "--once", "--all", "--dir", users_live], capture_output=True,
                                     text=True, timeout=60)
            print(control.stdout + control.stderr, flush=True)
            check(len(check_live.parse_top(control.stdout)) == 2, "control: root's spc-top shows both jobs")
            for job in (root_job, user_job):
                job.go(0)
            check(root_job.wait() == 0 and user_job.wait() == 0, "both users' jobs end cleanly")
        finally:
            root_job.end()
            if user_job:
                user_job.end()
    finally:
        shutil.rmtree(public, ignore_errors=True)


def bad(args):
    """Without Slurm: mpirun on this machine, exporters on loopback."""
    live = fresh_live(args, "live-bad")
    port = check_live.free_port()
    first = Exporter(args, live, f"127.0.0.1:{port}", [], ["--sweep", "0"])
    job = None
    try:
        try:
            second = subprocess.run([args.exporter, "--listen", f"127.0.0.1:{port}", "--dir", live],
                                    capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:  # it listens too (SO_REUSEPORT) and serves: killed by run()
            second = subprocess.CompletedProcess([], -1, "", "still serving after 10 s")
        check(second.returncode == 1 and "Address already in use" in second.stderr
              and "another spc-exporter" in second.stderr,
              f"a second exporter on port {port} says so and exits 1 ({second.returncode}: {second.stderr.strip()})")
        check("ompi_spc_exporter_series 0" in http_get(first.url), "control: the first one still serves")
        hold = tempfile.mkdtemp(dir=args.scratch, prefix="hold-bad-")
        dump = os.path.join(hold, "final.csv")
        env = dict(os.environ, OMPI_MCA_mpi_spc_live="1", OMPI_MCA_mpi_spc_live_dir=live,
                   OMPI_MCA_mpi_spc_attach="all", OMPI_MCA_mpi_spc_dump_enabled="1",
                   OMPI_MCA_mpi_spc_dump_file=dump)
        for name in ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_LOCALID"):
            env.pop(name, None)
        command = [args.mpirun, "-np", "2", "--mca", "btl", "self,vader", args.job, "--phases", str(N),
                   "--hold", hold]
        job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               start_new_session=True)
        deadline = time.monotonic() + 60
        while not all(os.path.exists(os.path.join(hold, f"ready.0.{r}")) for r in (0, 1)):
            if time.monotonic() > deadline or job.poll() is not None:
                fail(f"the job did not reach its hold: {job.stdout.read() if job.poll() is not None else ''}")
            time.sleep(0.05)
        names = [f for f in os.listdir(live) if f.startswith(check_live.PREFIX)]
        mpi_jobid = names[0].split(".")[2]
        garbage = os.path.join(live, check_live.PREFIX + "0.garbage.0")
        with open(garbage, "wb") as f:
            f.write(bytes((i * 7919) % 251 for i in range(8192)))
        truncated = os.path.join(live, check_live.PREFIX + "0.truncated.0")
        with open(os.path.join(live, names[0]), "rb") as f:
            data = f.read()
        with open(truncated, "wb") as f:
            f.write(data[:len(data) // 3])
        for _ in range(3):
            text = http_get(first.url)
        seen = {(labels["jobid"], labels["step"], int(labels["rank"]), labels["local_rank"], labels["node"]): value
                for labels, value in samples(text, "ompi_spc_send_total")}
        host = socket.gethostname()
        want = {(mpi_jobid, "", r, str(r), host): float(sends(r, [N])) for r in (0, 1)}
        check(seen == want, f"without Slurm: jobid is mpirun's, no step, local ranks 0 and 1; exact ({seen})")
        check("ompi_spc_exporter_files_unreadable 2\n" in text, "the two bad files are counted")
        errors = first.stderr()
        check(errors.count(garbage) == 1 and errors.count(truncated) == 1
              and "not a live counter segment" in errors and "cut short or damaged" in errors,
              f"after 3 scrapes each bad file is named once, with the reason:\n{errors}")
        for path in (garbage, truncated):
            os.remove(path)
        open(os.path.join(hold, "go.0"), "w").close()
        out, _ = job.communicate(timeout=60)
        print(out, flush=True)
        check(job.returncode == 0, "the job ends cleanly")
        with open(dump) as f:
            rows = [r for r in csv.DictReader(f) if r["counter"] == "OMPI_SPC_SEND"]
        check([(r["rank"], r["value"], r["jobid"], r["step"], r["node"]) for r in rows] ==
              [(str(r), str(sends(r, [N])), mpi_jobid, "", host) for r in (0, 1)],
              "the finalize CSV names mpirun's job id, no step, and the node")
        check(re.search(rf"^job {mpi_jobid} \(mpirun\), on 1 node: {re.escape(host)}$", out, re.M) is not None,
              "the finalize table's last line names the job and its node")
        text = http_get(first.url)
        check("ompi_spc_send_total{" not in text, "after the job its series are gone from the next scrape")
        starts_and_ends(args, env, live, first)
    finally:
        if job and job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        first.stop()


def starts_and_ends(args, env, live, exporter):
    """Scrapes in a tight loop while 5 short jobs start and end: no series
    ever carries a half-set identity (a rank before MPI_Init is not
    served), and no value exceeds what its rank sends."""
    import threading
    seen, stop = [], threading.Event()

    def scraper():
        while not stop.is_set():
            seen.extend(samples(http_get(exporter.url), "ompi_spc_send_total"))

    thread = threading.Thread(target=scraper)
    thread.start()
    jobids = set()
    try:
        for _ in range(5):
            hold = tempfile.mkdtemp(dir=args.scratch, prefix="hold-short-")
            run = subprocess.Popen([args.mpirun, "-np", "2", "--mca", "btl", "self,vader", args.job, "--phases",
                                    str(N), "--hold", hold], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
            deadline = time.monotonic() + 60
            while not all(os.path.exists(os.path.join(hold, f"ready.0.{r}")) for r in (0, 1)):
                if run.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            time.sleep(0.2)  # held a moment: scrapes of a running job too, not only of starts and ends
            open(os.path.join(hold, "go.0"), "w").close()
            try:
                status = run.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(run.pid, signal.SIGKILL)
                status = run.wait()
            check(status == 0, "a short job ends cleanly")
    finally:
        stop.set()
        thread.join()
    for labels, _ in seen:
        jobids.add(labels.get("jobid"))
    bad = [(labels, value) for labels, value in seen
           if not re.fullmatch(r"\d+", labels.get("jobid", "")) or labels.get("mpi_jobid") != labels.get("jobid")
           or labels.get("rank") not in ("0", "1") or labels.get("local_rank") != labels.get("rank")
           or labels.get("step") != "" or value != int(value) or not 0 <= value <= sends(int(labels["rank"]), [N])]
    check(len(seen) > 0 and not bad,
          f"scraped while 5 jobs started and ended: {len(seen)} samples of {len(jobids)} jobs, none with a half-set "
          f"identity or an impossible value ({bad[:3]})")


def node2_push(cluster):
    return cluster.exporters[1].proc.args[cluster.exporters[1].proc.args.index("--pushgateway") + 1]


def others_can_enter(path):
    """Whether a user other than root may enter path: every folder on the
    way has its execute bit for others."""
    path = os.path.abspath(path)
    while True:
        if not os.stat(path).st_mode & 0o001:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["launch", "faults", "bad", "pml"])
    for name in ("simcluster", "mpirun", "job", "top", "record", "exporter", "scratch"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--mpirun-arg", action="append", default=[],
                        help="an mpirun argument that selects the PML of the pml mode (repeat it)")
    args = parser.parse_args()
    if os.getuid() != 0:
        fail("needs root: the cluster's daemons and namespaces")
    # A fresh scratch folder each run; a cluster a killed run left is stopped first.
    if os.path.exists(os.path.join(args.scratch, "cluster", "etc", "slurm.conf")):
        subprocess.run([args.simcluster, "down", os.path.join(args.scratch, "cluster")], capture_output=True,
                       timeout=120)
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    if not others_can_enter(args.scratch):
        # The second user's job reads the cluster's slurm.conf and runs from
        # here: a scratch folder inside a private tree (a fresh clone under
        # a mktemp folder) would shut it out.
        args.scratch = tempfile.mkdtemp(prefix="spc-cluster-scratch-")
        os.chmod(args.scratch, 0o755)
        atexit.register(shutil.rmtree, args.scratch, True)
        print(f"scratch: {args.scratch} (the given one is closed to other users)", flush=True)
    globals()[args.mode](args)
    print(f"{len(check_live.FAILURES)} failed" if check_live.FAILURES else "all checks passed", flush=True)
    sys.exit(1 if check_live.FAILURES else 0)


if __name__ == "__main__":
    main()
