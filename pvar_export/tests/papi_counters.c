/*
 * SPC counters read through PAPI (sde:::ompi_spc::OMPI_SPC_<NAME>) on 2 ranks,
 * with values the test predicts from the traffic it makes:
 *   rank 0 sends PINGS messages of sizes it sums, each to a receive that
 *   rank 1 posted before PAPI_start (so none is unexpected), then K small
 *   messages that rank 1 lets arrive with no receive posted (all unexpected).
 * Rank 0 sends nothing until rank 1's empty "ready" message says that rank 1
 * has started PAPI, so no ping completes on rank 1 before it counts.
 * SEND, RECV, BYTES_SENT_USER, BYTES_RECEIVED_USER and UNEXPECTED are exact;
 * MATCH_TIME is positive on the receiver.  Under a PML that does not count
 * MATCH_TIME (ucx, cm) or UNEXPECTED (cm), MPI_Init does not register it
 * with PAPI, which reads it as -1 (its value for an event no library
 * registered), and MPI_T has no variable of it.
 *
 * usage: papi_counters papi-first|papi-started-first|mpi-first [--with-mpit] [--pml ob1|ucx|cm]
 *   papi-first   PAPI is initialised and the events added before MPI_Init
 *   papi-started-first  and the event set started before it too: what
 *                MPI_Init registers later counts from MPI_Init: rank 0's
 *                EARLY messages, sent before the barrier and received by
 *                rank 1 after it, are UNEXPECTED at PAPI's first read; the
 *                values are taken from that read on
 *   mpi-first    after it
 *   --with-mpit  MPI_T handles on the same counters, started with PAPI_start,
 *                read the same values; once they are stopped and freed PAPI
 *                keeps counting; a handle started later reads its own delta.
 * Without --with-mpit the program makes no MPI_T call at all, and nothing
 * is named in mpi_spc_attach: PAPI alone turns the counters on.
 */
#include <papi.h>
#include <stdbool.h>

#include "mpit_util.h"

enum { PINGS = 1000, K = 25, EXTRA = 10, EARLY = 5, PING_TAG = 1, GO_TAG = 2, EXTRA_TAG = 3, READY_TAG = 4,
       EARLY_TAG = 5, LATE_TAG = 100 };
enum { SEND, RECV, SENT, RECEIVED, UNEXPECTED, MATCH_TIME, NUM_EVENTS };
static const char *const counter_names[NUM_EVENTS] = {
    "SEND", "RECV", "BYTES_SENT_USER", "BYTES_RECEIVED_USER", "UNEXPECTED", "MATCH_TIME"};

static bool mpi_up;
/* Whether the job's PML counts event i (ompi_spc_pmls.def, restated). */
static bool counts[NUM_EVENTS] = {true, true, true, true, true, true};

static void give_up(void)
{
    if (mpi_up) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    exit(2);
}

