"""Runs the Fortran counting program (counts.F90, on the binding its
options choose) on 2 ranks under our mpirun with every counter on and the
finalize CSV, under the PML its --mpirun-arg options select (ob1 without),
and checks what it predicts: the program checks its phases'
counts itself (through PAPI, and through MPI_T with the spc_counters module
when built by our mpifort) and writes the totals the CSV must hold
("predict RANK NAME VALUE", "predict_comm RANK NAME VALUE" for its
duplicate communicator "fortran dup") to a file per rank; this script
compares those with the CSV and the per-communicator CSV, each value
exactly.

usage: /usr/bin/python3 check_counts.py HOW PREFIX SOURCE SCRATCH [--mpifh|--f08] [--control]
                                       [--mpirun-arg=ARG ...]
  HOW  ours            built by PREFIX/bin/mpifort with the spc_counters module
                       (from $SPC_FORTRAN_HELPER if set, a folder install.sh
                       installed into, else PREFIX)
       debian          built by Debian's mpifort: the binary resolves to
                       Debian's libraries on its own and carries no path to
                       our build; run with our lib/ first in LD_LIBRARY_PATH
       debian-fortran  built by Debian's mpifort, run with a folder of
                       Debian's own Fortran libraries first in
                       LD_LIBRARY_PATH and our lib/ after it: Debian's
                       Fortran layer over our libmpi; also run plain under
                       Debian's own mpirun and libraries, for the value of
                       MPI_TAG_UB, which must be the same
  (neither)  builds SOURCE on `use mpi`: counts_mpi
  --mpifh    builds SOURCE with -DSPC_MPIFH, on include 'mpif.h': counts_mpifh
  --f08      builds SOURCE with -DSPC_F08, on `use mpi_f08`: counts_f08
  --control  also runs the program with a planted wrong prediction (rank 0's
             phase A SEND one too many): the program must fail its PAPI
             (and MPI_T) checks, and the CSV comparison must name exactly
             (0, SEND); under a PML that does not count one of the
             program's counters, also the job under ob1 with that PML's
             prediction: every check that fails must name those counters
  --mpirun-arg=ARG  one argument of mpirun that selects the job's PML
             (repeated: pml_mpirun_args of pvar_export/tests/meson.build);
             the PML is the value of their --mca pml.  What it does not
             count of the program's counters (NOT_COUNTED) has no MPI_T
             variable, reads -1 through PAPI (not registered) and has no row in the CSVs"""
import csv
import os
import re
import sys
import tempfile

# tools/tests/common.py, on PYTHONPATH (tools/fortran/meson.build sets it)
from common import check, finish, mpirun_env, read_counters, run

DEBIAN_MPIFORT = "/usr/bin/mpifort.openmpi"
DEBIAN_MPIRUN = "/usr/bin/mpirun.openmpi"
DEBIAN_LIBDIR = "/usr/lib/x86_64-linux-gnu"
# Open MPI's three Fortran libraries (what Debian's libopenmpi3 ships).
FORTRAN_LIBRARIES = ("libmpi_mpifh.so.40", "libmpi_usempi_ignore_tkr.so.40", "libmpi_usempif08.so.40")
# The counters the programs predict in total (UNEXPECTED is exact per phase
# and on the duplicate only: collectives' own messages may be unexpected),
# and those bound to the duplicate.
PREDICTED = {"SEND", "RECV", "ISEND", "IRECV", "WAIT", "WAITALL", "TEST", "PROBE", "BARRIER", "BCAST",
             "ALLREDUCE", "ALLTOALLW", "PUT", "GET", "COMM_DUP", "BYTES_SENT_USER",
             "BYTES_RECEIVED_USER"}
