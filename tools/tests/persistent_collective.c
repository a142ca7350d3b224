/* A persistent collective as Open MPI 4.1 has it (its MPI extension
 * pcollreq: MPIX_Allreduce_init in mpi-ext.h), built by check_checker.py
 * with Debian's mpicc; Open MPI 5.0 has MPI 4.0's MPI_Allreduce_init
 * instead.  Every rank prints the sum of the ranks, twice (the request is
 * started twice). */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, sum = -1;
    MPI_Request request;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPIX_Allreduce_init(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &request);
    for (int round = 0; round < 2; ++round) {
        MPI_Start(&request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        printf("rank %d: sum %d\n", rank, sum);
    }
    MPI_Request_free(&request);
    MPI_Finalize();
    return 0;
}
