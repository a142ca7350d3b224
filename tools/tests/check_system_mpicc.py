"""Compiles system_ping.c with Debian's mpicc (libopenmpi-dev: Debian's
headers and libmpi.so.40), checks that the binary is the system's (it
resolves libmpi to /usr/lib and carries no path to our build), then runs it
on 2 ranks under our mpirun with our libmpi and checks the library version
it prints and exact finalize counts: COUNT sends and receives, one Allreduce
per rank, and user bytes summed here.  Then a C program on Open MPI's
Fortran datatypes (fortran_types.c), which a build without Fortran lacks:
its sums are right with our libmpi, and each rank's 3 Allreduces are counted.

usage: /usr/bin/python3 check_system_mpicc.py PREFIX SYSTEM_PING_C FORTRAN_TYPES_C SCRATCH"""
import os
import re
import sys
import tempfile

from common import check, expect_counters, finish, mpirun_env, read_counters, run

DEBIAN_MPICC = "/usr/bin/mpicc.openmpi"
DEBIAN_INCLUDE = "/usr/lib/x86_64-linux-gnu/openmpi/include"
COUNT, STEP = 25, 1000  # 0 to 24,000 bytes: eager and rendezvous over vader


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    prefix, source, types_source, scratch = sys.argv[1:]
    prefix = os.path.realpath(prefix)
    os.makedirs(scratch, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        program = os.path.join(folder, "system_ping")
        includes = run([DEBIAN_MPICC, "--showme:incdirs"])
        check(DEBIAN_INCLUDE in includes.stdout.split(), f"{DEBIAN_MPICC} does not use {DEBIAN_INCLUDE}")
        built = run([DEBIAN_MPICC, "-Wall", "-Wextra", "-Werror", "-O2", "-o", program, source])
        if not check(built.returncode == 0, "Debian's mpicc could not build system_ping.c"):
            finish()
        dynamic = run(["readelf", "-dW", program]).stdout
        check("[libmpi.so.40]" in dynamic, "the program does not need libmpi.so.40")
        check(prefix not in dynamic, "the program carries a path to our build")
        alone = run(["ldd", program], env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
        check(re.search(r"libmpi\.so\.40 => /(usr/)?lib/x86_64-linux-gnu/libmpi\.so\.40", alone.stdout),
              "on its own the program does not load the system's libmpi")

        csv_path = os.path.join(folder, "spc.csv")
        result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", "--mca", "btl", "self,vader",
                      "-x", "LD_LIBRARY_PATH=" + os.path.join(prefix, "lib"),
                      "--mca", "mpi_spc_attach", "all", "--mca", "mpi_spc_dump_enabled", "true",
                      "--mca", "mpi_spc_dump_file", csv_path, program, str(COUNT), str(STEP)],
                     env=mpirun_env(prefix))
        check(result.returncode == 0, "the job failed")
        check("(ompi-spc spc)" in result.stdout, "the library version it printed is not our build's")
        check("wrong bytes: 0" in result.stdout, "messages arrived wrong")
        if check(os.path.exists(csv_path), "no CSV"):
            user_bytes = sum(i * STEP for i in range(COUNT))
            expect_counters(read_counters(csv_path), {
                (0, "SEND"): COUNT, (1, "SEND"): 0, (0, "RECV"): 0, (1, "RECV"): COUNT,
                (0, "ALLREDUCE"): 1, (1, "ALLREDUCE"): 1,
                (0, "BYTES_SENT_USER"): user_bytes, (1, "BYTES_RECEIVED_USER"): user_bytes,
                (1, "BYTES_SENT_USER"): 0, (0, "BYTES_RECEIVED_USER"): 0}, "system_ping CSV")

        types_program = os.path.join(folder, "fortran_types")
        built = run([DEBIAN_MPICC, "-Wall", "-Wextra", "-Werror", "-O2", "-o", types_program, types_source])
        if check(built.returncode == 0, "Debian's mpicc could not build fortran_types.c"):
            types_csv = os.path.join(folder, "types.csv")
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", "--mca", "btl", "self,vader",
                          "-x", "LD_LIBRARY_PATH=" + os.path.join(prefix, "lib"),
                          "--mca", "mpi_spc_attach", "ALLREDUCE", "--mca", "mpi_spc_dump_enabled", "true",
                          "--mca", "mpi_spc_dump_file", types_csv, types_program, "100"],
                         env=mpirun_env(prefix))
            check(result.returncode == 0 and "fortran types: ok" in result.stdout,
                  "a C program on MPI_INTEGER, MPI_REAL and MPI_DOUBLE_PRECISION failed with our libmpi")
            if check(os.path.exists(types_csv), "fortran_types wrote no CSV"):
                expect_counters(read_counters(types_csv), {(0, "ALLREDUCE"): 3, (1, "ALLREDUCE"): 3},
                                "fortran_types CSV")
    finish()


if __name__ == "__main__":
    main()
