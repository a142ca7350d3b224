/*
 * The main job's demonstration: two ranks exchange messages while the same
 * six counters are read through MPI_T and through PAPI, and rank 0 prints
 * both beside the values this program predicts from the traffic it makes.
 * Run it with --mca mpi_spc_dump_enabled true to see the finalize report too.
 *
 *   rank 1 posts receives for PINGS messages of sizes 0, 100, 200, ..., then
 *   says "ready"; rank 0 sends the pings, then LATE messages that rank 1 has
 *   no receive for yet (unexpected), then "done"; rank 1 receives the late
 *   ones only after "done", so all LATE were queued as unexpected.
 *
 * usage: mpirun -np 2 spc_demo        (exit 1 if a value is not the predicted one)
 */
#include <papi.h>

#include "spc/spc_mpit_client.h"

enum { PINGS = 100, LATE = 10, PING_TAG = 1, READY_TAG = 2, DONE_TAG = 3, LATE_TAG = 4 };
enum { SEND, RECV, BYTES_SENT_USER, BYTES_RECEIVED_USER, UNEXPECTED, MATCH_TIME, NUM_COUNTERS };
static const char *const names[NUM_COUNTERS] = {"SEND", "RECV", "BYTES_SENT_USER",
                                                "BYTES_RECEIVED_USER", "UNEXPECTED", "MATCH_TIME"};