PREDICTED_BOUND = {"SEND", "RECV", "BYTES_SENT_USER", "BYTES_RECEIVED_USER", "UNEXPECTED"}
DUP_NAME = "fortran dup"
# Of those, what each PML does not count (pvar_export/ompi/ompi_spc_pmls.def,
# restated here on purpose: the prediction); the others count them all.
NOT_COUNTED = {"cm": {"UNEXPECTED"}}
MPIRUN_ARG = "--mpirun-arg="
# The options that choose counts.F90's binding: its define, the program's name.
BINDINGS = {"--mpifh": ("SPC_MPIFH", "counts_mpifh"), "--f08": ("SPC_F08", "counts_f08")}
USE_MPI = "counts_mpi"


def predictions(path):
    """The totals the program wrote to path.RANK: {(rank, name): value}, and its duplicate's."""
    totals, bound = {}, {}
    lines = []
    for rank in (0, 1):
        if check(os.path.exists(f"{path}.{rank}"), f"rank {rank} wrote no predictions ({path}.{rank})"):
            with open(f"{path}.{rank}") as f:
                lines += f.read().splitlines()
    for line in lines:
        fields = line.split()
        if len(fields) == 4 and fields[0] in ("predict", "predict_comm"):
            target = totals if fields[0] == "predict" else bound
            target[(int(fields[1]), fields[2])] = int(fields[3])
    return totals, bound


def read_comm_counters(path, comm_name):
    """{(rank, counter without OMPI_SPC_): value} of one communicator of the
    per-communicator CSV (mpi_spc_dump_file's NAME.comms.csv)."""
    with open(path) as f:
        return {(int(row["rank"]), row["counter"].removeprefix("OMPI_SPC_")): int(row["value"])
                for row in csv.DictReader(f) if row["comm_name"] == comm_name}


def mismatches(predicted, values):
    """The keys whose value differs from the prediction (a missing one is 0)."""
    return sorted(key for key, value in predicted.items() if values.get(key, 0) != value)


def offered(values, not_counted):
    """("offered", rank, name) of each row of a counter the PML does not count."""
    return sorted(("offered",) + key for key in values if key[1] in not_counted)


def selected_pml(mpirun_args):
    """The PML mpirun's arguments select: the value of their --mca pml."""
    for at in range(len(mpirun_args) - 2):
        if mpirun_args[at] in ("--mca", "-mca") and mpirun_args[at + 1] == "pml":
            return mpirun_args[at + 2]
    return "ob1"


def run_job(prefix, program, folder, library_path, mode, mpirun_args, not_counted, label=None):
    """Our mpirun, 2 ranks, every counter on, the finalize CSV, the PML of
    mpirun_args (vader's BTL for ob1); label (default mode) names the files."""
    label = label or mode
    csv_path = os.path.join(folder, f"spc-{label}.csv")
    predicted = os.path.join(folder, f"predicted-{label}")
    for stale in (csv_path, csv_path.replace(".csv", ".comms.csv"), predicted + ".0", predicted + ".1"):
        if os.path.exists(stale):
            os.remove(stale)
    # --noprefix: mpirun started by its full path would put our lib/ in
    # front of the LD_LIBRARY_PATH it passes (as --prefix does), before
    # Debian's Fortran libraries of debian-fortran.
    result = run([os.path.join(prefix, "bin", "mpirun"), "--noprefix", "-np", "2", "--mca", "btl", "self,vader",
                  *mpirun_args, "-x", "LD_LIBRARY_PATH=" + library_path,
                  "--mca", "mpi_spc_attach", "all,traffic", "--mca", "mpi_spc_dump_enabled", "true",
                  "--mca", "mpi_spc_dump_file", csv_path, program, mode, predicted]
                 + ([",".join(sorted(not_counted))] if not_counted else []),
                 env=mpirun_env(prefix), timeout=120)
    return result, csv_path, predicted


