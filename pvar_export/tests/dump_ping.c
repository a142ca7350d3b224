/* Rank 0 sends SENDS messages to rank 1 with MPI_Send on MPI_COMM_WORLD
 * and DUP_SENDS on a duplicate named "ping dup", freed before MPI_Finalize,
 * and nothing else: the finalize report must show it (checked by
 * check_dump.py; the per-communicator CSV with mpi_spc_attach "traffic").
 * With --idle it only initialises and finalises (check_idle.py). */
#include <mpi.h>
#include <string.h>

enum { SENDS = 7, DUP_SENDS = 3 };

static void ping(MPI_Comm comm, int rank, int count)
{
    int value = 0;
    for (int i = 0; i < count; ++i) {
        if (0 == rank) {
            MPI_Send(&value, 1, MPI_INT, 1, i, comm);
        } else if (1 == rank) {
            MPI_Recv(&value, 1, MPI_INT, 0, i, comm, MPI_STATUS_IGNORE);
        }
    }
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Comm dup;
    MPI_Init(&argc, &argv);
    if (argc > 1 && 0 == strcmp(argv[1], "--idle")) {
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_name(dup, "ping dup");
    ping(MPI_COMM_WORLD, rank, SENDS);
    ping(dup, rank, DUP_SENDS);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
