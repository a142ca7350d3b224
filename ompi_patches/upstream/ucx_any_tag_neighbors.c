/* Under pml ucx, does a user MPI_ANY_TAG receive take a neighbourhood collective's message
 * (main-pml-ucx-negative-tags-keep-sign.patch)?  Rank 0 posts MPI_Irecv(ANY_TAG) from rank 1
 * on a periodic 1-D Cartesian communicator of 2, and tests it for 2 s while rank 1 is in
 * MPI_Neighbor_allgather (which sends rank 0 two blocks).  Nothing else is sent to rank 0
 * before that: a completion is a stolen block.
 *   mpicc -o ucx_any_tag_neighbors ucx_any_tag_neighbors.c
 *   mpirun -np 2 --mca pml ucx ./ucx_any_tag_neighbors     (and --mca pml ob1) */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 1, (int[]){2}, (int[]){1}, 0, &cart);
    int mine = 100 + rank, got[2] = {-1, -1}, user = -1;
    if (0 == rank) {
        MPI_Request req;
        MPI_Status st;
        int done = 0;
        MPI_Irecv(&user, 1, MPI_INT, 1, MPI_ANY_TAG, cart, &req);
        double start = MPI_Wtime();
        while (!done && MPI_Wtime() - start < 2.0) {
            MPI_Test(&req, &done, &st);
        }
        if (done) {
            printf("rank 0: the user's MPI_ANY_TAG receive took %d with tag %d before any user send: "
                   "rank 1's neighbourhood block\n", user, st.MPI_TAG);
        } else {
            printf("rank 0: nothing taken in 2 s\n");
        }
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, done ? 3 : 0);
    }
    MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, cart);
    MPI_Finalize();
    return 0;
}