def compare_csv(predicted, csv_path, what, not_counted):
    """The CSV against the program's totals; the keys that differ, and a
    row of a counter the PML does not count as ("offered", rank, name)."""
    totals, bound = predictions(predicted)
    every = {(rank, name) for rank in (0, 1) for name in PREDICTED - not_counted}
    check(set(totals) == every, f"{what}: the program wrote no total of {sorted(every - set(totals))}, "
                                f"and one of {sorted(set(totals) - every)} not expected")
    every = {(rank, name) for rank in (0, 1) for name in PREDICTED_BOUND - not_counted}
    check(set(bound) == every, f"{what}: the program wrote no bound count of {sorted(every - set(bound))}, "
                               f"and one of {sorted(set(bound) - every)} not expected")
    if not check(os.path.exists(csv_path), f"{what}: no CSV at {csv_path}"):
        return None
    values = read_counters(csv_path)
    wrong = mismatches(totals, values) + offered(values, not_counted)
    comms_path = csv_path.replace(".csv", ".comms.csv")
    if check(os.path.exists(comms_path), f"{what}: no per-communicator CSV at {comms_path}"):
        comm_values = read_comm_counters(comms_path, DUP_NAME)
        check(comm_values, f"{what}: no rows of \"{DUP_NAME}\" in {comms_path}")
        wrong += [("comm",) + key for key in mismatches(bound, comm_values) + offered(comm_values, not_counted)]
    print(f"{what}: {len(totals)} totals and {len(bound)} bound counts predicted; differing: {wrong}")
    return wrong


def control_not_counted(prefix, program, folder, library_path, how, not_counted):
    """The job under ob1, which counts them all, with the prediction that
    not_counted are not counted: every check that fails must name them, the
    MPI_T ones (with our mpifort) on both ranks, process-wide and bound."""
    result, csv_path, predicted = run_job(prefix, program, folder, library_path, "count", ["--mca", "pml", "ob1"],
                                          not_counted, label="ob1")
    # Not anchored at a line's start: mpirun forwards rank 0's finalize
    # report in pipe-sized chunks, and the other rank's line can land inside
    # one of its lines.
    failed = re.findall(r"FAIL rank (\d)\S* (?:phase \d )?(\w+)(.*)$", result.stdout, re.M)
    check(result.returncode != 0 and failed and {name for _, name, _ in failed} <= not_counted,
          f"control: under ob1, predicting {sorted(not_counted)} not counted did not fail the job on them "
          f"alone ({failed})")
    if how == "ours":
        offered_vars = {(int(rank), name, rest.startswith(" bound")) for rank, name, rest in failed
                        if "not counted by this PML, is offered" in rest}
        every = {(rank, name, bound) for rank in (0, 1) for name in not_counted for bound in (False, True)
                 if not bound or name in PREDICTED_BOUND}
        check(offered_vars == every, f"control: under ob1, the program named {sorted(offered_vars)} offered "
                                     f"through MPI_T, not {sorted(every)}")
    rows = {("offered", rank, name) for rank in (0, 1) for name in not_counted}
    rows |= {("comm",) + row for row in rows if row[2] in PREDICTED_BOUND}
    wrong = compare_csv(predicted, csv_path, "control under ob1", not_counted)
    check(set(wrong or []) == rows, f"control: under ob1, the CSV comparison did not name exactly the rows of "
                                    f"{sorted(not_counted)} ({wrong})")


