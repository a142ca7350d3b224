"""Tests spc-check-binary against the spc build on real binaries: yes for
Debian's mpi4py (its extension module and a Python script), a C program from
Debian's mpicc, Fortran programs from Debian's mpifort (`use mpi`, `use
mpi_f08`: they run on our Fortran libraries and count) and Debian's lammps
(through the copy installed in the prefix), each answer naming this build's
Open MPI version and Debian's (4.1.4); no, with the reason, for programs built
with MPICH (C, `use mpi`, `use mpi_f08`: started anyway, each rank stops with
the stand-in's one line, not as a one-rank job of its own), Fortran compiled
by another compiler (a program that needs Intel's Fortran runtime), one whose
DT_RPATH pins another libmpi, one that copies ompi_mpi_comm_world at another
size, a static one and one without MPI; exit 2 with a message for bad input.

What Debian's Open MPI 4.1.4 has and 5.0 has not, by the build's version
(its include/mpi.h, read here): a C++ program on Debian's C++ bindings, a
`use mpi_f08` program that compares handles, a C program on 4.1's persistent
collective MPIX_Allreduce_init, and one that loads Open MPI 4's libopen-pal
itself: on 4.1 yes, and each runs (and counts); on 5.0 no, each with its
reason, and each, started anyway, fails as the answer says.

usage: /usr/bin/python3 check_checker.py PREFIX CHECKER SYSTEM_PING_C FORTRAN_MPI_F90
           FORTRAN_F08_F90 CXX_BINDINGS_CC FORTRAN_F08_COMPARE_F90 PERSISTENT_COLLECTIVE_C SCRATCH"""
import os
import re
import sys
import tempfile

from common import check, expect_counters, finish, mpirun_env, read_counters, run

DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu"


def verdict(checker, prefix, program, status, *phrases):
    """Runs the checker on program; checks its exit status and that each phrase is in its output."""
    result = run([checker, "--prefix", prefix, program])
    output = result.stdout + result.stderr
    check(result.returncode == status, f"{program}: exit {result.returncode}, expected {status}")
    check("Traceback" not in output, f"{program}: the checker crashed")
    for phrase in phrases:
        check(phrase in output, f"{program}: no '{phrase}' in the answer")
    return output


def symbol_size(path, name):
    """st_size of a dynamic symbol, read with readelf (independent of the checker)."""
    for line in run(["readelf", "--dyn-syms", "-W", path]).stdout.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[7] == name and fields[6] != "UND":
            return int(fields[2], 0)
    return None


def build_version(prefix):
    """(major, minor, release) of the build, from its include/mpi.h."""
    with open(os.path.join(prefix, "include", "mpi.h")) as f:
        found = dict(re.findall(r"^#define OMPI_(MAJOR|MINOR|RELEASE)_VERSION (\d+)", f.read(), re.M))
    return int(found["MAJOR"]), int(found["MINOR"]), int(found["RELEASE"])


def started_anyway(prefix, program, args, *phrases):
    """Runs a program the checker said no to with our mpirun and lib/ first:
    it must fail, and its output must hold each phrase (the answer was true)."""
    result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", program] + args, env=mpirun_env(prefix))
    output = result.stdout + result.stderr
    check(result.returncode != 0, f"{program} ran, though the checker said no")
    for phrase in phrases:
        check(phrase in output, f"{program}, started anyway: no '{phrase}' in its output")


