#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the study need (only
# those missing).  Used by run.sh and .ci/run; needs root (or sudo) when
# something is missing.
set -euo pipefail

packages=(meson ninja-build g++ gfortran pkg-config python3 binutils git libgtest-dev libbenchmark-dev
          make patch xz-utils ccache flex libhwloc-dev libevent-dev
          libucx-dev libfabric-dev libpsm2-dev libibverbs-dev
          libpapi-dev papi-tools libsde1 python3-pandas python3-matplotlib valgrind gdb
          libncurses-dev libcpp-httplib-dev iproute2)
# Debian's own Open MPI 4.1.4 and programs built against it, which the tests
# of tools/ run with our libmpi (installed beside ours on purpose: a test
# checks that our build still links ours).  Without Recommends: lammps would
# pull in about 200 MB of documentation and examples.  Prometheus (the live
# counters' tests scrape spc-exporter with it) would pull in its node exporter.
# The cluster tests (docs/cluster.md): Slurm's daemons and clients, munge,
# Debian's PMIx (Slurm's pmix plugin loads it for srun --mpi=pmix) and the
# Pushgateway.  MPICH's compilers build the programs that spc-check-binary and
# the stand-ins of tools/foreign_mpi.c refuse (its alternatives' priority, 40,
# is below Open MPI's 50: mpicc and mpirun stay Debian's Open MPI's).
without_recommends=(openmpi-bin libopenmpi-dev python3-mpi4py lammps python3-pyelftools
                    nwchem-openmpi nwchem-data elk-lapw abinit abinit-data
                    prometheus slurmd slurmctld slurm-client munge libpmix-dev prometheus-pushgateway
                    libmpich-dev)

# missing PACKAGE...: those not installed.
missing() {
    local package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || echo "$package"
    done
}
missing=($(missing "${packages[@]}"))
missing_lean=($(missing "${without_recommends[@]}"))
[ ${#missing[@]} -eq 0 ] && [ ${#missing_lean[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install_deps.sh: missing ${missing[*]} ${missing_lean[*]}; run me as root" >&2; exit 1; }
    sudo=(sudo)
fi
echo "installing: ${missing[*]} ${missing_lean[*]}"
"${sudo[@]}" apt-get update -qq
install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq)
[ ${#missing[@]} -eq 0 ] || "${install[@]}" "${missing[@]}" >/dev/null
[ ${#missing_lean[@]} -eq 0 ] || "${install[@]}" --no-install-recommends "${missing_lean[@]}" >/dev/null
