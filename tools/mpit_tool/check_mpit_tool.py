"""The MPI_T tool of spc_mpit_tool.c, preloaded into unchanged programs on 2
ranks under our mpirun with our libmpi: system_ping.c built by Debian's
mpicc (MPI_Init), fortran_mpi.f90 (`use mpi`) and fortran_f08.f90
(`use mpi_f08`) built by our mpifort (their bindings call PMPI_Init), and
mpi4py_ping.py under Debian's python3-mpi4py (MPI_Init_thread).  Each rank
runs under rank_status.sh and every rank's own exit status must be 0; the
tool must have started MPI_T before MPI_Init, read every SPC variable of
the catalogue after MPI_Finalize and finalized MPI_T after it, each call
returning 0, and the values must be exactly what each program's traffic
predicts: its sends and receives counted here, its bytes summed here (for
mpi4py, from the pickles it sent, by mpi4py_ping.py).  The control: a
prediction planted one too high must be found, and only it.

usage: /usr/bin/python3 check_mpit_tool.py PREFIX TOOL CATALOGUE_LIST SYSTEM_PING_C
           FORTRAN_MPI_F90 FORTRAN_F08_F90 MPI4PY_PING SCRATCH
(PYTHONPATH: tools/tests, for common.py, and pvar_export/tests, for check_ranks.py)"""
import json
import os
import sys
import tempfile

from check_ranks import run_ranks
from common import check, finish, mpirun_env, run

DEBIAN_MPICC = "/usr/bin/mpicc.openmpi"
COUNT, STEP = 10, 1000  # system_ping: 0 to 9,000 bytes, eager and rendezvous over vader
FORTRAN_MESSAGES, FORTRAN_BYTES = 5, 5 * 3 * 4  # 5 messages of 3 default (4-byte) INTEGERs
CALLS_RETURNING_0 = ("MPI_T_init_thread", "MPI_T_pvar_session_create", "MPI_T_pvar_session_free",
                     "MPI_T_finalize", "skipped")


def read_values(path):
    """{counter without OMPI_SPC_: value, or the error line} and {call: rc} of one rank's file."""
    counters, calls = {}, {}
    with open(path) as f:
        for line in f.read().splitlines():
            name, _, rest = line.partition(" ")
            if name.startswith("OMPI_SPC_"):
                counters[name.removeprefix("OMPI_SPC_")] = int(rest) if rest.isdigit() else rest
            else:
                calls[name] = int(rest)
    return counters, calls


def mismatches(values, predicted):
    """The (rank, counter) of predicted whose value differs, with what was read."""
    return {key: values.get(key) for key, value in predicted.items() if values.get(key) != value}


def point_to_point(sends, bytes_sent, **more):
    """What rank 0 sending `sends` messages of bytes_sent bytes in all to rank 1 gives."""
    predicted = {}
    for rank in (0, 1):
        predicted.update({(rank, "SEND"): sends if rank == 0 else 0,
                          (rank, "RECV"): sends if rank == 1 else 0,
                          (rank, "BYTES_SENT_USER"): bytes_sent if rank == 0 else 0,
                          (rank, "BYTES_RECEIVED_USER"): bytes_sent if rank == 1 else 0})
        predicted.update({(rank, name): value for name, value in more.items()})
    return predicted


def run_with_tool(prefix, tool, catalogue, folder, name, program):
    """Runs program with the tool; its values {(rank, counter): value}, or None."""
    output = os.path.join(folder, name)
    failures = run_ranks(os.path.join(prefix, "bin", "mpirun"), 2,
                         ["--mca", "btl", "self,vader", "-x", "LD_LIBRARY_PATH=" + os.path.join(prefix, "lib"),
                          "-x", "SPC_MPIT_TOOL_OUTPUT=" + output],
                         # the tool goes into the program only, not into rank_status.sh's shell
                         ["env", "LD_PRELOAD=" + tool, *program], env=mpirun_env(prefix))
    for failure in failures:
        check(False, f"{name}: {failure}")
    values = {}
    for rank in (0, 1):
        if not check(os.path.exists(f"{output}.{rank}"), f"{name}: rank {rank}: the tool wrote nothing"):
            return None
        counters, calls = read_values(f"{output}.{rank}")
        print(f"{name}, rank {rank}: {len(counters)} variables read after MPI_Finalize; {calls}")
        for call in CALLS_RETURNING_0:
            check(calls.get(call) == 0, f"{name}: rank {rank}: {call} gave {calls.get(call)}, not 0")
        check(set(counters) == set(catalogue),
              f"{name}: rank {rank}: variables read {sorted(set(counters) ^ set(catalogue))} "
              "are not those of the catalogue")
        failed = [f"{counter} {value}" for counter, value in counters.items() if not isinstance(value, int)]
        check(not failed, f"{name}: rank {rank}: {len(failed)} variables not read, such as {failed[:2]}")
        values.update({(rank, counter): value for counter, value in counters.items()})
    return values


def main():
    if len(sys.argv) != 9:
        sys.exit(__doc__)
    prefix, tool, catalogue_list, ping_c, fortran_mpi, fortran_f08, mpi4py_ping, scratch = sys.argv[1:]
    prefix, tool = os.path.realpath(prefix), os.path.realpath(tool)
    catalogue = [line.split("\t")[0].removeprefix("OMPI_SPC_")
                 for line in run([catalogue_list]).stdout.splitlines()]
    os.makedirs(scratch, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        programs = {}
        ping = os.path.join(folder, "system_ping")
        if check(run([DEBIAN_MPICC, "-O2", "-o", ping, ping_c]).returncode == 0, "Debian's mpicc failed"):
            sent = sum(i * STEP for i in range(COUNT))
            programs["C"] = ([ping, str(COUNT), str(STEP)], point_to_point(COUNT, sent, ALLREDUCE=1))
        for binding, source in (("Fortran use mpi", fortran_mpi), ("Fortran use mpi_f08", fortran_f08)):
            binary = os.path.join(folder, os.path.basename(source).removesuffix(".f90"))
            if check(run([os.path.join(prefix, "bin", "mpifort"), "-o", binary, source]).returncode == 0,
                     f"our mpifort could not build {source}"):
                programs[binding] = ([binary], point_to_point(FORTRAN_MESSAGES, FORTRAN_BYTES))
        report = os.path.join(folder, "mpi4py.json")
        programs["mpi4py"] = (["/usr/bin/python3", mpi4py_ping, report], None)

        for name, (program, predicted) in programs.items():
            values = run_with_tool(prefix, tool, catalogue, folder, name.replace(" ", "_"), program)
            if values is None:
                continue
            if predicted is None:  # mpi4py_ping.py wrote its predictions
                if not check(os.path.exists(report), "mpi4py_ping.py wrote no report"):
                    continue
                with open(report) as f:
                    predicted = {(int(rank), counter): value
                                 for rank, counters in json.load(f)["predicted"].items()
                                 for counter, value in counters.items()}
            print(f"{name}: predicted {sorted(predicted.items())}")
            wrong = mismatches(values, predicted)
            check(not wrong, f"{name}: read after MPI_Finalize {wrong}, predicted "
                             f"{ {key: predicted[key] for key in wrong} }")
            if name == "C" and not wrong:  # the control, on values that are right
                planted = dict(predicted)
                planted[(0, "SEND")] += 1
                check(list(mismatches(values, planted)) == [(0, "SEND")],
                      f"control: a planted SEND on rank 0 was not the one mismatch found: "
                      f"{mismatches(values, planted)}")
    finish()


if __name__ == "__main__":
    main()
