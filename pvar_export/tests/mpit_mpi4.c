/* The catalogue's rows of MPI 4.0's calls (Open MPI 5.0): MPI_Isendrecv,
 * MPI_Isendrecv_replace, the partitioned MPI_Psend_init, MPI_Precv_init,
 * MPI_Pready, MPI_Pready_range, MPI_Pready_list and MPI_Parrived, each read
 * through MPI_T as exactly the number of calls this program makes.  Two
 * ranks; MPI_Parrived is called until partition 0 has arrived, and the
 * program counts those calls itself. */
#include <mpi.h>
#include <stdio.h>

#include "mpit_util.h"

enum { ISENDRECVS = 3, REPLACES = 2, PARTITIONS = 6, PER_PARTITION = 4 };

static const char *const names[] = {"ISENDRECV", "ISENDRECV_REPLACE", "PSEND_INIT", "PRECV_INIT",
                                    "PREADY", "PREADY_RANGE", "PREADY_LIST", "PARRIVED"};
enum { NUM_NAMES = sizeof names / sizeof names[0] };

int main(int argc, char **argv)
{
    int provided;
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle handles[NUM_NAMES];
    for (int i = 0; i < NUM_NAMES; ++i) {
        handles[i] = started_handle(session, names[i]);
    }
    const int peer = 1 - test_rank;
    unsigned long long expected[NUM_NAMES] = {ISENDRECVS, REPLACES, 0, 0, 0, 0, 0, 0};

    for (int i = 0; i < ISENDRECVS; ++i) {
        int out = test_rank, in = -1;
        MPI_Request request;
        MPI_OK(MPI_Isendrecv(&out, 1, MPI_INT, peer, i, &in, 1, MPI_INT, peer, i, MPI_COMM_WORLD, &request));
        MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
        CHECK(in == peer, "Isendrecv %d brought %d", i, in);
    }
    for (int i = 0; i < REPLACES; ++i) {
        int value = test_rank;
        MPI_Request request;
        MPI_OK(MPI_Isendrecv_replace(&value, 1, MPI_INT, peer, i, peer, i, MPI_COMM_WORLD, &request));
        MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
        CHECK(value == peer, "Isendrecv_replace %d brought %d", i, value);
    }

    /* rank 0 sends PARTITIONS partitions: 2 by MPI_Pready, 2 by one
     * MPI_Pready_range, 2 by one MPI_Pready_list */
    int buffer[PARTITIONS * PER_PARTITION];
    MPI_Request request;
    if (0 == test_rank) {
        for (int i = 0; i < PARTITIONS * PER_PARTITION; ++i) {
            buffer[i] = i;
        }
        MPI_OK(MPI_Psend_init(buffer, PARTITIONS, PER_PARTITION, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &request));
        MPI_OK(MPI_Start(&request));
        MPI_OK(MPI_Pready(0, request));
        MPI_OK(MPI_Pready(1, request));
        MPI_OK(MPI_Pready_range(2, 3, request));
        int list[] = {4, 5};
        MPI_OK(MPI_Pready_list(2, list, request));
        expected[2] = 1, expected[4] = 2, expected[5] = 1, expected[6] = 1;
    } else {
        MPI_OK(MPI_Precv_init(buffer, PARTITIONS, PER_PARTITION, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &request));
        MPI_OK(MPI_Start(&request));
        int arrived = 0;
        unsigned long long calls = 0;
        while (!arrived) {
            MPI_OK(MPI_Parrived(request, 0, &arrived));
            ++calls;
        }
        expected[3] = 1, expected[7] = calls;
    }
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Request_free(&request));
    for (int i = 0; 1 == test_rank && i < PARTITIONS * PER_PARTITION; ++i) {
        CHECK(buffer[i] == i, "partitioned receive: element %d is %d", i, buffer[i]);
    }

    for (int i = 0; i < NUM_NAMES; ++i) {
        CHECK_EQ_U64(read_handle(session, handles[i]), expected[i], names[i]);
        MPI_OK(MPI_T_pvar_handle_free(session, &handles[i]));
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
    MPI_OK(MPI_T_finalize());
    MPI_OK(MPI_Finalize());
    return finish("mpit_mpi4");
}
