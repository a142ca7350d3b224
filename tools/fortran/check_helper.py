"""The Fortran helper (libspc_fortran.so and the module spc_counters):
install.sh builds it with our build's mpicc and mpifort into a scratch
folder laid out as the prefix (lib/, and the module where our mpifort finds
mpi.mod), the library needs our libmpi and finds it by its run path; a
program on it (helper_errors.f90, built by our mpifort) gets clear errors,
no crash, for an unknown counter, one not kept per communicator, an array,
a bad and a freed handle, and reads rank 0's sends exactly, process-wide
and bound to MPI_COMM_WORLD.  Then the prefix itself must hold the helper
(ompi_patches/build_ompi.sh installs it with the tools).

usage: /usr/bin/python3 check_helper.py PREFIX INSTALL_SH HELPER_ERRORS_F90 SCRATCH"""
import gzip
import os
import re
import sys
import tempfile

# tools/tests/common.py, on PYTHONPATH (tools/fortran/meson.build sets it)
from common import check, finish, mpirun_env, run

MESSAGES = [
    "unknown counter NO_SUCH_COUNTER (no MPI_T variable runtime_spc_OMPI_SPC_NO_SUCH_COUNTER in this Open MPI",
    "counter WTIME is not kept per communicator (no MPI_T variable runtime_spc_comm_OMPI_SPC_WTIME); "
    "those that are: ",
    "runtime_spc_comm_OMPI_SPC_PEER_MESSAGES_SENT holds 2 values, not one",
    "12345 is not a started counter's handle",
    "1 is not a started counter's handle",
]


def module_dir(prefix):
    """The folder of our mpifort's include path that holds mpi.mod, relative to prefix."""
    flags = run([os.path.join(prefix, "bin", "mpifort"), "--showme:compile"]).stdout.split()
    dirs = [f[2:] for f in flags if f.startswith("-I") and os.path.exists(os.path.join(f[2:], "mpi.mod"))]
    if not check(dirs and dirs[-1].startswith(prefix + "/"), f"no mpi.mod on our mpifort's include path: {dirs}"):
        finish()
    return os.path.relpath(dirs[-1], prefix)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    prefix, install_sh, source, scratch = sys.argv[1:]
    prefix = os.path.realpath(prefix)
    os.makedirs(scratch, exist_ok=True)
    modules = module_dir(prefix)
    with tempfile.TemporaryDirectory(dir=scratch) as dest:
        installed = run([install_sh, prefix, dest], timeout=180)
        check(installed.returncode == 0, "install.sh failed")
        library = os.path.join(dest, "lib", "libspc_fortran.so")
        module = os.path.join(dest, modules, "spc_counters.mod")
        check(os.path.exists(library), f"install.sh made no {library}")
        check(os.path.exists(module), f"install.sh made no {module}")
        with open(module, "rb") as f:
            check(b"GFORTRAN module version '15'" in gzip.decompress(f.read())[:200],
                  "spc_counters.mod is not gfortran 12's module version 15")
        dynamic = run(["readelf", "-dW", library]).stdout
        check("[libmpi.so.40]" in dynamic, "libspc_fortran.so does not need libmpi.so.40")
        check(os.path.join(prefix, "lib") in dynamic, "libspc_fortran.so has no run path to our lib/")

        program = os.path.join(dest, "helper_errors")
        built = run([os.path.join(prefix, "bin", "mpifort"), "-Wall", "-Werror", "-I" + os.path.join(dest, modules),
                     "-o", program, source, "-L" + os.path.join(dest, "lib"),
                     "-Wl,-rpath," + os.path.join(dest, "lib"), "-lspc_fortran"], timeout=180)
        if check(built.returncode == 0, "our mpifort could not build helper_errors.f90 on the module"):
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", "--mca", "btl", "self,vader",
                          "-x", "LD_LIBRARY_PATH=" + os.path.join(prefix, "lib"), program],
                         env=mpirun_env(prefix), timeout=120)
            check(result.returncode == 0, "helper_errors failed (a check inside it, or a crash)")
            check(result.stdout.count(": all checks passed") == 2, "not every rank passed its checks")
            printed = re.findall(r"^message: spc_counters: (.*)$", result.stdout, re.M)
            check(len(printed) == len(MESSAGES), f"{len(printed)} messages printed, not {len(MESSAGES)}")
            for expected in MESSAGES:
                check(any(expected in line for line in printed), f"no message with: {expected}")
            # the counters kept per communicator, whole: the first, the last of the calls' times
            # and the last per-peer array
            listed = [line.split("those that are: ", 1)[1].split() for line in printed if "those that are: " in line]
            check(listed and {"SEND", "RECV", "REDUCE_SCATTER_TIME", "PEER_BYTES_RECEIVED"} <= set(listed[0]),
                  f"the counters kept per communicator, listed whole: {listed}")

    # What build_ompi.sh installs with the tools (install_tools).
    for path in (os.path.join(prefix, "lib", "libspc_fortran.so"), os.path.join(prefix, modules, "spc_counters.mod")):
        check(os.path.exists(path), f"the prefix lacks {path} (ompi_patches/build_ompi.sh installs it with the tools)")
    finish()


if __name__ == "__main__":
    main()
