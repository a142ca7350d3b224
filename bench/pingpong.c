/* A 1-byte MPI_Send/MPI_Recv ping-pong between ranks 0 and 1, the pattern of
 * NetPIPE's latency test, small enough to run under callgrind.
 * usage: pingpong MESSAGES [probe] [wait]   (each rank sends MESSAGES messages)
 *   probe: each receive first waits in MPI_Probe for its message, so that
 *          MPI_Recv itself never waits: under pml ucx, whose receive
 *          matches inside MPI_Recv, its instructions are then the same run
 *          after run (netpipe_runs/instruction_budget.py --pml ucx)
 *   wait:  then MESSAGES round trips more, nonblocking: MPI_Isend and
 *          MPI_Irecv each completed by its MPI_Wait, each MPI_Irecv posted
 *          after MPI_Probe saw its message, so that no MPI_Wait waits (nor
 *          polls a count that changes run to run); the phase begins with a
 *          call of pingpong_wait_phase(), where callgrind --dump-before
 *          parts the two phases' profiles (instruction_budget.py) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Called once, between the phases: a symbol for callgrind --dump-before. */
__attribute__((noinline)) void pingpong_wait_phase(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long messages = argc >= 2 ? strtol(argv[1], NULL, 10) : 0;
    int probe = 0, wait = 0, bad = argc > 4;
    for (int i = 2; i < argc && !bad; ++i) {
        if (0 == strcmp(argv[i], "probe") && !probe && !wait) {
            probe = 1;
        } else if (0 == strcmp(argv[i], "wait") && !wait) {
            wait = 1;
        } else {
            bad = 1;
        }
    }
    if (size != 2 || messages <= 0 || bad) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np 2 pingpong MESSAGES [probe] [wait]\n");
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
    if (wait) {
        pingpong_wait_phase();
        MPI_Request request;
        for (long i = 0; i < messages; ++i) {
            if (rank == 0) {
                MPI_Isend(&byte, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, &request);
                MPI_Wait(&request, MPI_STATUS_IGNORE);
            }
            MPI_Probe(peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Irecv(&byte, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, &request);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
            if (rank == 1) {
                MPI_Isend(&byte, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, &request);
                MPI_Wait(&request, MPI_STATUS_IGNORE);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
