"""What the overhead study compares (Open MPI builds, counter configurations,
transports) and how to run an MPI program in one of them: the one list every
study driver uses, and the project's contracts they read instead of copying."""
import json
import os
import re
import subprocess
from typing import NamedTuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_OMPI = os.path.join(REPO, "ompi_patches", "build_ompi.sh")
# The Open MPI the drivers build and run (build_ompi.sh --ompi): SPC_OMPI_VERSION.
OMPI_VERSION = os.environ.get("SPC_OMPI_VERSION", "4.1.4")
# The variable every run of a campaign gets, of a length drawn per run, so
# that the stack and environment of the ranks start at another place (layout
# randomisation); mpirun forwards it to the ranks.
ENV_PAD_VARIABLE = "SPC_ENV_PAD"


def read_lines(path):
    """The lines of a list file, without blank lines and # comments."""
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]


def read_env_file(path):
    """KEY=VALUE lines of an environment file."""
    return dict(line.split("=", 1) for line in read_lines(path))


def bench_exit_codes(header=os.path.join(REPO, "bench", "mpi_bench.h")):
    """The benchmarks' exit statuses, {"OK": 0, "CHECK_FAILED": 3, ...}, read
    from the lines "BENCH_EXIT_<NAME> = <n>," of enum bench_exit."""
    with open(header) as f:
        codes = {m.group(1): int(m.group(2))
                 for m in re.finditer(r"^\s*BENCH_EXIT_(\w+)\s*=\s*(\d+)\s*,", f.read(), re.M)}
    if not codes:
        raise ValueError(f"no BENCH_EXIT_<NAME> = <n>, lines in {header}")
    return codes


def c_string(header, name):
    """The string a header #defines NAME as (one literal)."""
    with open(header) as f:
        match = re.search(r'^#define\s+' + name + r'\s+"([^"]*)"\s*$', f.read(), re.M)
    if not match:
        raise ValueError(f'no #define {name} "..." in {header}')
    return match.group(1)


# How counters are named outside C, as mpi_spc_attach and the finalize dump
# spell them (OMPI_SPC_SEND; upstream's attach parser wants the full name).
COUNTER_PREFIX = c_string(os.path.join(REPO, "spc", "include", "spc", "names.h"), "SPC_COUNTER_PREFIX")
# Table 4 of seed 004: the counters NetPIPE's ping-pong touches.
TABLE4 = tuple(read_lines(os.path.join(REPO, "netpipe_runs", "table4.counters")))
# What every mpirun of the project needs (Open MPI refuses root without it).
MPI_ENV = read_env_file(os.path.join(REPO, "ompi_patches", "run_as_root.env"))

# The counter sets the study turns on (section 5 of seed 004); ("all",) is
# every counter.
COUNTER_SETS = {
    "all": ("all",),
    "table4": TABLE4,
    "match-time": ("MATCH_TIME",),
    "table4-no-match": tuple(c for c in TABLE4 if c != "MATCH_TIME"),
    # time inside MPI: what a ping-pong's MPI_Send and MPI_Recv add to (issue 35)
    "time": ("MPI_TIME", "P2P_TIME", "SEND_TIME", "RECV_TIME"),
}


class Configuration(NamedTuple):
    """An Open MPI build of ompi_patches/build_ompi.sh plus the counters
    mpi_spc_attach turns on from MPI_Init, and other MCA parameters."""
    name: str       # as tables and plots print it
    key: str        # file-name safe
    build: str      # variant of ompi_patches/build_ompi.sh
    counters: tuple  # counters attached from MPI_Init: () none, ("all",) all
    mca: tuple = ()  # (parameter, value) pairs
    listens: str = ""  # an MPI_T event bench/event_listener.c, preloaded, holds a handle on


# Timers sampled one interval in this many (mpi_spc_timer_sampling): the
# configuration the goal "all on within 3%" is measured in.
TIMER_SAMPLING = 64
SAMPLED = (("mpi_spc_timer_sampling", str(TIMER_SAMPLING)),)


CONFIGURATIONS = [
    Configuration("baseline (SPC compiled out)", "baseline", "nospc", ()),
    Configuration("ours, all off", "ours-off", "spc", ()),
    Configuration("ours, all on", "ours-all", "spc", COUNTER_SETS["all"]),
    Configuration(f"ours, all on, timers 1 in {TIMER_SAMPLING}", "ours-all-sampled", "spc",
                  COUNTER_SETS["all"], SAMPLED),
    Configuration("ours, MATCH_TIME only", "ours-match-time", "spc", COUNTER_SETS["match-time"]),
    Configuration("ours, Table 4 minus MATCH_TIME", "ours-table4-no-match", "spc",
                  COUNTER_SETS["table4-no-match"]),
    Configuration("ours, one unexpected_insert event handle", "ours-event", "spc", (),
                  listens="ompi_pml_ob1_unexpected_insert"),
    Configuration("upstream, all off", "upstream-off", "upstream", ()),
    Configuration("upstream, all on", "upstream-all", "upstream", COUNTER_SETS["all"]),
]
BASELINE = CONFIGURATIONS[0]
VARIANTS = tuple(dict.fromkeys(c.build for c in CONFIGURATIONS))


class Transport(NamedTuple):
    """How two ranks talk, as MCA parameters, and the case of the paper
    (seed 004, section 5) it stands for: vader between the two cores is
    "Core"; tcp over loopback stands in for "Node".  "Socket" cannot run
    here: the machine has one socket."""
    name: str
    mca: tuple
    paper_case: str
    environment: tuple = ()  # (name, value) pairs mpirun hands the ranks


