/* Rank 0 sends SENDS messages to rank 1 with MPI_Send and nothing else: the
 * finalize report must show it (checked by check_dump.py). */
#include <mpi.h>

enum { SENDS = 7 };

int main(int argc, char **argv)
{
    int rank, value = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < SENDS; ++i) {
        if (0 == rank) {
            MPI_Send(&value, 1, MPI_INT, 1, i, MPI_COMM_WORLD);
        } else if (1 == rank) {
            MPI_Recv(&value, 1, MPI_INT, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    MPI_Finalize();
    return 0;
}
