"""Rank program of check_mpi4py.py, run by Debian's /usr/bin/python3 with its
python3-mpi4py on 2 ranks: rank 0 sends MESSAGES Python objects to rank 1
with comm.send, rank 1 answers once; rank 0 writes to REPORT (JSON) which
libmpi and mpi4py this process loaded and what the traffic must give: the
calls counted by this program's loops, the bytes summed here from the very
pickles mpi4py sends.

usage: mpirun -np 2 /usr/bin/python3 mpi4py_ping.py REPORT"""
import json
import os
import sys

import mpi4py
from mpi4py import MPI

MESSAGES = 100
DATA, REPLY = 7, 8


def loaded_libmpi():
    """The path of the libmpi.so.40 mapped into this process."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "/libmpi.so.40" in line:
                return os.path.realpath(line.split()[-1])
    return None


def main():
    comm = MPI.COMM_WORLD
    if comm.size != 2 or len(sys.argv) != 2:
        sys.exit(__doc__)
    objects = [list(range(i)) for i in range(MESSAGES)]  # pickles of growing size
    if comm.rank == 0:
        for item in objects:
            comm.send(item, dest=1, tag=DATA)
        reply = comm.recv(source=1, tag=REPLY)  # mpi4py receives with MPI_Mprobe + MPI_Mrecv
        sent = sum(len(MPI.pickle.dumps(item)) for item in objects)
        back = len(MPI.pickle.dumps(reply))
        report = {
            "library_version": MPI.Get_library_version(),
            "mpi4py": mpi4py.__file__,
            "libmpi": loaded_libmpi(),
            "reply": reply,
            "predicted": {
                "0": {"SEND": MESSAGES, "MPROBE": 1, "MRECV": 1,
                      "BYTES_SENT_USER": sent, "BYTES_RECEIVED_USER": back},
                "1": {"SEND": 1, "MPROBE": MESSAGES, "MRECV": MESSAGES,
                      "BYTES_SENT_USER": back, "BYTES_RECEIVED_USER": sent},
            },
        }
        with open(sys.argv[1], "w") as f:
            json.dump(report, f, indent=1)
    else:
        received = [comm.recv(source=0, tag=DATA) for _ in range(MESSAGES)]
        comm.send(sum(map(len, received)) if received == objects else -1, dest=0, tag=REPLY)


if __name__ == "__main__":
    main()