def ldd(program, library_path):
    """{soname: resolved path} as the dynamic loader finds them."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    if library_path:
        env["LD_LIBRARY_PATH"] = library_path
    result = run(["ldd", program], env=env)
    found = {}
    for line in result.stdout.splitlines():
        match = re.match(r"\s*(\S+) => (\S+)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def build(how, prefix, source, folder, name, defines):
    """Compiles source (-Wall -Werror, -D each of defines) as HOW says into
    folder/NAME-HOW; its path."""
    program = os.path.join(folder, name + "-" + how)
    papi = ["-I/usr/include", "-lpapi"] + ["-D" + define for define in defines]
    if how == "ours":
        helper = os.path.realpath(os.environ.get("SPC_FORTRAN_HELPER") or prefix)
        mpifort = os.path.join(prefix, "bin", "mpifort")
        flags = run([mpifort, "--showme:compile"]).stdout.split()
        module_dirs = [f[2:] for f in flags if f.startswith("-I") and os.path.exists(os.path.join(f[2:], "mpi.mod"))]
        if not check(module_dirs, f"{mpifort} finds no mpi.mod"):
            finish()
        module_dir = os.path.join(helper, os.path.relpath(module_dirs[-1], prefix))
        check(os.path.exists(os.path.join(module_dir, "spc_counters.mod")),
              f"no spc_counters.mod in {module_dir} (tools/fortran/install.sh)")
        command = [mpifort, "-Wall", "-Werror", "-O2", "-DSPC_HELPER", "-I" + module_dir, "-o", program,
                   source, "-L" + os.path.join(helper, "lib"), "-Wl,-rpath," + os.path.join(helper, "lib"),
                   "-lspc_fortran"] + papi
    else:
        command = [DEBIAN_MPIFORT, "-Wall", "-Werror", "-O2", "-o", program, source] + papi
    built = run(command, timeout=180)
    if not check(built.returncode == 0, f"{command[0]} could not build {source}"):
        finish()
    return program


def check_debian_binary(program, prefix):
    """Built by Debian's mpifort: no path to our build in it, and on its own
    it loads Debian's Open MPI."""
    dynamic = run(["readelf", "-dW", program]).stdout
    with open(program, "rb") as f:
        check(prefix.encode() not in f.read(), "the program carries a path to our build")
    needed = [name for name in FORTRAN_LIBRARIES if f"[{name}]" in dynamic]
    check(len(needed) == 1, f"the program needs one Open MPI Fortran library, not {needed}")
    alone = ldd(program, None)
    for name in needed + ["libmpi.so.40"]:
        check(in_folder(alone.get(name), DEBIAN_LIBDIR),
              f"on its own the program loads {name} from {alone.get(name)}, not {DEBIAN_LIBDIR}")
    return needed[0] if needed else None


def in_folder(path, folder):
    """Whether the file path (links followed) lies in folder (links followed:
    Debian's /lib is /usr/lib)."""
    return bool(path) and os.path.dirname(os.path.realpath(path)) == os.path.realpath(folder)


def debian_fortran_folder(folder):
    """A folder of links to Debian's three Fortran libraries, and nothing else."""
    path = os.path.join(folder, "debian-fortran")
    os.makedirs(path, exist_ok=True)
    for name in FORTRAN_LIBRARIES:
        link = os.path.join(path, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join(DEBIAN_LIBDIR, name), link)
    return path


