"""The other Open MPI version (issue 21): Open MPI 4.1 and 5.0 both call
their library libmpi.so.40, so what one build's compilers made loads the
other build's libmpi without a word.  With this build (PREFIX) and the spc
build of the other version (OTHER; exit 77, skipped, if it is not built):

  1. spc-check-binary of this build on a program built by the other's mpicc:
     yes, naming both versions, and with our lib/ first it runs on ours and
     counts its sends exactly; on the 4.1 build, a program on MPI 4.0's
     MPI_Isendrecv (5.0's mpicc): no, naming it and the 5.0 libmpi that has
     it, and a `use mpi_f08` program that compares handles (5.0's mpifort):
     no, 5.0's module; started anyway each stops at the symbol named.
  2. The event logger built by the other's mpicc, preloaded into a job of
     this build: the same exact record as this build's own logger (3
     unexpected inserts, tags 0..2, on each communicator comm_constructors
     makes, none dropped, UNEXPECTED read through MPI_T); a planted wrong
     prediction is reported first.
  3. The Fortran helper built by the other's install.sh under a program of
     this build's mpifort (it loads that helper): exact SEND reads.
  4. A rank that Open MPI 5's mpirun starts on an Open MPI 4 libmpi.  Control:
     Debian's mpi4py (4.1.4) started by the 5.0 build's mpirun without its
     lib/ first runs each rank alone (rank 0 of 1) and exits 0.  The tools
     built for 4.1 (logger by the 4.1 mpicc, preloaded into Python, where its
     run path brings the 4.1 libmpi; helper and program by the 4.1 build)
     and the logger built for 5.0 preloaded into Debian's mpicc program (its
     libmpi Debian's 4.1.4) stop each rank that reaches MPI_Init with one
     line naming both versions, exit status non-zero, no MPI output; with
     the 5.0 build's lib/ first the same commands run (no false alarm).

usage: /usr/bin/python3 check_versions.py PREFIX OTHER CHECKER LOGGER_C INSTALL_SH CONSTRUCTORS
           SYSTEM_PING_C MPI_ISENDRECV_C FORTRAN_SENDS_F90 FORTRAN_F08_COMPARE_F90 SCRATCH"""
import csv
import os
import re
import sys
import tempfile

from common import check, expect_counters, finish, mpirun_env, read_counters, run

DEBIAN_MPICC = "/usr/bin/mpicc.openmpi"
# Each rank prints its rank, its job's size and which libmpi runs it, in one
# write (print's pieces may reach mpirun's output apart, between another rank's).
MPI4PY_HELLO = ("import sys; from mpi4py import MPI; c = MPI.COMM_WORLD; sys.stdout.write('python rank %d of %d %s\\n'"
                " % (c.rank, c.size, MPI.Get_library_version().split(',')[0])); sys.stdout.flush()")


def version(prefix):
    """(major, minor, release) from prefix/include/mpi.h, or None."""
    try:
        with open(os.path.join(prefix, "include", "mpi.h")) as f:
            found = dict(re.findall(r"^#define OMPI_(MAJOR|MINOR|RELEASE)_VERSION (\d+)", f.read(), re.M))
    except OSError:
        return None
    return int(found["MAJOR"]), int(found["MINOR"]), int(found["RELEASE"])


def text(v):
    return ".".join(map(str, v))


def libmpi(prefix):
    return os.path.realpath(os.path.join(prefix, "lib", "libmpi.so.40"))


def bare_env():
    """The test's environment without any LD_LIBRARY_PATH: what a user's shell
    has before eval "$(spc-env)"."""
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    return env


