"""Runs Debian's python3-mpi4py (built against Debian's Open MPI 4.1.4) on 2
ranks under our mpirun with our libmpi (mpirun -x LD_LIBRARY_PATH=PREFIX/lib)
and checks that the process loaded our libmpi (the mapped file and
MPI.Get_library_version) and that the finalize CSV holds exactly the calls
and bytes mpi4py_ping.py predicts.

usage: /usr/bin/python3 check_mpi4py.py PREFIX MPI4PY_PING SCRATCH [MPIRUN_ARG...]
  MPIRUN_ARG: more mpirun arguments (another PML: --mca pml ucx ...)"""
import json
import os
import sys
import tempfile

from common import check, expect_counters, finish, mpirun_env, read_counters, run


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    prefix, ping, scratch = sys.argv[1:4]
    more = sys.argv[4:]
    prefix = os.path.realpath(prefix)
    os.makedirs(scratch, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        csv_path, report_path = os.path.join(folder, "spc.csv"), os.path.join(folder, "report.json")
        result = run([os.path.join(prefix, "bin", "mpirun"), "-np", "2",
                      "-x", "LD_LIBRARY_PATH=" + os.path.join(prefix, "lib"),
                      "--mca", "mpi_spc_attach", "all", "--mca", "mpi_spc_dump_enabled", "true",
                      "--mca", "mpi_spc_dump_file", csv_path] + more + ["/usr/bin/python3", ping, report_path],
                     env=mpirun_env(prefix))
        check(result.returncode == 0, "the job failed")
        if not (check(os.path.exists(report_path), "rank 0 wrote no report")
                and check(os.path.exists(csv_path), "no CSV")):
            finish()
        with open(report_path) as f:
            report = json.load(f)
        print(json.dumps(report, indent=1))
        check(report["mpi4py"].startswith("/usr/lib/python3/dist-packages/mpi4py/"),
              f"mpi4py is not Debian's: {report['mpi4py']}")
        ours = os.path.realpath(os.path.join(prefix, "lib", "libmpi.so.40"))
        check(report["libmpi"] == ours, f"the process mapped {report['libmpi']}, not {ours}")
        check("(ompi-spc spc)" in report["library_version"],
              f"MPI.Get_library_version() does not name our build: {report['library_version']}")
        check(report["reply"] == sum(range(100)), f"rank 1 did not receive the objects intact: {report['reply']}")
        predicted = {(int(rank), counter): value
                     for rank, counters in report["predicted"].items() for counter, value in counters.items()}
        expect_counters(read_counters(csv_path), predicted, "mpi4py CSV")
    finish()


if __name__ == "__main__":
    main()