def main():
    mpirun_args = [a[len(MPIRUN_ARG):] for a in sys.argv[1:] if a.startswith(MPIRUN_ARG)]
    args = [a for a in sys.argv[1:] if a != "--control" and a not in BINDINGS and not a.startswith(MPIRUN_ARG)]
    control = "--control" in sys.argv[1:]
    bindings = [BINDINGS[a] for a in sys.argv[1:] if a in BINDINGS]
    pml = selected_pml(mpirun_args)
    if len(args) != 4 or args[0] not in ("ours", "debian", "debian-fortran") or len(bindings) > 1 \
            or pml not in ("ob1", "ucx", "cm"):
        sys.exit(__doc__)
    not_counted = NOT_COUNTED.get(pml, set())
    defines, name = ([bindings[0][0]], bindings[0][1]) if bindings else ([], USE_MPI)
    how, prefix, source, scratch = args
    prefix = os.path.realpath(prefix)
    ours = os.path.join(prefix, "lib")
    os.makedirs(scratch, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        program = build(how, prefix, source, folder, name, defines)
        library_path = ours
        if how != "ours":
            fortran = check_debian_binary(program, prefix)
        if how == "debian":
            loaded = ldd(program, library_path)
            for name in (fortran, "libmpi.so.40"):
                check(in_folder(loaded.get(name), ours),
                      f"with our lib/ first, {name} loads from {loaded.get(name)}")
        elif how == "debian-fortran":
            debian_fortran = debian_fortran_folder(folder)
            library_path = debian_fortran + ":" + ours
            loaded = ldd(program, library_path)
            check(loaded.get(fortran) == os.path.join(debian_fortran, fortran)
                  and in_folder(loaded.get(fortran), DEBIAN_LIBDIR),
                  f"{fortran} loads from {loaded.get(fortran)}, not from {debian_fortran} (Debian's)")
            check(in_folder(loaded.get("libmpi.so.40"), ours),
                  f"libmpi.so.40 loads from {loaded.get('libmpi.so.40')}, not ours")
            # The same program on Debian's own Open MPI: its MPI_TAG_UB.
            env = {k: v for k, v in mpirun_env(prefix).items() if k != "LD_LIBRARY_PATH"}
            plain = run([DEBIAN_MPIRUN, "-np", "2", "--mca", "btl", "self,vader", program, "plain"],
                        env=env, timeout=120)
            check(plain.returncode == 0 and "package: Debian OpenMPI" in plain.stdout,
                  "the plain run on Debian's own Open MPI failed")
            debian_tag_ub = re.findall(r"tag_ub (\d+)", plain.stdout)

        result, csv_path, predicted = run_job(prefix, program, folder, library_path, "count", mpirun_args,
                                              not_counted)
        check(result.returncode == 0, f"{how}: the job failed (or a check inside it)")
        # the finalize report names the PML when it leaves counters out
        check((f"(not counted by pml {pml}: " in result.stdout) == (pml != "ob1"),
              f"the job did not run under pml {pml} (the finalize report's line of what it does not count)")
        check("(ompi-spc spc)" in result.stdout, "the libmpi the program printed is not our build's")
        # What rank 0 really loaded (its /proc/self/maps): libmpi ours, and
        # the Fortran layer ours, or Debian's for debian-fortran.
        loaded = {os.path.basename(path).split(".so")[0]: path
                  for path in re.findall(r"loaded (\S+)", result.stdout)}
        check("libmpi" in loaded and in_folder(loaded["libmpi"], ours), f"libmpi loaded: {loaded.get('libmpi')}")
        layers = [name for name in loaded if name != "libmpi"]
        check(layers, f"no Open MPI Fortran library loaded: {loaded}")
        for name in layers:
            check(in_folder(loaded[name], DEBIAN_LIBDIR if how == "debian-fortran" else ours),
                  f"{how}: {name} loaded from {loaded[name]}")
        check(result.stdout.count(": all checks passed") == 2, "not every rank passed its own checks")
        wrong = compare_csv(predicted, csv_path, how, not_counted)
        check(wrong == [], f"{how}: CSV differs from the predictions at {wrong}")
        if how == "debian-fortran":
            ours_tag_ub = re.findall(r"tag_ub (\d+)", result.stdout)
            check(len(debian_tag_ub) == 1 and ours_tag_ub == debian_tag_ub,
                  f"MPI_TAG_UB through Debian's Fortran layer: {ours_tag_ub} over our libmpi, "
                  f"{debian_tag_ub} over Debian's")

        if control:
            planted, planted_csv, planted_predicted = run_job(prefix, program, folder, library_path, "plant",
                                                              mpirun_args, not_counted)
            check(planted.returncode != 0, "control: a planted wrong prediction did not fail the job")
            papi_line = re.search(r"FAIL rank 0 phase 1 SEND through PAPI: (\d+), predicted (\d+)", planted.stdout)
            check(papi_line is not None and int(papi_line.group(2)) == int(papi_line.group(1)) + 1,
                  "control: the program's PAPI check did not report SEND off by one")
            if how == "ours":
                check(re.search(r"FAIL rank 0 phase 1 SEND through MPI_T: (\d+), predicted", planted.stdout),
                      "control: the program's MPI_T check did not report SEND")
            check(len(re.findall(r"FAIL rank", planted.stdout)) == (2 if how == "ours" else 1),
                  "control: checks other than the planted one failed")
            check(compare_csv(planted_predicted, planted_csv, "control", not_counted) == [(0, "SEND")],
                  "control: the CSV comparison did not name exactly (0, SEND)")
            if not_counted:
                control_not_counted(prefix, program, folder, library_path, how, not_counted)
    finish()


if __name__ == "__main__":
    main()
