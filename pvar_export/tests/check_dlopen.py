#!/usr/bin/env python3
"""Loads the built libmpi the way language bindings do (dlopen with
RTLD_NOW | RTLD_GLOBAL, as mpi4py does), initialises MPI, counts 5 calls of
MPI_Wtime through mpi_spc_attach and reads them through libspc.  Fails if
libmpi cannot be loaded this way (e.g. its initial-exec thread-local data
outgrew the static TLS surplus) or if the count is wrong.

usage: check_dlopen.py OMPI_PREFIX   (run it under mpirun -np 1)"""
import ctypes
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lib = os.path.join(sys.argv[1], "lib")
    os.environ["OMPI_MCA_mpi_spc_attach"] = "WTIME"
    mpi = ctypes.CDLL(os.path.join(lib, "libmpi.so"), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
    spc = ctypes.CDLL(os.path.join(lib, "libspc.so"), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
    spc.spc_read.restype = ctypes.c_uint64
    mpi.MPI_Wtime.restype = ctypes.c_double
    if mpi.MPI_Init(None, None) != 0:
        sys.exit("FAIL: MPI_Init")
    wtime = spc.spc_counter_find(b"WTIME")
    before = spc.spc_read(wtime)
    for _ in range(5):
        mpi.MPI_Wtime()
    counted = spc.spc_read(wtime) - before
    mpi.MPI_Finalize()
    print(f"dlopen'ed libmpi: 5 MPI_Wtime calls counted as {counted}")
    sys.exit(0 if counted == 5 else 1)


if __name__ == "__main__":
    main()