def unexpected_per_comm(folder):
    """{comm_id: [tags]} of rank 1's unexpected inserts with tags 0..2, and its profile."""
    with open(os.path.join(folder, "spc-events.1.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["event"] == "unexpected_insert" and r["tag"] in ("0", "1", "2")]
    per_comm = {}
    for r in rows:
        per_comm.setdefault(r["comm_id"], []).append(int(r["tag"]))
    with open(os.path.join(folder, "spc-events.1.profile")) as f:
        profile = dict(line.split() for line in f if line.strip())
    return per_comm, profile


def logger_record(prefix, logger, constructors, folder, tags, what):
    """comm_constructors under logger in a job of prefix (its lib/ first):
    rank 1 records exactly tags on each communicator, drops no event, and
    reads UNEXPECTED through MPI_T.  Returns whether it held.  (UNEXPECTED
    also counts the messages of communicators the logger does not watch, so
    it is not compared here: check_logger.py compares it over pairwise.)"""
    result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", "-x", "LD_PRELOAD=" + logger,
                  "-x", "SPC_EVENTS_DIR=" + folder, "-x", "LD_LIBRARY_PATH=" + os.path.join(prefix, "lib"),
                  constructors], env=mpirun_env(prefix))
    made = [int(line.split(":")[1]) for line in result.stdout.splitlines()
            if line.startswith("communicators with traffic:")]
    if result.returncode != 0 or len(made) != 1 or not os.path.exists(os.path.join(folder, "spc-events.1.csv")):
        return False, f"{what}: comm_constructors did not complete under the logger"
    per_comm, profile = unexpected_per_comm(folder)
    held = (len(per_comm) == made[0] and all(sorted(t) == tags for t in per_comm.values())
            and profile.get("events.dropped") == "0" and "mpit.UNEXPECTED" in profile)
    return held, (f"{what}: tags {tags} on each of {made[0]} communicators, none dropped, UNEXPECTED read:"
                  f" {per_comm}, {profile.get('events.dropped')} dropped, mpit.UNEXPECTED"
                  f" {profile.get('mpit.UNEXPECTED')}")


def stopped(result, tool, built, launcher, running, library):
    """A job every rank of which stopped before MPI_Init with the tool's line."""
    output = result.stdout + result.stderr
    line = (f"{tool} (rank {{}}; built for Open MPI {text(built)}): started by Open MPI {text(launcher)}'s mpirun,"
            f" but this process runs Open MPI {text(running)}'s libmpi ({library}), which does not join that job")
    said = [rank for rank in (0, 1) if line.format(rank) in output]
    check(result.returncode != 0, f"{tool}: the job went on (exit 0)")
    # PRRTE ends the job when the first rank exits: the other may not get to say it.
    check(len(said) >= 1, f"{tool}: no rank said '{line.format('R')}'")
    check(output.count("this rank stops here") == len(said), f"{tool}: a line other than the expected one")
    check(not any(mark in output for mark in ("python rank", " sent ", "library: Open MPI", "pmix_init",
                                               "ORTE_ERROR_LOG")), f"{tool}: the ranks went past MPI_Init")