TRANSPORTS = [
    Transport("vader", (("btl", "self,vader"),), "Core (shared memory between two cores)"),
    Transport("tcp", (("btl", "self,tcp"),), "Node (stood in for by TCP over loopback)"),
]
# Beside the paper's cases, asked for by name: pml ucx, which picks shared
# memory between two ranks here (the two "any" let it start without an
# InfiniBand device; pvar_export/tests/meson.build's tests run it the same).
OTHER_TRANSPORTS = [
    Transport("ucx", (("pml", "ucx"), ("pml_ucx_tls", "any"), ("pml_ucx_devices", "any")),
              "pml ucx (UCX over shared memory here, InfiniBand on a cluster)"),
    # libfabric's tcp provider pinned to the loopback interface, as the
    # tests run it (pvar_export/tests/meson.build says why)
    Transport("cm", (("pml", "cm"), ("mtl", "ofi"), ("mtl_ofi_provider_include", "tcp")),
              "pml cm with mtl ofi (libfabric's tcp provider here, the fabric's own on a cluster)",
              (("FI_TCP_IFACE", "lo"),)),
]


def _pick(kind, name, choices, key):
    for choice in choices:
        if key(choice) == name:
            return choice
    raise SystemExit(f"unknown {kind} '{name}'; choose from: {', '.join(key(c) for c in choices)}")


def configuration(key):
    return _pick("configuration", key, CONFIGURATIONS, lambda c: c.key)


def transport(name):
    return _pick("transport", name, TRANSPORTS + OTHER_TRANSPORTS, lambda t: t.name)


def attach_list(config):
    """mpi_spc_attach's value; full counter names, which upstream needs."""
    if config.counters in ((), ("all",)):
        return ",".join(config.counters)
    return ",".join(COUNTER_PREFIX + name for name in config.counters)


class BuildUnavailable(Exception):
    pass


def build(variant, cached=False):
    """Prefix of the cached Open MPI build VARIANT.  cached=False builds it
    first if needed; cached=True takes it only if it exists and is current
    (build_ompi.sh --cached), and never starts a build."""
    mode = ["--cached"] if cached else []
    print(f"== Open MPI build '{variant}' ({'cached or fail' if cached else 'cached by content hash'})",
          flush=True)
    result = subprocess.run([BUILD_OMPI, "--ompi", OMPI_VERSION] + mode + [variant], stdout=subprocess.PIPE,
                            text=True)
    if result.returncode != 0 or not result.stdout.strip():
        raise BuildUnavailable(f"the Open MPI build '{variant}' is "
                               + ("not current (see the message above)" if cached
                                  else "unusable: its build failed (see the messages above)"))
    return result.stdout.strip().splitlines()[-1]


def where(variant=None):
    """The folder build_ompi.sh keeps its builds in (NetPIPE's are cached
    there too), or the prefix of the build VARIANT, built or not."""
    return subprocess.run([BUILD_OMPI, "--ompi", OMPI_VERSION, "--where"] + ([variant] if variant else []),
                          check=True, stdout=subprocess.PIPE, text=True).stdout.strip()


def build_info(prefix):
    with open(os.path.join(prefix, "build-info.json")) as f:
        return json.load(f)


def transport_arguments(transport_):
    """mpirun's arguments that choose a transport."""
    command = []
    for parameter, value in transport_.mca:
        command += ["--mca", parameter, value]
    for name, value in transport_.environment:
        command += ["-x", f"{name}={value}"]
    return command


def mpirun(prefix, config, transport_, ranks=2, bind_to="core"):
    """The mpirun command line (without the program) of a configuration."""
    command = [os.path.join(prefix, "bin", "mpirun"), "-np", str(ranks), "--bind-to", bind_to,
               "-x", ENV_PAD_VARIABLE]
    command += transport_arguments(transport_)
    attach = attach_list(config)
    if attach:
        command += ["--mca", "mpi_spc_attach", attach]
    for parameter, value in config.mca:
        command += ["--mca", parameter, value]
    if config.listens:
        command += ["-x", "LD_PRELOAD", "-x", "SPC_LISTEN_EVENT"]
    return command


def listener_environment(config, listener):
    """The environment mpirun passes on (mpirun above) for a configuration
    that listens: the listener library (bench/event_listener.c built by the
    build's mpicc) preloaded, on config.listens."""
    return {"LD_PRELOAD": listener, "SPC_LISTEN_EVENT": config.listens} if config.listens else {}


def environment(pad=0, **extra):
    """The environment of an mpirun: ours, MPI_ENV, the pad of PAD bytes."""
    return dict(os.environ, **MPI_ENV, **{ENV_PAD_VARIABLE: "x" * pad}, **extra)


def machine():
    """What the results were measured on, and the repository's state: dirty
    means tracked files differ from the commit (a run's own untracked
    outputs do not count)."""
    def first(path, key):
        try:
            with open(path) as f:
                return next((line.split(":", 1)[1].strip() for line in f if line.startswith(key)), "?")
        except OSError:
            return "?"

    def git(*args):
        return subprocess.run(["git", "-C", REPO] + list(args), capture_output=True, text=True).stdout

    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"cpu": first("/proc/cpuinfo", "model name"), "cores": os.cpu_count(), "open_mpi": OMPI_VERSION,
            "kernel": os.uname().release, "commit": git("rev-parse", "HEAD").strip() or "unknown",
            "dirty": bool(changed), "changed_files": changed[:20]}
