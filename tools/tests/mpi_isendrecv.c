/* MPI 4.0's MPI_Isendrecv, which Open MPI 5.0 has and 4.1 has not: built by
 * check_versions.py with the 5.0 build's mpicc, to be refused by the 4.1
 * build's spc-check-binary.  Each of the ranks sends its rank to the next
 * and prints what it got from the previous one. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, got = -1;
    MPI_Request request;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Isendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT, (rank + size - 1) % size, 0,
                  MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    printf("rank %d got %d\n", rank, got);
    MPI_Finalize();
    return 0;
}