def main():
    if len(sys.argv) != 12:
        sys.exit(__doc__)
    (prefix, other, checker, logger_c, install_sh, constructors, ping_c, isendrecv_c, sends_f90, f08_compare,
     scratch) = sys.argv[1:]
    prefix, other = os.path.realpath(prefix), os.path.realpath(other)
    ours, theirs = version(prefix), version(other)
    if ours is None:
        sys.exit(f"check_versions.py: no Open MPI build at {prefix} (no include/mpi.h)")
    if theirs is None or not all(os.path.exists(os.path.join(other, p)) for p in
                                 ("bin/mpicc", "bin/mpifort", "bin/mpirun", "lib/libmpi.so.40", "include/spc")):
        print(f"SKIP: no Open MPI build of the other version at {other}"
              " (ompi_patches/build_ompi.sh --ompi VERSION spc makes it)")
        sys.exit(77)
    check(ours[0] != theirs[0], f"{prefix} and {other} are the same Open MPI version {text(ours)}")
    p4, p5 = (prefix, other) if ours[0] < 5 else (other, prefix)
    v4, v5 = version(p4), version(p5)
    os.makedirs(scratch, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        def path(name):
            return os.path.join(folder, name)

        def mpicc(build, *args):
            return run([os.path.join(build, "bin", "mpicc")] + list(args))

        # 1. The checker on a program of the other build's mpicc.
        mpicc(other, "-o", path("other_ping"), ping_c)
        result = run([checker, "--prefix", prefix, path("other_ping")])
        check(result.returncode == 0 and f"yes: {path('other_ping')} runs with this build's libmpi" in result.stdout,
              "the checker does not say yes for a program of the other build's mpicc")
        check(f"this build is Open MPI {text(ours)}; without its lib/ first, the program loads Open MPI"
              f" {text(theirs)}'s libmpi.so.40 ({libmpi(other)})" in result.stdout,
              "the checker's answer does not name both versions")
        result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", "-x", "LD_LIBRARY_PATH=" + prefix + "/lib",
                      "--mca", "mpi_spc_attach", "SEND,RECV", "--mca", "mpi_spc_dump_enabled", "true",
                      "--mca", "mpi_spc_dump_file", path("other_ping.csv"), path("other_ping"), "7", "1000"],
                     env=mpirun_env(prefix))
        check(result.returncode == 0 and f"library: Open MPI v{text(ours)}" in result.stdout,
              "the other build's program did not run on this libmpi")
        if check(os.path.exists(path("other_ping.csv")), "no CSV of the other build's program"):
            expect_counters(read_counters(path("other_ping.csv")), {(0, "SEND"): 7, (1, "RECV"): 7}, "other_ping")
        if ours[0] < 5:
            mpicc(p5, "-o", path("isendrecv"), isendrecv_c)
            result = run([checker, "--prefix", prefix, path("isendrecv")])
            check(result.returncode == 1 and
                  f"the loader finds no MPI_Isendrecv in this build (Open MPI {text(ours)}), which"
                  f" {path('isendrecv')} needs: Open MPI {text(theirs)}'s libmpi.so.40, the one it loads without"
                  " this build, defines it: rebuild it against this build" in result.stdout, "the checker does not refuse MPI_Isendrecv")
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", path("isendrecv")],
                         env=mpirun_env(prefix))
            check(result.returncode != 0 and "undefined symbol: MPI_Isendrecv" in result.stdout + result.stderr,
                  "MPI_Isendrecv's program, started anyway, did not stop at that symbol")
            run([os.path.join(p5, "bin", "mpifort"), "-o", path("f08_compare"), f08_compare])
            result = run([checker, "--prefix", prefix, path("f08_compare")])
            check(result.returncode == 1 and
                  "the loader finds no __mpi_types_MOD_ompi_comm_op_eq, __mpi_types_MOD_ompi_comm_op_ne in this build"
                  f" (Open MPI {text(ours)}), which {path('f08_compare')} needs: Open MPI 5.0's `use mpi_f08` module"
                  in result.stdout, "the checker does not refuse 5.0's mpi_f08 module")
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", path("f08_compare")],
                         env=mpirun_env(prefix))
            check(result.returncode != 0 and "undefined symbol: __mpi_types_MOD_ompi_comm_op_eq"
                  in result.stdout + result.stderr, "5.0's mpi_f08 program, started anyway, did not stop there")

        # 2. The logger built by the other's mpicc over this build: this build's
        # own first, then a planted wrong prediction must be reported.
        for build, name in ((prefix, "logger_this.so"), (other, "logger_other.so")):
            mpicc(build, "-O2", "-g", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", logger_c,
                  "-o", path(name), "-lpthread")
        held, what = logger_record(prefix, path("logger_this.so"), constructors, path("events_this"), [0, 1, 2],
                                   "this build's logger")
        check(held, what)
        held, what = logger_record(prefix, path("logger_this.so"), constructors, path("events_control"),
                                   [0, 1, 2, 3], "control: a planted fourth tag")
        check(not held, "the planted fourth tag was not reported: " + what)
        held, what = logger_record(prefix, path("logger_other.so"), constructors, path("events_other"), [0, 1, 2],
                                   f"the logger built for Open MPI {text(theirs)}")
        check(held, what)

        # 3. The helper built by the other's install.sh, under a program of this build's mpifort.
        helper = path("helper_other")
        check(run([install_sh, other, helper], timeout=180).returncode == 0, "install.sh of the other build failed")
        modules = [r for r, _, fs in os.walk(helper) if "spc_counters.mod" in fs]
        built = run([os.path.join(prefix, "bin", "mpifort"), "-I" + (modules[0] if modules else helper),
                     "-o", path("sends_other_helper"), sends_f90, "-L" + helper + "/lib",
                     "-Wl,-rpath," + helper + "/lib", "-lspc_fortran"], timeout=180)
        if check(built.returncode == 0, "this build's mpifort could not build on the other's helper"):
            # the helper's folder before ours: this build has a helper of its own
            first = f"{helper}/lib:{prefix}/lib"
            loads = run(["ldd", path("sends_other_helper")], env=dict(mpirun_env(prefix), LD_LIBRARY_PATH=first)).stdout
            check(f"{helper}/lib/libspc_fortran.so" in loads and libmpi(prefix) in
                  {os.path.realpath(w) for w in re.findall(r"libmpi\.so\.40 => (\S+)", loads)},
                  "the program does not load the other's helper over this libmpi")
            result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2", "-x", "LD_LIBRARY_PATH=" + first,
                          path("sends_other_helper")], env=mpirun_env(prefix))
            check(result.returncode == 0 and "rank 0 sent 10" in result.stdout and "rank 1 sent 0" in result.stdout,
                  "the other build's helper does not read the sends exactly")

        # 4. Open MPI 5's mpirun, an Open MPI 4 libmpi.
        mpirun5 = os.path.join(p5, "bin", "mpirun")
        result = run([mpirun5, "-np", "2", "/usr/bin/python3", "-c", MPI4PY_HELLO], env=bare_env())
        check(result.returncode == 0 and result.stdout.count("python rank 0 of 1 Open MPI v4.1.4") == 2,
              "control: Debian's mpi4py under the 5.0 mpirun did not run each rank alone")
        logger4, logger5 = ((path("logger_this.so"), path("logger_other.so")) if ours[0] < 5
                            else (path("logger_other.so"), path("logger_this.so")))
        result = run([mpirun5, "-np", "2", "-x", "LD_PRELOAD=" + logger4, "/usr/bin/python3", "-c", MPI4PY_HELLO],
                     env=bare_env())
        stopped(result, "spc-event-logger", v4, v5, v4, libmpi(p4))
        result = run([mpirun5, "-np", "2", "-x", "LD_PRELOAD=" + logger4, "-x", "LD_LIBRARY_PATH=" + p5 + "/lib",
                      "-x", "SPC_EVENTS_DIR=" + path("events_python"), "/usr/bin/python3", "-c", MPI4PY_HELLO],
                     env=bare_env())
        check(result.returncode == 0 and "python rank 1 of 2 Open MPI v" + text(v5) in result.stdout
              and "stops here" not in result.stderr, "the 4.1 logger with the 5.0 lib/ first: not a clean run")

        run([DEBIAN_MPICC, "-o", path("debian_ping"), ping_c])
        result = run([mpirun5, "-np", "2", "-x", "LD_PRELOAD=" + logger5, path("debian_ping"), "3", "1"],
                     env=bare_env())
        stopped(result, "spc-event-logger", v5, v5, (4, 1, 4),
                os.path.realpath("/usr/lib/x86_64-linux-gnu/libmpi.so.40"))

        helper4 = path("helper4")
        check(run([install_sh, p4, helper4], timeout=180).returncode == 0, "install.sh of the 4.1 build failed")
        modules = [r for r, _, fs in os.walk(helper4) if "spc_counters.mod" in fs]
        built = run([os.path.join(p4, "bin", "mpifort"), "-I" + (modules[0] if modules else helper4),
                     "-o", path("sends4"), sends_f90, "-L" + helper4 + "/lib", "-Wl,-rpath," + helper4 + "/lib",
                     "-lspc_fortran"], timeout=180)
        if check(built.returncode == 0, "the 4.1 mpifort could not build on its helper"):
            result = run([mpirun5, "-np", "2", path("sends4")], env=bare_env())
            stopped(result, "spc_counters", v4, v5, v4, libmpi(p4))
            result = run([mpirun5, "-np", "2", "-x", "LD_LIBRARY_PATH=" + p5 + "/lib", path("sends4")],
                         env=bare_env())
            check(result.returncode == 0 and "rank 0 sent 10" in result.stdout and "stops here" not in result.stderr,
                  "the 4.1 program and helper with the 5.0 lib/ first: not exact")
    finish()


if __name__ == "__main__":
    main()