#define PAPI_OK_(call)                                                               \
    do {                                                                             \
        int rc_ = (call);                                                            \
        if (rc_ != PAPI_OK) spc_client_die("%s failed: %s", #call, PAPI_strerror(rc_)); \
    } while (0)

static int ping_size(int i) { return 100 * i; }

int main(int argc, char **argv)
{
    int rank, size, provided;
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "spc_demo: run it on 2 ranks (mpirun -np 2), not %d\n", size);
        MPI_Finalize();
        return 2;
    }

    /* The same counters through both interfaces. */
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handles[NUM_COUNTERS];
    int event_set = PAPI_NULL;
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_OK(MPI_T_pvar_session_create(&session));
    const int version = PAPI_library_init(PAPI_VER_CURRENT);
    if (version != PAPI_VER_CURRENT) {
        spc_client_die("PAPI_library_init failed: %s", PAPI_strerror(version < 0 ? version : PAPI_EINVAL));
    }
    PAPI_OK_(PAPI_create_eventset(&event_set));
    for (int c = 0; c < NUM_COUNTERS; ++c) {
        char name[128];
        int count;
        MPI_OK(MPI_T_pvar_handle_alloc(session, spc_pvar(names[c]), NULL, &handles[c], &count));
        snprintf(name, sizeof name, SPC_PAPI_EVENT_PREFIX SPC_COUNTER_PREFIX "%s", names[c]);
        PAPI_OK_(PAPI_add_named_event(event_set, name));
    }

    unsigned long long ping_bytes = 0;
    for (int i = 0; i < PINGS; ++i) ping_bytes += (unsigned long long)ping_size(i);
    char *buffer = calloc(ping_bytes, 1); /* each pending receive gets its own slice */
    if (NULL == buffer) {
        spc_client_die("no memory for %llu bytes", ping_bytes);
    }
    MPI_Request pings[PINGS], ready = MPI_REQUEST_NULL, done = MPI_REQUEST_NULL;
    for (int i = 0, offset = 0; i < PINGS && rank == 1; offset += ping_size(i), ++i) {
        MPI_OK(MPI_Irecv(buffer + offset, ping_size(i), MPI_CHAR, 0, PING_TAG, MPI_COMM_WORLD, &pings[i]));
    }
    if (rank == 0) MPI_OK(MPI_Irecv(NULL, 0, MPI_CHAR, 1, READY_TAG, MPI_COMM_WORLD, &ready));
    if (rank == 1) MPI_OK(MPI_Irecv(NULL, 0, MPI_CHAR, 0, DONE_TAG, MPI_COMM_WORLD, &done));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD)); /* its own messages are not counted below */
    MPI_OK(MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES));
    PAPI_OK_(PAPI_start(event_set));

    int late = 0;
    if (rank == 0) {
        MPI_OK(MPI_Wait(&ready, MPI_STATUS_IGNORE)); /* rank 1 counts from here on */
        for (int i = 0; i < PINGS; ++i) MPI_OK(MPI_Send(buffer, ping_size(i), MPI_CHAR, 1, PING_TAG, MPI_COMM_WORLD));
        for (int k = 0; k < LATE; ++k) MPI_OK(MPI_Send(&k, 1, MPI_INT, 1, LATE_TAG, MPI_COMM_WORLD));
        MPI_OK(MPI_Send(NULL, 0, MPI_CHAR, 1, DONE_TAG, MPI_COMM_WORLD));
    } else {
        MPI_OK(MPI_Send(NULL, 0, MPI_CHAR, 0, READY_TAG, MPI_COMM_WORLD));
        MPI_OK(MPI_Waitall(PINGS, pings, MPI_STATUSES_IGNORE));
        MPI_OK(MPI_Wait(&done, MPI_STATUS_IGNORE)); /* messages are matched in order: LATE are queued */
        for (int k = 0; k < LATE; ++k) MPI_OK(MPI_Recv(&late, 1, MPI_INT, 0, LATE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }

    /* [rank][interface][counter], interface 0 MPI_T, 1 PAPI */
    long long mine[2][NUM_COUNTERS], all[2][2][NUM_COUNTERS];
    PAPI_OK_(PAPI_read(event_set, mine[1]));
    for (int c = 0; c < NUM_COUNTERS; ++c) {
        unsigned long long value;
        MPI_OK(MPI_T_pvar_read(session, handles[c], &value));
        mine[0][c] = (long long)value;
    }
    MPI_OK(MPI_Gather(mine, 2 * NUM_COUNTERS, MPI_LONG_LONG, all, 2 * NUM_COUNTERS, MPI_LONG_LONG, 0,
                      MPI_COMM_WORLD));

    int wrong = 0;
    if (rank == 0) {
        const long long user_bytes = (long long)(ping_bytes + LATE * sizeof(int));
        const long long expected[2][NUM_COUNTERS] = {
            /* SEND, RECV, BYTES_SENT_USER, BYTES_RECEIVED_USER, UNEXPECTED, MATCH_TIME (-1: > 0) */
            {PINGS + LATE + 1, 0, user_bytes, 0, 0, -1},
            {1, LATE, 0, user_bytes, LATE, -1},
        };
        printf("%d pings of 0 to %d bytes and %d unexpected messages from rank 0 to rank 1:\n\n",
               PINGS, ping_size(PINGS - 1), LATE);
        printf("%-29s %4s %12s %12s %12s\n", "counter", "rank", "MPI_T", "PAPI", "predicted");
        for (int c = 0; c < NUM_COUNTERS; ++c) {
            for (int r = 0; r < 2; ++r) {
                const long long mpit = all[r][0][c], papi = all[r][1][c], want = expected[r][c];
                const int right = mpit == papi && (want >= 0 ? mpit == want : r == 0 || mpit > 0);
                char predicted[32];
                snprintf(predicted, sizeof predicted, want >= 0 ? "%lld" : (r == 0 ? "any" : "> 0"), want);
                printf(SPC_COUNTER_PREFIX "%-20s %4d %12lld %12lld %12s%s\n", names[c], r, mpit, papi, predicted,
                       right ? "" : "  <- WRONG");
                wrong += !right;
            }
        }
        printf("\n(MATCH_TIME in microseconds; MPI_T and PAPI are read a moment apart on each rank)\n\n");
        fflush(stdout);
    }
    MPI_OK(MPI_Bcast(&wrong, 1, MPI_INT, 0, MPI_COMM_WORLD));

    PAPI_OK_(PAPI_stop(event_set, mine[1]));
    MPI_OK(MPI_T_pvar_session_free(&session));
    MPI_OK(MPI_T_finalize());
    free(buffer);
    MPI_Finalize(); /* with mpi_spc_dump_enabled, rank 0 prints the finalize report here */
    PAPI_shutdown();
    return wrong ? 1 : 0;
}