def main():
    if len(sys.argv) != 10:
        sys.exit(__doc__)
    prefix, checker, ping_c, fortran_mpi, fortran_f08, cxx_cc, f08_compare, pcoll_c, scratch = sys.argv[1:]
    prefix = os.path.realpath(prefix)
    os.makedirs(scratch, exist_ok=True)
    ours = os.path.join(prefix, "lib", "libmpi.so.40")
    version = build_version(prefix)
    named = ".".join(map(str, version))
    # Every answer about a program of Debian's names both versions.
    both = f"this build is Open MPI {named}; without its lib/ first, the program loads Open MPI 4.1.4's libmpi.so.40"
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        def path(name):
            return os.path.join(folder, name)

        # Yes: Debian's mpi4py, as its extension module and as a script.
        found = run(["/usr/bin/python3", "-c",
                     "import importlib.util as u; print(u.find_spec('mpi4py.MPI').origin)"])
        extension = found.stdout.strip()
        check(extension.startswith("/usr/lib/python3/dist-packages/mpi4py/"), "no Debian mpi4py")
        verdict(checker, prefix, extension, 0, "yes:", f"libmpi.so.40 (needed by {extension}) -> "
                f"{os.path.realpath(ours)}", both)
        with open(path("hello.py"), "w") as f:
            f.write("#!/usr/bin/python3\nfrom mpi4py import MPI\nprint(MPI.COMM_WORLD.rank)\n")
        verdict(checker, prefix, path("hello.py"), 0, "yes:", f"MPI comes from {extension}")

        # Yes: a C program from Debian's mpicc, whose copied ompi_mpi_comm_world matches ours.
        run(["/usr/bin/mpicc.openmpi", "-o", path("system_ping"), ping_c])
        size = symbol_size(path("system_ping"), "ompi_mpi_comm_world")
        check(size is not None and size == symbol_size(ours, "ompi_mpi_comm_world"),
              "system_ping does not copy an ompi_mpi_comm_world of our size")
        verdict(checker, prefix, path("system_ping"), 0, "yes:",
                f"copies ompi_mpi_comm_world into itself: {size} bytes, the same size here", both)

        # C++ bindings from the system: on 4.1 yes over our libmpi, it runs and
        # counts; Open MPI 5.0 removed them, and 4.1's copy needs what 5.0's
        # libmpi lacks: no, and started anyway it stops at that symbol.
        run(["/usr/bin/mpicxx.openmpi", "-o", path("cxx_bindings"), cxx_cc])
        if version[0] >= 5:
            verdict(checker, prefix, path("cxx_bindings"), 1, "no:",
                    "it needs libmpi_cxx.so.40, Open MPI's C++ bindings (MPI::, removed in MPI-3), which Open MPI"
                    f" 5.0 removed: this build (Open MPI {named}) has none, and the copy in"
                    f" {os.path.realpath(DEBIAN_LIB + '/libmpi_cxx.so.40')} is Open MPI 4.1.4's and needs"
                    " ompi_mpi_errors_throw_exceptions and ompi_op_set_cxx_callback of libmpi")
            started_anyway(prefix, path("cxx_bindings"), ["9"],
                           "symbol lookup error", "undefined symbol: ompi_mpi_errors_throw_exceptions")
        else:
            verdict(checker, prefix, path("cxx_bindings"), 0, "yes:",
                    f"libmpi_cxx.so.40 (needed by {path('cxx_bindings')}) -> {DEBIAN_LIB}/libmpi_cxx.so.40")
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", "--mca", "mpi_spc_attach", "SEND,RECV",
                          "--mca", "mpi_spc_dump_enabled", "true", "--mca", "mpi_spc_dump_file", path("cxx.csv"),
                          path("cxx_bindings"), "9"], env=mpirun_env(prefix))
            check(result.returncode == 0 and "(ompi-spc spc)" in result.stdout, "cxx_bindings did not run on ours")
            if check(os.path.exists(path("cxx.csv")), "cxx_bindings wrote no CSV"):
                expect_counters(read_counters(path("cxx.csv")), {(0, "SEND"): 9, (1, "RECV"): 9}, "cxx_bindings")

        # `use mpi_f08` with handle comparisons (==, /=): procedures of 4.1's
        # module, which 5.0 replaced.  4.1: yes, it runs; 5.0: no, and started
        # anyway it stops at the comparison.
        run(["/usr/bin/mpifort.openmpi", "-o", path("f08_compare"), f08_compare])
        if version[0] >= 5:
            verdict(checker, prefix, path("f08_compare"), 1, "no:",
                    f"the loader finds no __mpi_f08_types_MOD_ompi_comm_op_eq, __mpi_f08_types_MOD_ompi_comm_op_ne"
                    f" in this build (Open MPI {named}), which {path('f08_compare')} needs: Open MPI 4.1's"
                    " `use mpi_f08` module", "rebuild it with this build's mpifort")
            started_anyway(prefix, path("f08_compare"), [],
                           "symbol lookup error", "undefined symbol: __mpi_f08_types_MOD_ompi_comm_op_eq")
        else:
            verdict(checker, prefix, path("f08_compare"), 0, "yes:", both)
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", path("f08_compare")],
                         env=mpirun_env(prefix))
            check(result.returncode == 0 and "received tag 3 from 0" in result.stdout,
                  "f08_compare did not compare handles and receive on ours")

        # 4.1's persistent collective MPIX_Allreduce_init (mpi-ext.h): 4.1 yes,
        # counted; 5.0 has MPI_Allreduce_init instead: no, and it stops there.
        run(["/usr/bin/mpicc.openmpi", "-o", path("pcoll"), pcoll_c])
        if version[0] >= 5:
            verdict(checker, prefix, path("pcoll"), 1, "no:",
                    f"the loader finds no MPIX_Allreduce_init in this build (Open MPI {named}), which"
                    f" {path('pcoll')} needs: Open MPI 4.1's persistent collectives (MPIX_*_init",
                    "which Open MPI 5.0 has as MPI 4.0's MPI_*_init")
            started_anyway(prefix, path("pcoll"), [], "symbol lookup error", "undefined symbol: MPIX_Allreduce_init")
        else:
            verdict(checker, prefix, path("pcoll"), 0, "yes:", both)
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", "--mca", "mpi_spc_attach",
                          "ALLREDUCE_INIT", "--mca", "mpi_spc_dump_enabled", "true", "--mca", "mpi_spc_dump_file",
                          path("pcoll.csv"), path("pcoll")], env=mpirun_env(prefix))
            check(result.returncode == 0 and result.stdout.count(": sum 1\n") == 4, "pcoll did not sum twice on ours")
            if check(os.path.exists(path("pcoll.csv")), "pcoll wrote no CSV"):
                expect_counters(read_counters(path("pcoll.csv")), {(0, "ALLREDUCE_INIT"): 1, (1, "ALLREDUCE_INIT"): 1},
                                "pcoll")

        # A program that loads Open MPI 4's runtime library itself (libopen-pal.so.40,
        # before libmpi): 4.1 has it (ours); 5.0's is libopen-pal.so.80, and
        # two Open MPIs in one process crash.
        run(["/usr/bin/mpicc.openmpi", "-o", path("with_opal"), ping_c, "-Wl,--no-as-needed", "-lopen-pal"])
        if version[0] >= 5:
            verdict(checker, prefix, path("with_opal"), 1, "no:",
                    f"{path('with_opal')} needs libopen-pal.so.40, the runtime library of Open MPI 3.0 to 4.1, which"
                    f" this build (Open MPI {named}) does not have", "a second Open MPI in the process")
            started_anyway(prefix, path("with_opal"), ["3", "1"], "mca_base_component_repository_open")
        else:
            verdict(checker, prefix, path("with_opal"), 0, "yes:",
                    f"libopen-pal.so.40 (needed by {path('with_opal')}) -> {os.path.realpath(prefix)}/lib/")

        # Yes: Debian's lammps, asked by name of the checker installed in the prefix.
        installed = os.path.join(prefix, "bin", "spc-check-binary")
        result = run([installed, "lmp"])
        check(result.returncode == 0 and "yes: /usr/bin/lmp" in result.stdout,
              "the installed checker does not say yes for lmp")
        check(f"{DEBIAN_LIB}/liblammps.so.0" in result.stdout, "it does not say liblammps needs libmpi")

        # Yes: Fortran programs (use mpi, use mpi_f08) from Debian's mpifort run on
        # our Fortran libraries: rank 0 sends 5 messages of 3 INTEGERs (12 bytes).
        for name, source, library in (("fortran_mpi", fortran_mpi, "libmpi_mpifh.so.40"),
                                      ("fortran_f08", fortran_f08, "libmpi_usempif08.so.40")):
            run(["/usr/bin/mpifort.openmpi", "-o", path(name), source])
            ours_fortran = os.path.realpath(os.path.join(prefix, "lib", library))
            verdict(checker, prefix, path(name), 0, "yes:", f"{library} (needed by {path(name)}) -> {ours_fortran}")
            csv_path = path(f"{name}.csv")
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", "--mca", "mpi_spc_attach", "all",
                          "--mca", "mpi_spc_dump_enabled", "true", "--mca", "mpi_spc_dump_file", csv_path,
                          path(name)], env=mpirun_env(prefix))
            check(result.returncode == 0 and "rank 1 of 2" in result.stdout, f"{name} did not run on 2 ranks")
            if check(os.path.exists(csv_path), f"{name} wrote no CSV"):
                expect_counters(read_counters(csv_path), {
                    (0, "SEND"): 5, (1, "RECV"): 5, (0, "BYTES_SENT_USER"): 5 * 3 * 4,
                    (1, "BYTES_RECEIVED_USER"): 5 * 3 * 4}, name)

        # No: programs built with MPICH (C, use mpi, use mpi_f08); started with our
        # mpirun and lib/ first, each rank stops with the stand-in's one line
        # instead of running as a one-rank job of its own.
        for name, command, source in (("mpich_c", "/usr/bin/mpicc.mpich", ping_c),
                                      ("mpich_mpi", "/usr/bin/mpif90.mpich", fortran_mpi),
                                      ("mpich_f08", "/usr/bin/mpif90.mpich", fortran_f08)):
            if not check(os.path.exists(command), f"{command} is missing (install_deps.sh installs libmpich-dev)"):
                continue
            run([command, "-o", path(name), source])
            verdict(checker, prefix, path(name), 1, "no:", "it was built with MPICH", "libmpich")
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", path(name), "1", "1"],
                         env=mpirun_env(prefix))
            output = result.stdout + result.stderr
            check(result.returncode != 0, f"{name} ran")
            # ORTE (4.1) lets both ranks say it; PRRTE (5.0) ends the job when the
            # first rank exits, before the other may have said it.
            said = output.count(f"{name} was built with MPICH")
            check(said == 2 or (version[0] >= 5 and said == 1), f"{name}: not one line per rank saying why")
            check("symbol lookup error" not in output and "rank 0 of 1" not in output,
                  f"{name} went past its start")

        # No: Fortran compiled by another compiler (it needs Intel's runtime).
        with open(path("ifcore.c"), "w") as f:
            f.write("int for_stop_core;\n")
        run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libifcore.so.5", "-o", path("libifcore.so.5"), path("ifcore.c")])
        run(["/usr/bin/mpifort.openmpi", "-o", path("ifort_made"), fortran_mpi,
             "-Wl,--no-as-needed", path("libifcore.so.5")])
        verdict(checker, prefix, path("ifort_made"), 1, "no:",
                "its Fortran was compiled by Intel Fortran (ifort, ifx) (it needs libifcore.so.5)")

        # No: a DT_RPATH that pins the system's libmpi wins over LD_LIBRARY_PATH.
        run(["/usr/bin/mpicc.openmpi", "-o", path("pinned"), ping_c,
             f"-Wl,--disable-new-dtags,-rpath,{DEBIAN_LIB}"])
        verdict(checker, prefix, path("pinned"), 1, "no:", f"would still load from {DEBIAN_LIB}/libmpi.so",
                "DT_RPATH")

        # No: a program linked against a libmpi.so.40 whose ompi_mpi_comm_world is 256 bytes.
        os.makedirs(path("other"))
        with open(path("other.c"), "w") as f:
            f.write("char ompi_mpi_comm_world[256];\n")
        with open(path("copies.c"), "w") as f:
            f.write("extern char ompi_mpi_comm_world[256];\nint main(void) { return ompi_mpi_comm_world[0]; }\n")
        run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libmpi.so.40", "-o", path("other/libmpi.so.40"), path("other.c")])
        run(["gcc", "-o", path("copies"), path("copies.c"), path("other/libmpi.so.40")])
        ours_size = symbol_size(ours, "ompi_mpi_comm_world")
        verdict(checker, prefix, path("copies"), 1, "no:",
                f"copies ompi_mpi_comm_world into itself as 256 bytes, but this libmpi's is {ours_size} bytes")

        # No: static, no MPI at all, a script that loads no MPI.
        with open(path("hello.c"), "w") as f:
            f.write("int main(void) { return 0; }\n")
        run(["gcc", "-static", "-o", path("static"), path("hello.c")])
        verdict(checker, prefix, path("static"), 1, "no:", "statically linked")
        verdict(checker, prefix, "/bin/ls", 1, "no:", "does not use MPI")
        with open(path("script.sh"), "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        verdict(checker, prefix, path("script.sh"), 1, "no:", "a script run by /bin/sh")

        # Bad input: exit 2 and a message, never a traceback.
        with open(path("notes.txt"), "w") as f:
            f.write("plain text\n")
        with open(path("broken"), "wb") as f:
            f.write(b"\x7fELF\x02\x01\x01" + b"\0" * 20)
        verdict(checker, prefix, path("missing"), 2, "no such file")
        verdict(checker, prefix, folder, 2, "is not a file")
        verdict(checker, prefix, path("notes.txt"), 2, "neither an ELF file nor a script")
        verdict(checker, prefix, path("broken"), 2, "not a valid ELF file")
        verdict(checker, path("nowhere"), "/bin/ls", 2, "no Open MPI build at")
        for args, status, phrase in (([], 2, "SYNOPSIS"), (["--help"], 0, "EXIT STATUS"),
                                     (["--prefix"], 2, "--prefix needs a folder"),
                                     (["a", "b"], 2, "exactly one PROGRAM")):
            result = run([checker] + args)
            check(result.returncode == status and phrase in result.stdout + result.stderr,
                  f"spc-check-binary {' '.join(args)}: exit {result.returncode}, expected {status} and '{phrase}'")
    finish()


if __name__ == "__main__":
    main()