#define PAPI_OK_OR_DIE(call)                                                           \
    do {                                                                               \
        int rc_ = (call);                                                              \
        if (rc_ != PAPI_OK) {                                                          \
            fprintf(stderr, "rank %d: %s:%d: %s: %s\n", test_rank, __FILE__, __LINE__, \
                    #call, PAPI_strerror(rc_));                                        \
            give_up();                                                                 \
        }                                                                              \
    } while (0)

static int event_set = PAPI_NULL;

static void papi_setup(void)
{
    int version = PAPI_library_init(PAPI_VER_CURRENT);
    if (version != PAPI_VER_CURRENT) {
        fprintf(stderr, "PAPI_library_init: %s\n", version < 0 ? PAPI_strerror(version) : "version mismatch");
        give_up();
    }
    PAPI_OK_OR_DIE(PAPI_create_eventset(&event_set));
    for (int i = 0; i < NUM_EVENTS; ++i) {
        char event[128];
        snprintf(event, sizeof event, SPC_PAPI_EVENT_PREFIX SPC_COUNTER_PREFIX "%s", counter_names[i]);
        PAPI_OK_OR_DIE(PAPI_add_named_event(event_set, event));
    }
}

static int ping_size(int i) { return (int)((i * 977L) % 70001); } /* eager and rendezvous */

int main(int argc, char **argv)
{
    const char *pml = "ob1";
    if (argc >= 4 && strcmp(argv[argc - 2], "--pml") == 0) {
        pml = argv[argc - 1];
        argc -= 2;
    }
    const bool started_first = argc >= 2 && strcmp(argv[1], "papi-started-first") == 0;
    const bool papi_first = started_first || (argc >= 2 && strcmp(argv[1], "papi-first") == 0);
    const bool with_mpit = argc == 3 && strcmp(argv[2], "--with-mpit") == 0;
    if (argc < 2 || argc > 3 || (!papi_first && strcmp(argv[1], "mpi-first") != 0) ||
        (argc == 3 && !with_mpit) ||
        (strcmp(pml, "ob1") != 0 && strcmp(pml, "ucx") != 0 && strcmp(pml, "cm") != 0)) {
        fprintf(stderr, "usage: papi_counters papi-first|papi-started-first|mpi-first [--with-mpit] "
                        "[--pml ob1|ucx|cm]\n");
        return 2;
    }
    counts[MATCH_TIME] = strcmp(pml, "ob1") == 0;
    counts[UNEXPECTED] = strcmp(pml, "cm") != 0;
    if (papi_first) {
        papi_setup();
    }
    if (started_first) {
        PAPI_OK_OR_DIE(PAPI_start(event_set));
    }
    MPI_OK(MPI_Init(&argc, &argv));
    mpi_up = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    if (!papi_first) {
        papi_setup();
    }

    /* Every receive that must not be unexpected is posted before the barrier. */
    size_t ping_offset[PINGS + 1];
    ping_offset[0] = 0;
    for (int i = 0; i < PINGS; ++i) {
        ping_offset[i + 1] = ping_offset[i] + (size_t)ping_size(i);
    }
    char *buffer = calloc(ping_offset[PINGS], 1); /* a slice for each pending receive */
    MPI_Request *ping_requests = calloc(PINGS, sizeof *ping_requests);
    MPI_Request extra_requests[EXTRA], go_request = MPI_REQUEST_NULL, ready_request = MPI_REQUEST_NULL;
    unsigned long long ping_bytes = 0;
    for (int i = 0; i < PINGS; ++i) {
        ping_bytes += (unsigned long long)ping_size(i);
        if (test_rank == 1) {
            MPI_OK(MPI_Irecv(buffer + ping_offset[i], ping_size(i), MPI_CHAR, 0, PING_TAG, MPI_COMM_WORLD, &ping_requests[i]));
        }
    }
    int go = 0;
    if (test_rank == 0) {
        MPI_OK(MPI_Irecv(&go, 1, MPI_INT, 1, GO_TAG, MPI_COMM_WORLD, &go_request));
        MPI_OK(MPI_Irecv(NULL, 0, MPI_CHAR, 1, READY_TAG, MPI_COMM_WORLD, &ready_request));
    }
    if (started_first && test_rank == 0) {
        for (int e = 0; e < EARLY; ++e) {
            MPI_OK(MPI_Send(&e, 1, MPI_INT, 1, EARLY_TAG, MPI_COMM_WORLD));
        }
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (started_first && test_rank == 1) {
        for (int e = 0; e < EARLY; ++e) {
            int early;
            MPI_OK(MPI_Recv(&early, 1, MPI_INT, 0, EARLY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    }

    long long base[NUM_EVENTS] = {0};
    if (started_first) {
        PAPI_OK_OR_DIE(PAPI_read(event_set, base));
        /* Only a counter on since MPI_Init saw the early messages arrive
         * before their receives (PAPI's first read of it is this one). */
        CHECK(!counts[UNEXPECTED] || test_rank != 1 || base[UNEXPECTED] >= EARLY,
              "UNEXPECTED %lld after %d early messages: not counted from MPI_Init", base[UNEXPECTED], EARLY);
    } else {
        PAPI_OK_OR_DIE(PAPI_start(event_set));
    }
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle handles[NUM_EVENTS];
    if (with_mpit) {
        int provided;
        MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
        MPI_OK(MPI_T_pvar_session_create(&session));
        for (int i = 0; i < NUM_EVENTS; ++i) {
            handles[i] = counts[i] ? started_handle(session, counter_names[i]) : MPI_T_PVAR_HANDLE_NULL;
            CHECK(counts[i] || spc_pvar_find(counter_names[i]) < 0, "%s has an MPI_T variable under pml %s",
                  counter_names[i], pml);
        }
    }

    /* The pings, then K messages that arrive before any receive for them. */
    int payload = 0;
    if (test_rank == 0) {
        MPI_OK(MPI_Wait(&ready_request, MPI_STATUS_IGNORE));
        for (int i = 0; i < PINGS; ++i) {
            MPI_OK(MPI_Send(buffer, ping_size(i), MPI_CHAR, 1, PING_TAG, MPI_COMM_WORLD));
        }
        for (int k = 0; k < K; ++k) {
            MPI_OK(MPI_Send(&k, 1, MPI_INT, 1, LATE_TAG + k, MPI_COMM_WORLD));
        }
    } else {
        MPI_OK(MPI_Send(NULL, 0, MPI_CHAR, 0, READY_TAG, MPI_COMM_WORLD));
        MPI_OK(MPI_Waitall(PINGS, ping_requests, MPI_STATUSES_IGNORE));
        MPI_OK(MPI_Probe(0, LATE_TAG + K - 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int k = K - 1; k >= 0; --k) {
            MPI_OK(MPI_Recv(&payload, 1, MPI_INT, 0, LATE_TAG + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(payload == k, "payload %d of message %d", payload, k);
        }
    }

    long long papi[NUM_EVENTS];
    PAPI_OK_OR_DIE(PAPI_read(event_set, papi));
    for (int i = 0; i < NUM_EVENTS; ++i) {
        papi[i] -= counts[i] ? base[i] : 0;
    }
    const unsigned long long late_bytes = K * sizeof(int);
    const unsigned long long expected[2][NUM_EVENTS - 1] = {
        /* SEND, RECV, BYTES_SENT_USER, BYTES_RECEIVED_USER, UNEXPECTED */
        {PINGS + K, 0, ping_bytes + late_bytes, 0, 0},
        {1, K, 0, ping_bytes + late_bytes, K}, /* its one send is "ready", 0 bytes */
    };
    for (int i = 0; i < NUM_EVENTS; ++i) {
        CHECK(counts[i] || papi[i] == -1, "PAPI read %lld of %s, which pml %s does not count: not -1",
              papi[i], counter_names[i], pml);
    }
    for (int i = 0; i < MATCH_TIME; ++i) {
        if (counts[i]) {
            CHECK_EQ_U64(papi[i], expected[test_rank][i], counter_names[i]);
        }
    }
    if (counts[MATCH_TIME] && test_rank == 1) {
        CHECK(papi[MATCH_TIME] > 0, "MATCH_TIME %lld us after %d matched messages", papi[MATCH_TIME],
              PINGS + K);
    }
    printf("rank %d: PAPI read", test_rank);
    for (int i = 0; i < NUM_EVENTS; ++i) {
        printf(" %s=%lld", counter_names[i], papi[i]);
    }
    printf("\n");

    if (with_mpit) {
        for (int i = 0; i < NUM_EVENTS; ++i) {
            if (counts[i]) {
                CHECK_EQ_U64(read_handle(session, handles[i]), papi[i], counter_names[i]);
            }
        }
        /* MPI_T users leave: PAPI still counts. */
        MPI_OK(MPI_T_pvar_stop(session, MPI_T_PVAR_ALL_HANDLES));
        MPI_OK(MPI_T_pvar_session_free(&session));
        MPI_OK(MPI_T_pvar_session_create(&session));
        MPI_T_pvar_handle late_send = started_handle(session, "SEND");
        if (test_rank == 1) {
            for (int e = 0; e < EXTRA; ++e) {
                MPI_OK(MPI_Irecv(buffer + ping_offset[e], e, MPI_CHAR, 0, EXTRA_TAG, MPI_COMM_WORLD, &extra_requests[e]));
            }
            MPI_OK(MPI_Send(&go, 1, MPI_INT, 0, GO_TAG, MPI_COMM_WORLD));
            MPI_OK(MPI_Waitall(EXTRA, extra_requests, MPI_STATUSES_IGNORE));
        } else {
            MPI_OK(MPI_Wait(&go_request, MPI_STATUS_IGNORE));
            for (int e = 0; e < EXTRA; ++e) {
                MPI_OK(MPI_Send(buffer, e, MPI_CHAR, 1, EXTRA_TAG, MPI_COMM_WORLD));
            }
        }
        long long after[NUM_EVENTS];
        PAPI_OK_OR_DIE(PAPI_read(event_set, after));
        for (int i = 0; i < NUM_EVENTS; ++i) {
            after[i] -= counts[i] ? base[i] : 0;
        }
        const unsigned long long extra_sends = test_rank == 0 ? EXTRA : 1; /* rank 1 sent "go" */
        CHECK_EQ_U64(after[SEND], (unsigned long long)papi[SEND] + extra_sends,
                     "PAPI SEND after the MPI_T handles were stopped and freed");
        CHECK_EQ_U64(after[UNEXPECTED], papi[UNEXPECTED], "UNEXPECTED (all later receives were posted)");
        CHECK_EQ_U64(read_handle(session, late_send), extra_sends, "a handle started later: its own delta");
        MPI_OK(MPI_T_pvar_session_free(&session));
        MPI_OK(MPI_T_finalize());
    } else if (test_rank == 0) {
        MPI_OK(MPI_Cancel(&go_request));
        MPI_OK(MPI_Wait(&go_request, MPI_STATUS_IGNORE));
    }

    PAPI_OK_OR_DIE(PAPI_stop(event_set, papi));
    /* PAPI 7.0.0's shutdown double-frees grouped SDE counters; ours have no group. */
    PAPI_OK_OR_DIE(PAPI_cleanup_eventset(event_set));
    PAPI_OK_OR_DIE(PAPI_destroy_eventset(&event_set));
    PAPI_shutdown();
    free(ping_requests);
    free(buffer);
    MPI_OK(MPI_Finalize());
    return finish(with_mpit ? "papi_counters with MPI_T" : "papi_counters, PAPI only");
}
