"""analysis.time_plot on a finalize CSV made for the test: each rank's
families read in seconds, the picture written, and a CSV without the time
counters refused with a line that says how to attach them."""
import os
import subprocess
import sys
import tempfile

from analysis import time_plot

CSV = """rank,counter,value,unit,jobid,step,node
0,OMPI_SPC_SEND,3,calls,1,,n1
0,OMPI_SPC_MPI_TIME,350000,microseconds,1,,n1
0,OMPI_SPC_P2P_TIME,200000,microseconds,1,,n1
0,OMPI_SPC_COLLECTIVE_TIME,150000,microseconds,1,,n1
1,OMPI_SPC_MPI_TIME,50000,microseconds,1,,n1
1,OMPI_SPC_P2P_TIME,0,microseconds,1,,n1
1,OMPI_SPC_COLLECTIVE_TIME,50000,microseconds,1,,n1
1,OMPI_SPC_BARRIER_TIME,50000,microseconds,1,,n1
"""


def main():
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "report.csv")
        with open(path, "w") as f:
            f.write(CSV)
        ranks = time_plot.seconds_by_rank(path)
        expected = {0: {"MPI_TIME": 0.35, "P2P_TIME": 0.2, "COLLECTIVE_TIME": 0.15},
                    1: {"MPI_TIME": 0.05, "P2P_TIME": 0.0, "COLLECTIVE_TIME": 0.05}}
        if ranks != expected:
            failures.append(f"families by rank: {ranks}, expected {expected} (BARRIER_TIME is no family)")
        out = os.path.join(folder, "t.png")
        time_plot.plot(ranks, out, "test")
        if not os.path.getsize(out) > 1000:
            failures.append("no picture written")
        # the control: a report without the time counters is refused, saying how to attach them
        with open(path, "w") as f:
            f.write(CSV.split("\n")[0] + "\n0,OMPI_SPC_SEND,3,calls,1,,n1\n")
        result = subprocess.run([sys.executable, "-m", "analysis.time_plot", path], capture_output=True, text=True)
        if result.returncode == 0 or "mpi_spc_attach MPI_TIME" not in result.stderr:
            failures.append(f"a report without time counters: status {result.returncode}, {result.stderr!r}")
    for failure in failures:
        print("FAIL:", failure)
    print("time_plot:", "all checks passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
