"""NetPIPE 3.7.2 for the study: its source (Debian's netpipe 3.7.2-8, checked
against the .dsc), its binary built against one Open MPI build and cached by
that build's content hash, and the sizes and output a run of it gives."""
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys

from netpipe_runs import campaign, study

PACKAGE, VERSION = "netpipe", "3.7.2-8"
ORIG = "netpipe_3.7.2.orig.tar.gz"
# NetPIPE's makefile compiles `mpi` with $(MPICC), not $(CC): `make mpi CC=...`
# would silently use whatever mpicc is first on PATH (Debian's Open MPI).
RECIPE = "make mpi MPICC={mpicc}"
# What NetPIPE writes on stderr as it goes: "<n>: <bytes> bytes <repeats> times -->"
PROGRESS_LINE = re.compile(r"(\d+):\s+(\d+) bytes\s+(\d+) times -->")


def sizes(low, high):
    """The message sizes NPmpi visits with -p 0 (its main loop, src/netpipe.c
    lines 533-643 of 3.7.2): to check a run is complete."""
    visited, length = [], low
    inc, nq = (low // 2 if low > 1 else 1), (1 if low > 1 else 0)
    while length <= high:
        if nq > 2 and nq % 2:
            inc += inc
        visited.append(length)
        length, nq = length + inc, nq + 1
    return visited


def parse_output(text):
    """Rows (bytes, mbps, seconds_column, seconds) of a NetPIPE output file.

    NetPIPE 3.7.2 src/netpipe.c line 962 computes
        bwdata[n].bps = bwdata[n].bits / (bwdata[n].t * 1024 * 1024);
    with bits = bytes * 8 (line 961, no -2), and lines 971-972 print bytes,
    bps ("%lf", 6 decimals) and t ("%12.8lf", 10 ns steps).  So
        t = bytes * 8 / (Mbps * 2**20)
    recovers the one-way time to about 7 significant digits."""
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        try:
            size, mbps, seconds_column = int(fields[0]), float(fields[1]), float(fields[2])
        except ValueError:
            continue
        rows.append((size, mbps, seconds_column, size * 8 / (mbps * 2**20) if mbps > 0 else float("inf")))
    return rows


def progress(stderr, expected):
    """The size a running NetPIPE is at, from its stderr, for people."""
    seen = PROGRESS_LINE.findall(stderr)
    return f"{int(seen[-1][1])} B ({len(seen)} of {len(expected)} sizes)" if seen else ""


# --- the binary, per Open MPI build ------------------------------------------

def source(folder):
    """The orig tarball in FOLDER, fetched and checked against its .dsc by
    ompi_patches/fetch_debian_source.sh (the Debian diff tarball is not used:
    it is missing on the mirror, and NetPIPE builds from the orig alone)."""
    fetch = [os.path.join(study.REPO, "ompi_patches", "fetch_debian_source.sh"), PACKAGE, VERSION, ORIG, folder]
    if subprocess.run(fetch).returncode != 0:
        sys.exit("netpipe: no verified NetPIPE source (see the message above)")
    orig = os.path.join(folder, ORIG)
    with open(orig, "rb") as f:
        return orig, hashlib.sha256(f.read()).hexdigest()


def _compile(prefix, folder, recipe):
    """Builds NPmpi with PREFIX's mpicc into FOLDER; checks it loads PREFIX's libmpi."""
    orig, digest = source(os.path.join(os.path.dirname(folder), "src"))
    print(f"== building NetPIPE against {prefix} into {folder}", flush=True)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    subprocess.run(["tar", "-xzf", orig, "-C", folder], check=True)
    tree = os.path.join(folder, "NetPIPE-3.7.2")
    with open(os.path.join(folder, "build.log"), "w") as log:
        made = subprocess.run(recipe.split(), cwd=tree, stdout=log, stderr=subprocess.STDOUT)
    if made.returncode != 0:
        sys.exit(f"netpipe: building NetPIPE failed; see {folder}/build.log")
    binary = os.path.join(folder, "NPmpi")
    os.rename(os.path.join(tree, "NPmpi"), binary)
    shutil.rmtree(tree)
    # The wrapper sets a RUNPATH; make sure it names this build's libmpi.
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, env=env).stdout
    libmpi = next((line.strip() for line in ldd.splitlines() if "libmpi.so" in line), "")
    if os.path.join(prefix, "lib") not in libmpi:
        sys.exit(f"netpipe: {binary} does not load libmpi from {prefix}/lib: '{libmpi}'")
    campaign.write_json(os.path.join(folder, "netpipe-build.json"), {
        "source": f"{PACKAGE}={VERSION}", "orig": ORIG, "orig_sha256": digest, "recipe": recipe,
        "openmpi_build": study.build_info(prefix), "libmpi": libmpi})


def binary(build):
    """NPmpi compiled by the mpicc of BUILD (a campaign.Build), cached in the
    build cache's netpipe/ folder by the build's content hash."""
    cache = os.path.join(study.where(), "netpipe")
    folder = os.path.join(cache, f"{build.variant}-{build.content_hash}")
    stamp = os.path.join(folder, ".built")
    recipe = RECIPE.format(mpicc=os.path.join(build.prefix, "bin", "mpicc"))

    def current():
        try:
            with open(stamp) as f:
                return f.read().strip() == f"{PACKAGE}={VERSION} orig; {recipe}"
        except OSError:
            return False

    if not current():
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one fetch or build at a time
            if not current():
                _compile(build.prefix, folder, recipe)
                with open(stamp, "w") as f:
                    f.write(f"{PACKAGE}={VERSION} orig; {recipe}\n")
    return os.path.join(folder, "NPmpi")
