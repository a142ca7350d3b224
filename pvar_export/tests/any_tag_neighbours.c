/*
 * A user receive must never take a collective's message (MPI's
 * MPI_ANY_TAG matches user tags only).  Under pml ucx, which carries 24
 * bits of a tag, coll basic's neighbourhood tags (near -2^30) were user
 * tags 0 and 1 before patch
 * "ucx: a negative tag keeps its sign in UCX's 24 tag bits".
 *
 * 2 ranks on a periodic Cartesian communicator of 2, so that each is the
 * other's neighbour twice.  Rank 0 posts MPI_Irecv(MPI_ANY_TAG) from rank
 * 1, then tests it for TEST_SECONDS while rank 1 is in
 * MPI_Neighbor_allgather, whose two blocks to rank 0 are on their way:
 * nothing else is sent to rank 0, so a completion is a stolen block.  Then
 * rank 0 joins the allgather (it must get rank 1's value twice) and rank 1
 * sends the user message, which the receive must get with its tag.
 *
 * usage: any_tag_neighbours (2 ranks)
 */
#include <mpi.h>
#include <stdio.h>

#include "mpit_util.h"

enum { USER_TAG = 5, USER_VALUE = 7 };
static const double TEST_SECONDS = 1.0;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    if (2 != size) {
        spc_client_die("any_tag_neighbours: 2 ranks, not %d", size);
    }
    MPI_Comm cart;
    MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, (int[]){2}, (int[]){1}, 0, &cart));
    int mine = 100 + rank, got[2] = {-1, -1};
    if (0 == rank) {
        int user = -1, done = 0;
        MPI_Request request;
        MPI_Status status;
        MPI_OK(MPI_Irecv(&user, 1, MPI_INT, 1, MPI_ANY_TAG, cart, &request));
        const double start = MPI_Wtime();
        while (!done && MPI_Wtime() - start < TEST_SECONDS) {
            MPI_OK(MPI_Test(&request, &done, &status));
        }
        if (done) {
            CHECK(!done, "the MPI_ANY_TAG receive took %d with tag %d while only the collective sent", user,
                  status.MPI_TAG);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);  /* rank 0's allgather would wait for the stolen block */
        }
        MPI_OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, cart));
        MPI_OK(MPI_Wait(&request, &status));
        CHECK(USER_VALUE == user && USER_TAG == status.MPI_TAG, "the user receive got %d with tag %d, not %d with %d",
              user, status.MPI_TAG, USER_VALUE, USER_TAG);
    } else {
        MPI_OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, cart));
        const int value = USER_VALUE;
        MPI_OK(MPI_Send(&value, 1, MPI_INT, 0, USER_TAG, cart));
    }
    CHECK(got[0] == 100 + (1 - rank) && got[1] == 100 + (1 - rank), "the allgather got %d %d, not %d twice", got[0],
          got[1], 100 + (1 - rank));
    MPI_OK(MPI_Comm_free(&cart));
    MPI_Finalize();
    return 0 == test_failures ? 0 : 1;
}
