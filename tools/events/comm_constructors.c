/*
 * For the event logger's test (check_logger.py): on 2 ranks, one
 * communicator from each constructor the logger wraps, and on each of them
 * MESSAGES messages with tags 0..MESSAGES-1 from world rank 0 to world rank
 * 1 made unexpected on purpose (rank 1 probes for the last first).  Prints
 * on rank 1 "communicators with traffic: N"; under the logger, rank 1's CSV
 * must then hold exactly MESSAGES unexpected inserts with tags 0..MESSAGES-1
 * on each of N communicators.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { MESSAGES = 3 };

static int world_rank;

#define OK(call)                                                                   \
    do {                                                                           \
        if (MPI_SUCCESS != (call)) {                                               \
            fprintf(stderr, "comm_constructors: %s failed\n", #call);             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                          \
        }                                                                          \
    } while (0)

/* World rank 0 sends, world rank 1 receives: on an intercommunicator each
 * is the other's remote rank 0, on the others (no reordering) rank 1 is
 * rank 1. */
static void unexpected_traffic(MPI_Comm comm)
{
    int inter, peer;
    OK(MPI_Comm_test_inter(comm, &inter));
    peer = inter ? 0 : 1 - world_rank;
    int value = 0;
    if (0 == world_rank) {
        for (int tag = 0; tag < MESSAGES; ++tag) {
            OK(MPI_Send(&tag, 1, MPI_INT, peer, tag, comm));
        }
    } else {
        OK(MPI_Probe(peer, MESSAGES - 1, comm, MPI_STATUS_IGNORE));
        for (int tag = 0; tag < MESSAGES; ++tag) {
            OK(MPI_Recv(&value, 1, MPI_INT, peer, tag, comm, MPI_STATUS_IGNORE));
        }
    }
}

int main(int argc, char **argv)
{
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (2 != size) {
        fprintf(stderr, "comm_constructors: run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Group world_group;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    const int other = 1 - world_rank, two = 2, no = 0, yes = 1;
    const int graph_index[2] = {1, 2}, graph_edges[2] = {1, 0};
    enum { NUM = 13 };
    MPI_Comm made[NUM], self_only, inter;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &made[0]));
    OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &made[1]));
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, world_rank, &made[2]));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &made[3]));
    OK(MPI_Comm_create(MPI_COMM_WORLD, world_group, &made[4]));
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, world_group, 7, &made[5]));
    OK(MPI_Comm_split(MPI_COMM_WORLD, world_rank, 0, &self_only));
    OK(MPI_Intercomm_create(self_only, 0, MPI_COMM_WORLD, other, 8, &inter));
    made[6] = inter;
    OK(MPI_Intercomm_merge(inter, world_rank, &made[7]));
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &two, &no, 0, &made[8]));
    OK(MPI_Cart_sub(made[8], &yes, &made[9]));
    OK(MPI_Graph_create(MPI_COMM_WORLD, 2, graph_index, graph_edges, 0, &made[10]));
    /* weights given: GCC takes MPI_UNWEIGHTED's address for an empty array */
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &other, &yes, 1, &other, &yes, MPI_INFO_NULL, 0,
                                      &made[11]));
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &world_rank, &yes, &other, &yes, MPI_INFO_NULL, 0, &made[12]));
    /* The logger's handles on a communicator exist once its constructor
     * returned on that rank: without this barrier rank 0's first messages
     * could reach rank 1 before, and their events would not be seen. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < NUM; ++i) {
        unexpected_traffic(made[i]);
    }
    if (1 == world_rank) {
        printf("communicators with traffic: %d\n", NUM);
    }
    for (int i = 0; i < NUM; ++i) {
        OK(MPI_Comm_free(&made[i]));
    }
    OK(MPI_Comm_free(&self_only));
    OK(MPI_Group_free(&world_group));
    OK(MPI_Finalize());
    return 0;
}
