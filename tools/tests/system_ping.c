/*
 * Built by the tests with Debian's mpicc against Debian's Open MPI headers,
 * run with our libmpi: rank 0 sends COUNT messages of 0, STEP, 2*STEP, ...
 * bytes to rank 1 with MPI_Send (eager and rendezvous sizes), rank 1
 * receives them with MPI_Recv and checks their contents, then both join one
 * MPI_Allreduce.  Rank 0 prints MPI_Get_library_version, so the test sees
 * whose libmpi ran.  Exit 1 if a message arrived wrong.
 *
 * usage: mpirun -np 2 system_ping COUNT STEP
 */
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
    if (size != 2 || argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 system_ping COUNT STEP\n");
        MPI_Finalize();
        return 2;
    }
    const int count = atoi(argv[1]), step = atoi(argv[2]);
    char *buffer = malloc((size_t)count * (size_t)step + 1);
    int wrong = 0;
    if (NULL == buffer) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < count; ++i) {
        const int bytes = i * step;
        if (rank == 0) {
            memset(buffer, 'a' + i % 26, (size_t)bytes);
            MPI_Send(buffer, bytes, MPI_CHAR, 1, 5, MPI_COMM_WORLD);
        } else {
            MPI_Recv(buffer, bytes, MPI_CHAR, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int b = 0; b < bytes; ++b) wrong += buffer[b] != 'a' + i % 26;
        }
    }
    int wrong_anywhere = 0;
    MPI_Allreduce(&wrong, &wrong_anywhere, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int length;
        MPI_Get_library_version(version, &length);
        printf("library: %s\nwrong bytes: %d\n", version, wrong_anywhere);
    }
    free(buffer);
    MPI_Finalize();
    return wrong_anywhere == 0 ? 0 : 1;
}
