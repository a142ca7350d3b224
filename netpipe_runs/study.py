"""What the overhead study compares, and how to run an MPI program in one of
its configurations: the one list every study script uses.

A configuration is an Open MPI build of ompi_patches/build_ompi.sh plus the
counters mpi_spc_attach turns on from MPI_Init.  A transport is the BTL pair
and its stand-in for the paper's cases (seed 004, section 5): vader between
the two cores is "Core"; tcp over loopback stands in for "Node".  "Socket"
cannot run here: the machine has one socket."""
import json
import os
import subprocess
import sys
from typing import NamedTuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Table 4 of seed 004: the counters NetPIPE's ping-pong touches.
TABLE4 = ("SEND", "RECV", "BYTES_RECEIVED_USER", "BYTES_SENT_USER", "BYTES_GET", "UNEXPECTED",
          "MATCH_TIME")

# The counter sets the study turns on (section 5 of seed 004); ("all",) is
# every counter.
COUNTER_SETS = {
    "all": ("all",),
    "table4": TABLE4,
    "match-time": ("MATCH_TIME",),
    "table4-no-match": tuple(c for c in TABLE4 if c != "MATCH_TIME"),
}


class Configuration(NamedTuple):
    name: str       # as tables and plots print it
    key: str        # file-name safe
    build: str      # variant of ompi_patches/build_ompi.sh
    counters: tuple  # counters attached from MPI_Init: () none, ("all",) all


CONFIGURATIONS = [
    Configuration("baseline (SPC compiled out)", "baseline", "nospc", ()),
    Configuration("ours, all off", "ours-off", "spc", ()),
    Configuration("ours, all on", "ours-all", "spc", COUNTER_SETS["all"]),
    Configuration("ours, MATCH_TIME only", "ours-match-time", "spc", COUNTER_SETS["match-time"]),
    Configuration("ours, Table 4 minus MATCH_TIME", "ours-table4-no-match", "spc",
                  COUNTER_SETS["table4-no-match"]),
    Configuration("upstream, all off", "upstream-off", "upstream", ()),
    Configuration("upstream, all on", "upstream-all", "upstream", COUNTER_SETS["all"]),
]
BASELINE = CONFIGURATIONS[0]


class Transport(NamedTuple):
    name: str
    btl: str
    paper_case: str


TRANSPORTS = [
    Transport("vader", "self,vader", "Core (shared memory between two cores)"),
    Transport("tcp", "self,tcp", "Node (stood in for by TCP over loopback)"),
]

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def configuration(key):
    for config in CONFIGURATIONS:
        if config.key == key:
            return config
    sys.exit(f"unknown configuration '{key}'; choose from: {', '.join(c.key for c in CONFIGURATIONS)}")


def transport(name):
    for candidate in TRANSPORTS:
        if candidate.name == name:
            return candidate
    sys.exit(f"unknown transport '{name}'; choose from: {', '.join(t.name for t in TRANSPORTS)}")


def attach_list(config):
    """mpi_spc_attach's value; full OMPI_SPC_ names, which upstream needs."""
    if config.counters in ((), ("all",)):
        return ",".join(config.counters)
    return ",".join("OMPI_SPC_" + name for name in config.counters)


def build(variant):
    """Prefix of the cached Open MPI build VARIANT, built first if needed."""
    print(f"== Open MPI build '{variant}' (cached by content hash)", flush=True)
    result = subprocess.run([os.path.join(REPO, "ompi_patches", "build_ompi.sh"), variant],
                            stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"the Open MPI build '{variant}' failed (see the messages above)")
    return result.stdout.strip().splitlines()[-1]


def build_info(prefix):
    with open(os.path.join(prefix, "build-info.json")) as f:
        return json.load(f)


def mpirun(prefix, config, transport_, ranks=2, bind_to="core"):
    """The mpirun command line (without the program) of a configuration."""
    command = [os.path.join(prefix, "bin", "mpirun"), "-np", str(ranks), "--bind-to", bind_to,
               "--mca", "btl", transport_.btl]
    attach = attach_list(config)
    if attach:
        command += ["--mca", "mpi_spc_attach", attach]
    return command


def environment():
    return dict(os.environ, **MPI_ENV)


def machine():
    """What the results were measured on."""
    def first(path, key):
        try:
            with open(path) as f:
                return next((line.split(":", 1)[1].strip() for line in f if line.startswith(key)), "?")
        except OSError:
            return "?"
    return {"cpu": first("/proc/cpuinfo", "model name"), "cores": os.cpu_count(),
            "kernel": os.uname().release,
            "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                                     text=True).stdout.strip() or "unknown",
            "dirty": bool(subprocess.run(["git", "-C", REPO, "status", "--porcelain"],
                                         capture_output=True, text=True).stdout.strip())}
