/* A 1-byte MPI_Send/MPI_Recv ping-pong between ranks 0 and 1, the pattern of
 * NetPIPE's latency test, small enough to run under callgrind.
 * usage: pingpong MESSAGES [probe]   (each rank sends MESSAGES messages)
 *   probe: each receive first waits in MPI_Probe for its message, so that
 *          MPI_Recv itself never waits: under pml ucx, whose receive
 *          matches inside MPI_Recv, its instructions are then the same run
 *          after run (netpipe_runs/instruction_budget.py --pml ucx) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long messages = argc >= 2 ? strtol(argv[1], NULL, 10) : 0;
    const int probe = argc == 3 && 0 == strcmp(argv[2], "probe");
    if (size != 2 || messages <= 0 || argc > 3 || (argc == 3 && !probe)) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np 2 pingpong MESSAGES [probe]\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char byte = 0;
    const int peer = 1 - rank;
    for (long i = 0; i < messages; ++i) {
        if (rank == 0) {
            MPI_Send(&byte, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        }
        if (probe) {
            MPI_Probe(peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Recv(&byte, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == 1) {
            MPI_Send(&byte, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
