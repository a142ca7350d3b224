/*
 * Counters bound to communicators, on 4 ranks: rank 0 sends 7 messages to
 * rank 1 on a duplicate A of MPI_COMM_WORLD and 3 on a duplicate B, so SEND
 * bound to A reads 7, bound to B 3, unbound 10 (and the receiver's RECV and
 * both sides' user bytes likewise); ranks 2 and 3 read 0 everywhere.  Then
 * messages made unexpected on purpose on A and sent to posted receives on
 * B: A's UNEXPECTED is exact, B's 0, and while they wait A's unexpected
 * queue level holds them (check_queue_levels).  A bound handle has the unbound ones'
 * MPI_T semantics (sessions' own deltas, stop freezes, reset, readreset,
 * writes refused); a handle on a communicator that is then freed returns
 * MPI_T_ERR_INVALID_HANDLE and nothing stays switched on.  Per-peer arrays:
 * world rank 0 sends 5 messages of 1000 B to world rank 2 on MPI_COMM_WORLD
 * and 5 on a split with key 3 - rank, where rank 2 is rank 1 and rank 0 is
 * rank 3: each array has one element per rank of the communicator it is
 * bound to, indexed by the ranks there.  Then a broadcast of 8 B from the
 * split's rank 0: the split's internal arrays (tag < 0) show every rank but
 * the root receiving it once, whatever tree coll tuned chose (one segment),
 * as many messages and bytes sent over all ranks, while the user arrays and
 * the world's internal ones stay as they were.  Histograms: rank 0 sends 0, 1, 2,
 * 3, 4, 1023 and 1024 B to rank 1 on A: bins 0, 1, 2, 2, 3, 10, 11 hold 1,
 * 1, 2, 1, 1, 1 on both sides, process-wide and bound to A; B's stay 0.
 * Per peer (check_peer_histograms), only what comes after the first handle.
 * MATCH_TIME bound to A grows with matches on A only (check_match_time).
 * argv[1] names the job's PML (default ob1): what it does not count has no
 * variable, process-wide or bound (ucx: the queue levels and MATCH_TIME;
 * cm: UNEXPECTED too); the rest is exact under every PML.
 */
#include "mpit_util.h"

#include "spc/spc.h"

enum { ON_A = 7, ON_B = 3, BYTES = 40, UNEXPECTED_ON_A = 12, EXPECTED_ON_B = 5, READY_TAG = 99 };

static MPI_Comm comm_a, comm_b;

/* Rank 0 sends count messages of BYTES bytes to rank 1 on comm, which receives them. */
static void traffic(MPI_Comm comm, int count)
{
    char buffer[BYTES] = {0};
    for (int i = 0; i < count; ++i) {
        if (test_rank == 0) {
            MPI_OK(MPI_Send(buffer, BYTES, MPI_CHAR, 1, 5, comm));
        } else if (test_rank == 1) {
            MPI_OK(MPI_Recv(buffer, BYTES, MPI_CHAR, 0, 5, comm, MPI_STATUS_IGNORE));
        }
    }
}

/* What a counter bound to A and B and unbound reads on this rank. */
struct expected {
    const char *name;
    unsigned long long a, b;
};

static void check_where_traffic_goes(void)
{
    const unsigned long long sender = test_rank == 0, receiver = test_rank == 1;
    const struct expected expected[] = {
        {"SEND", sender * ON_A, sender * ON_B},
        {"RECV", receiver * ON_A, receiver * ON_B},
        {"BYTES_SENT_USER", sender * ON_A * BYTES, sender * ON_B * BYTES},
        {"BYTES_RECEIVED_USER", receiver * ON_A * BYTES, receiver * ON_B * BYTES},
    };
    enum { N = sizeof expected / sizeof expected[0] };
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle on_a[N], on_b[N], unbound[N];
    for (int i = 0; i < N; ++i) {
        on_a[i] = started_comm_handle(session, expected[i].name, comm_a);
        on_b[i] = started_comm_handle(session, expected[i].name, comm_b);
        unbound[i] = started_handle(session, expected[i].name);
    }
    traffic(comm_a, ON_A);
    traffic(comm_b, ON_B);
    for (int i = 0; i < N; ++i) {
        char what[128];
        snprintf(what, sizeof what, "%s bound to A", expected[i].name);
        CHECK_EQ_U64(read_handle(session, on_a[i]), expected[i].a, what);
        snprintf(what, sizeof what, "%s bound to B", expected[i].name);
        CHECK_EQ_U64(read_handle(session, on_b[i]), expected[i].b, what);
        snprintf(what, sizeof what, "%s unbound", expected[i].name);
        CHECK_EQ_U64(read_handle(session, unbound[i]), expected[i].a + expected[i].b, what);
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* The queue levels bound to A and B on rank 1 while the UNEXPECTED_ON_A
 * messages wait in A's unexpected queue: A's holds them all, also for a
 * handle allocated only now; B's, whose messages met posted receives, and
 * both out-of-sequence levels hold 0 (one link per pair of ranks keeps
 * order).  Then A's queue is drained (receive), and a level handle stopped
 * while they waited keeps what it read. */
static void check_queue_levels(MPI_T_pvar_session session, MPI_T_pvar_handle level_a,
                               MPI_T_pvar_handle level_b, void (*receive_all)(void))
{
    MPI_T_pvar_handle late_a = started_comm_handle(session, "UNEXPECTED_IN_QUEUE", comm_a);
    MPI_T_pvar_handle oos_a = started_comm_handle(session, "OOS_IN_QUEUE", comm_a);
    MPI_T_pvar_handle oos_b = started_comm_handle(session, "OOS_IN_QUEUE", comm_b);
    MPI_T_pvar_handle all = started_handle(session, "UNEXPECTED_IN_QUEUE");
    CHECK_EQ_U64(read_handle(session, level_a), UNEXPECTED_ON_A, "UNEXPECTED_IN_QUEUE bound to A");
    CHECK_EQ_U64(read_handle(session, late_a), UNEXPECTED_ON_A,
                 "UNEXPECTED_IN_QUEUE bound to A by a handle allocated while they wait");
    CHECK_EQ_U64(read_handle(session, level_b), 0, "UNEXPECTED_IN_QUEUE bound to B");
    CHECK(read_handle(session, all) >= UNEXPECTED_ON_A, "the process-wide level holds A's");
    CHECK_EQ_U64(read_handle(session, oos_a), 0, "OOS_IN_QUEUE bound to A");
    CHECK_EQ_U64(read_handle(session, oos_b), 0, "OOS_IN_QUEUE bound to B");
    CHECK(MPI_T_pvar_reset(session, late_a) == MPI_T_ERR_PVAR_NO_WRITE, "a bound level cannot be reset");
    MPI_OK(MPI_T_pvar_stop(session, level_a));
    receive_all();
    CHECK_EQ_U64(read_handle(session, level_a), UNEXPECTED_ON_A, "a level stopped while they waited");
    CHECK_EQ_U64(read_handle(session, late_a), 0, "UNEXPECTED_IN_QUEUE bound to A once received");
    CHECK_EQ_U64(read_handle(session, level_b), 0, "UNEXPECTED_IN_QUEUE bound to B at the end");
}

static void receive_unexpected_on_a(void)
{
    int tag_read;
    for (int tag = UNEXPECTED_ON_A - 1; tag >= 0; --tag) {
        MPI_OK(MPI_Recv(&tag_read, 1, MPI_INT, 0, tag, comm_a, MPI_STATUS_IGNORE));
        CHECK(tag_read == tag, "payload %d on A for tag %d", tag_read, tag);
    }
}

/* Rank 1 reads its baselines, then lets rank 0 send: UNEXPECTED_ON_A
 * messages on A that all become unexpected (rank 1 probes for the last
 * first, then receives them) and EXPECTED_ON_B on B to receives rank 1
 * posted before.  Once received, A's UNEXPECTED has grown by all of them,
 * B's by none; before, with all arrived, by all under ob1, which counts a
 * message as it arrives, and by none under ucx, which counts it when a
 * receive is posted for a message UCX holds (4.1.4 pml_ucx.c:599,644,
 * pml_ucx_request.h:164-171).  Under ob1 A's queue level holds them while
 * they wait (check_queue_levels); cm counts neither. */
static void check_unexpected(void)
{
    const bool counted = pml_offers("UNEXPECTED");
    const bool queued = pml_offers("UNEXPECTED_IN_QUEUE") & pml_offers("OOS_IN_QUEUE");
    const bool at_arrival = strcmp(test_pml, "ob1") == 0;
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle on_a = MPI_T_PVAR_HANDLE_NULL, on_b = MPI_T_PVAR_HANDLE_NULL;
    MPI_T_pvar_handle level_a = MPI_T_PVAR_HANDLE_NULL, level_b = MPI_T_PVAR_HANDLE_NULL;
    if (counted) {
        on_a = started_comm_handle(session, "UNEXPECTED", comm_a);
        on_b = started_comm_handle(session, "UNEXPECTED", comm_b);
    }
    if (queued) {
        level_a = started_comm_handle(session, "UNEXPECTED_IN_QUEUE", comm_a);
        level_b = started_comm_handle(session, "UNEXPECTED_IN_QUEUE", comm_b);
        CHECK_EQ_U64(read_handle(session, level_a), 0, "UNEXPECTED_IN_QUEUE bound to A before");
    }
    int payload[EXPECTED_ON_B] = {0}, go = 1;
    if (test_rank == 1) {
        MPI_Request posted[EXPECTED_ON_B];
        for (int i = 0; i < EXPECTED_ON_B; ++i) {
            MPI_OK(MPI_Irecv(&payload[i], 1, MPI_INT, 0, i, comm_b, &posted[i]));
        }
        const unsigned long long a_before = counted ? read_handle(session, on_a) : 0;
        const unsigned long long b_before = counted ? read_handle(session, on_b) : 0;
        MPI_OK(MPI_Send(&go, 1, MPI_INT, 0, READY_TAG, MPI_COMM_WORLD));
        MPI_OK(MPI_Waitall(EXPECTED_ON_B, posted, MPI_STATUSES_IGNORE));
        for (int i = 0; i < EXPECTED_ON_B; ++i) {
            CHECK(payload[i] == i, "payload %d on B for tag %d", payload[i], i);
        }
        MPI_OK(MPI_Probe(0, UNEXPECTED_ON_A - 1, comm_a, MPI_STATUS_IGNORE));
        if (counted) {
            CHECK_EQ_U64(read_handle(session, on_a) - a_before, at_arrival ? UNEXPECTED_ON_A : 0,
                         "UNEXPECTED bound to A, all arrived, none received");
            CHECK_EQ_U64(read_handle(session, on_b) - b_before, 0, "UNEXPECTED bound to B");
        }
        if (queued) {
            check_queue_levels(session, level_a, level_b, receive_unexpected_on_a);
        } else {
            receive_unexpected_on_a();
        }
        if (counted) {
            CHECK_EQ_U64(read_handle(session, on_a) - a_before, UNEXPECTED_ON_A, "UNEXPECTED bound to A, received");
            CHECK_EQ_U64(read_handle(session, on_b) - b_before, 0, "UNEXPECTED bound to B, received");
        }
    } else if (test_rank == 0) {
        MPI_OK(MPI_Recv(&go, 1, MPI_INT, 1, READY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < EXPECTED_ON_B; ++i) {
            MPI_OK(MPI_Send(&i, 1, MPI_INT, 1, i, comm_b));
        }
        for (int tag = 0; tag < UNEXPECTED_ON_A; ++tag) {
            MPI_OK(MPI_Send(&tag, 1, MPI_INT, 1, tag, comm_a));
        }
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* MATCH_TIME bound to A and B while rank 0 sends MATCHED messages to rank 1
 * on A: rank 1's A grows (the time to match them) and stays within the
 * process-wide MATCH_TIME's growth (the same intervals, each rounded down
 * to microseconds once); B, with no traffic, and every other rank, which
 * matches nothing on A, read 0.  With only the bound handles started,
 * MATCH_TIME's sites are on for them. */
enum { MATCHED = 2000 };
static void check_match_time(void)
{
    if (!pml_offers("MATCH_TIME")) {
        return;
    }
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle on_a = started_comm_handle(session, "MATCH_TIME", comm_a);
    MPI_T_pvar_handle on_b = started_comm_handle(session, "MATCH_TIME", comm_b);
    MPI_T_pvar_handle unbound = started_handle(session, "MATCH_TIME");
    traffic(comm_a, MATCHED);
    const unsigned long long a = read_handle(session, on_a), b = read_handle(session, on_b);
    const unsigned long long all = read_handle(session, unbound);
    if (test_rank == 1) {
        CHECK(a > 0, "MATCH_TIME bound to A after %d matches: %llu us", MATCHED, a);
        CHECK(a <= all + 1, "A's MATCH_TIME %llu us within the process-wide %llu us", a, all);
    } else {
        CHECK_EQ_U64(a, 0, "MATCH_TIME bound to A on a rank that matched nothing on A");
    }
    CHECK_EQ_U64(b, 0, "MATCH_TIME bound to B, which carried nothing");
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* The MPI_T semantics of a bound handle, on rank 0's SEND bound to A. */
static void check_semantics(void)
{
    MPI_T_pvar_session first, second;
    MPI_OK(MPI_T_pvar_session_create(&first));
    MPI_OK(MPI_T_pvar_session_create(&second));
    const unsigned long long sender = test_rank == 0;
    MPI_T_pvar_handle idle;
    int count = 0;
    MPI_OK(MPI_T_pvar_handle_alloc(first, spc_comm_pvar("SEND"), &comm_a, &idle, &count));
    traffic(comm_a, 2);
    CHECK_EQ_U64(read_handle(first, idle), 0, "a bound handle never started");

    MPI_T_pvar_handle a = started_comm_handle(first, "SEND", comm_a);
    traffic(comm_a, 4);
    MPI_T_pvar_handle b = started_comm_handle(second, "SEND", comm_a);
    traffic(comm_a, 2);
    CHECK_EQ_U64(read_handle(first, a), sender * 6, "session 1 on A");
    CHECK_EQ_U64(read_handle(second, b), sender * 2, "session 2 on A, started later");

    MPI_OK(MPI_T_pvar_stop(first, a));
    traffic(comm_a, 3);
    CHECK_EQ_U64(read_handle(first, a), sender * 6, "a stopped bound handle is frozen");
    CHECK_EQ_U64(read_handle(second, b), sender * 5, "the other session still counts");

    MPI_OK(MPI_T_pvar_reset(second, b));
    CHECK_EQ_U64(read_handle(second, b), 0, "after reset");
    traffic(comm_a, 2);
    unsigned long long value = 0;
    MPI_OK(MPI_T_pvar_readreset(second, b, &value));
    CHECK_EQ_U64(value, sender * 2, "readreset returns the value");
    CHECK_EQ_U64(read_handle(second, b), 0, "readreset resets");
    unsigned long long forty_two = 42;
    CHECK(MPI_T_pvar_write(second, b, &forty_two) == MPI_T_ERR_PVAR_NO_WRITE, "a bound counter cannot be written");
    CHECK_EQ_U64(read_handle(second, b), 0, "a refused write changes nothing");
    MPI_OK(MPI_T_pvar_start(first, a));
    traffic(comm_a, 1);
    CHECK_EQ_U64(read_handle(first, a), sender * 7, "restarted bound handle adds to its value");
    CHECK(MPI_T_pvar_start(first, a) == MPI_T_ERR_PVAR_NO_STARTSTOP, "start of a started handle");

    /* Misuse: no object, or not a communicator in use. */
    MPI_T_pvar_handle bad;
    CHECK(MPI_T_pvar_handle_alloc(first, spc_comm_pvar("SEND"), NULL, &bad, &count) != MPI_SUCCESS,
          "a bound variable needs a communicator");
    MPI_Comm null = MPI_COMM_NULL;
    CHECK(MPI_T_pvar_handle_alloc(first, spc_comm_pvar("SEND"), &null, &bad, &count) != MPI_SUCCESS,
          "MPI_COMM_NULL is refused");

    MPI_OK(MPI_T_pvar_session_free(&second));
    MPI_OK(MPI_T_pvar_session_free(&first));
    CHECK(!spc_switch_is_on(SPC_SWITCH_COMM_COUNTERS), "freed sessions leave the sites off");
}

/* The peer arrays of this rank bound to comm, against expected[name][rank]. */
static void check_peer_arrays(MPI_T_pvar_session session, MPI_T_pvar_handle *handles,
                              const char *const *names, const unsigned long long (*expected)[4],
                              const char *comm_name)
{
    for (int i = 0; i < 4; ++i) {
        unsigned long long values[4] = {0};
        MPI_OK(MPI_T_pvar_read(session, handles[i], values));
        for (int rank = 0; rank < 4; ++rank) {
            char what[128];
            snprintf(what, sizeof what, "%s bound to %s [%d]", names[i], comm_name, rank);
            CHECK_EQ_U64(values[rank], expected[i][rank], what);
        }
    }
}

/* The sum of an array of 4 read through handle. */
static unsigned long long array_sum(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    unsigned long long values[4] = {0};
    MPI_OK(MPI_T_pvar_read(session, handle, values));
    return values[0] + values[1] + values[2] + values[3];
}

/* A broadcast on split counted in its internal arrays only, then an
 * allreduce on MPI_COMM_WORLD in the world's (check_peers; world: the
 * world's user arrays, still started, in_world what they hold). */
static void check_internal_arrays(MPI_T_pvar_session session, MPI_Comm split, MPI_T_pvar_handle *world,
                                  const char *const *names, const unsigned long long (*in_world)[4])
{
    enum { BCAST_BYTES = 8 };
    const char *internal[] = {"PEER_INTERNAL_MESSAGES_SENT", "PEER_INTERNAL_BYTES_SENT",
                              "PEER_INTERNAL_MESSAGES_RECEIVED", "PEER_INTERNAL_BYTES_RECEIVED"};
    MPI_T_pvar_handle on_split[4], on_world[4], user_on_split[4];
    for (int i = 0; i < 4; ++i) {
        on_split[i] = started_comm_array(session, internal[i], split, 4);
        on_world[i] = started_comm_array(session, internal[i], MPI_COMM_WORLD, 4);
        user_on_split[i] = started_comm_array(session, names[i], split, 4);
    }
    int split_rank;
    MPI_OK(MPI_Comm_rank(split, &split_rank));
    char data[BCAST_BYTES] = {0};
    MPI_OK(MPI_Bcast(data, BCAST_BYTES, MPI_CHAR, 0, split));
    const unsigned long long received = 0 == split_rank ? 0 : 1;
    CHECK_EQ_U64(array_sum(session, on_split[2]), received, "internal messages received on the split by bcast");
    CHECK_EQ_U64(array_sum(session, on_split[3]), received * BCAST_BYTES,
                 "internal bytes received on the split by bcast");
    unsigned long long sent[2] = {array_sum(session, on_split[0]), array_sum(session, on_split[1])}, all[2];
    MPI_OK(MPI_Allreduce(sent, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ_U64(all[0], 3, "internal messages sent on the split by bcast, all ranks");
    CHECK_EQ_U64(all[1], 3 * BCAST_BYTES, "internal bytes sent on the split by bcast, all ranks");
    const unsigned long long none[4][4] = {{0}};
    check_peer_arrays(session, user_on_split, names, none, "the split, over its bcast");
    CHECK(array_sum(session, on_world[0]) > 0 || array_sum(session, on_world[2]) > 0,
          "the allreduce on MPI_COMM_WORLD is internal traffic there");
    check_peer_arrays(session, world, names, in_world, "MPI_COMM_WORLD, over its allreduce");
    for (int i = 0; i < 4; ++i) {
        MPI_OK(MPI_T_pvar_handle_free(session, &on_split[i]));
        MPI_OK(MPI_T_pvar_handle_free(session, &on_world[i]));
        MPI_OK(MPI_T_pvar_handle_free(session, &user_on_split[i]));
    }
}

static void check_peers(void)
{
    enum { MESSAGES = 5, SIZE = 1000 };
    MPI_Comm split;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, 3 - test_rank, &split));
    const char *names[] = {"PEER_MESSAGES_SENT", "PEER_BYTES_SENT", "PEER_MESSAGES_RECEIVED",
                           "PEER_BYTES_RECEIVED"};
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle world[4], reversed[4];
    for (int i = 0; i < 4; ++i) {
        world[i] = started_comm_array(session, names[i], MPI_COMM_WORLD, 4);
        reversed[i] = started_comm_array(session, names[i], split, 4);
    }
    char buffer[SIZE] = {0};
    for (int i = 0; i < MESSAGES; ++i) {
        if (test_rank == 0) {
            MPI_OK(MPI_Send(buffer, SIZE, MPI_CHAR, 2, 3, MPI_COMM_WORLD));
            MPI_OK(MPI_Send(buffer, SIZE, MPI_CHAR, 1, 3, split));  /* world rank 2 */
        } else if (test_rank == 2) {
            MPI_OK(MPI_Recv(buffer, SIZE, MPI_CHAR, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_OK(MPI_Recv(buffer, SIZE, MPI_CHAR, MPI_ANY_SOURCE, 3, split, MPI_STATUS_IGNORE));
        }
    }
    /* [array][rank]: sent counts and bytes, received counts and bytes */
    unsigned long long in_world[4][4] = {{0}}, in_split[4][4] = {{0}};
    if (test_rank == 0) {
        in_world[0][2] = MESSAGES, in_world[1][2] = MESSAGES * SIZE;
        in_split[0][1] = MESSAGES, in_split[1][1] = MESSAGES * SIZE;
    } else if (test_rank == 2) {
        in_world[2][0] = MESSAGES, in_world[3][0] = MESSAGES * SIZE;
        in_split[2][3] = MESSAGES, in_split[3][3] = MESSAGES * SIZE;
    }
    check_peer_arrays(session, world, names, (const unsigned long long(*)[4])in_world, "MPI_COMM_WORLD");
    check_peer_arrays(session, reversed, names, (const unsigned long long(*)[4])in_split, "the split");
    check_internal_arrays(session, split, world, names, (const unsigned long long(*)[4])in_world);
    MPI_OK(MPI_T_pvar_reset(session, world[0]));
    unsigned long long values[4] = {1, 1, 1, 1};
    MPI_OK(MPI_T_pvar_read(session, world[0], values));
    CHECK(values[0] == 0 && values[1] == 0 && values[2] == 0 && values[3] == 0,
          "a reset array is all 0");
    MPI_OK(MPI_T_pvar_session_free(&session));
    MPI_OK(MPI_Comm_free(&split));
}

static void check_histograms(void)
{
    static const int sizes[] = {0, 1, 2, 3, 4, 1023, 1024};
    enum { SENT, RECEIVED };
    const char *names[] = {"MESSAGE_SIZES_SENT", "MESSAGE_SIZES_RECEIVED"};
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle process[2], on_a[2], on_b[2];
    for (int i = 0; i < 2; ++i) {
        process[i] = started_histogram(session, names[i], SPC_HISTOGRAM_BINS);
        on_a[i] = started_comm_array(session, names[i], comm_a, SPC_HISTOGRAM_BINS);
        on_b[i] = started_comm_array(session, names[i], comm_b, SPC_HISTOGRAM_BINS);
    }
    char buffer[1024] = {0};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        if (test_rank == 0) {
            MPI_OK(MPI_Send(buffer, sizes[i], MPI_CHAR, 1, 8, comm_a));
        } else if (test_rank == 1) {
            MPI_OK(MPI_Recv(buffer, sizes[i], MPI_CHAR, 0, 8, comm_a, MPI_STATUS_IGNORE));
        }
    }
    unsigned long long filled[SPC_HISTOGRAM_BINS] = {0}, empty[SPC_HISTOGRAM_BINS] = {0};
    filled[0] = filled[1] = filled[3] = filled[10] = filled[11] = 1;
    filled[2] = 2;
    for (int i = 0; i < 2; ++i) {
        const int mine = (i == SENT && test_rank == 0) || (i == RECEIVED && test_rank == 1);
        const unsigned long long *expected = mine ? filled : empty;
        const struct {
            MPI_T_pvar_handle handle;
            const char *where;
            const unsigned long long *expected;
        } reads[] = {{process[i], "process-wide", expected}, {on_a[i], "bound to A", expected},
                     {on_b[i], "bound to B", empty}};
        for (int r = 0; r < 3; ++r) {
            unsigned long long bins[SPC_HISTOGRAM_BINS];
            MPI_OK(MPI_T_pvar_read(session, reads[r].handle, bins));
            unsigned long long sum = 0;
            for (int bin = 0; bin < SPC_HISTOGRAM_BINS; ++bin) {
                char what[128];
                snprintf(what, sizeof what, "%s %s bin %d", names[i], reads[r].where, bin);
                CHECK_EQ_U64(bins[bin], reads[r].expected[bin], what);
                sum += bins[bin];
            }
            CHECK_EQ_U64(sum, reads[r].expected == filled ? 7 : 0, "messages in the histogram");
        }
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
    CHECK(!spc_switch_is_on(SPC_SWITCH_COMM_COUNTERS), "histogram handles freed: the sites are off");
}

/* Histograms per peer, kept from their first handle on: with A's own
 * histogram watching, rank 0 sends 2 messages of 100 B to rank 2 on A;
 * then with handles on the per-peer ones, 0, 1 and 1024 B to rank 1 and 3
 * of 100 B to rank 2.  Each rank's arrays hold 4 histograms, one per rank
 * of A: only the later messages, each at its peer and bin. */
static void check_peer_histograms(void)
{
    enum { SENT, RECEIVED, BINS = SPC_HISTOGRAM_BINS, RANKS = 4 };
    const char *names[] = {"PEER_MESSAGE_SIZES_SENT", "PEER_MESSAGE_SIZES_RECEIVED"};
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle whole = started_comm_array(session, "MESSAGE_SIZES_SENT", comm_a, BINS);
    char buffer[1024] = {0};
    for (int i = 0; i < 2; ++i) {
        if (test_rank == 0) {
            MPI_OK(MPI_Send(buffer, 100, MPI_CHAR, 2, 9, comm_a));
        } else if (test_rank == 2) {
            MPI_OK(MPI_Recv(buffer, 100, MPI_CHAR, 0, 9, comm_a, MPI_STATUS_IGNORE));
        }
    }
    MPI_T_pvar_handle per_peer[2];
    for (int i = 0; i < 2; ++i) {
        per_peer[i] = started_comm_array(session, names[i], comm_a, RANKS * BINS);
    }
    static const struct { int to, bytes; } messages[] = {{1, 0}, {1, 1}, {1, 1024}, {2, 100}, {2, 100}, {2, 100}};
    static unsigned long long expected[2][RANKS * BINS];
    for (size_t m = 0; m < sizeof messages / sizeof messages[0]; ++m) {
        const int to = messages[m].to, bytes = messages[m].bytes, bin = spc_histogram_bin((uint64_t)bytes);
        if (test_rank == 0) {
            MPI_OK(MPI_Send(buffer, bytes, MPI_CHAR, to, 9, comm_a));
            expected[SENT][to * BINS + bin] += 1;
        } else if (test_rank == to) {
            MPI_OK(MPI_Recv(buffer, bytes, MPI_CHAR, 0, 9, comm_a, MPI_STATUS_IGNORE));
            expected[RECEIVED][0 * BINS + bin] += 1;
        }
    }
    for (int i = 0; i < 2; ++i) {
        static unsigned long long got[RANKS * BINS];
        MPI_OK(MPI_T_pvar_read(session, per_peer[i], got));
        for (int at = 0; at < RANKS * BINS; ++at) {
            char what[128];
            snprintf(what, sizeof what, "%s bound to A, rank %d bin %d", names[i], at / BINS, at % BINS);
            CHECK_EQ_U64(got[at], expected[i][at], what);
        }
    }
    unsigned long long bins[BINS];
    MPI_OK(MPI_T_pvar_read(session, whole, bins));
    CHECK_EQ_U64(bins[spc_histogram_bin(100)], test_rank == 0 ? 5 : 0,
                 "control: A's own histogram has the messages sent before the per-peer handles");
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* A handle on a communicator freed while it is started: its reads fail,
 * its stop and free work, and its reference on the switch is gone. */
static void check_freed_communicator(void)
{
    MPI_Comm gone;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &gone));
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle handle = started_comm_handle(session, "SEND", gone);
    MPI_T_pvar_handle stopped = started_comm_handle(session, "SEND", gone);
    MPI_T_pvar_handle kept = started_comm_handle(session, "SEND", comm_a);
    traffic(gone, 2);
    CHECK_EQ_U64(read_handle(session, handle), test_rank == 0 ? 2 : 0, "SEND bound to the communicator");
    MPI_OK(MPI_T_pvar_stop(session, stopped));
    CHECK(spc_switch_is_on(SPC_SWITCH_COMM_COUNTERS), "control: started handles hold the switch");

    MPI_OK(MPI_Comm_free(&gone));
    unsigned long long value = 0;
    int rc = MPI_T_pvar_read(session, handle, &value);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "read on a freed communicator returned %d", rc);
    rc = MPI_T_pvar_readreset(session, handle, &value);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "readreset on a freed communicator returned %d", rc);
    /* Open MPI answers every failed start so (ompi/mpi/tool/pvar_start.c:25-32) */
    rc = MPI_T_pvar_start(session, stopped);
    CHECK(rc == MPI_T_ERR_PVAR_NO_STARTSTOP, "start on a freed communicator returned %d", rc);
    CHECK_EQ_U64(read_handle(session, stopped), test_rank == 0 ? 2 : 0,
                 "a handle stopped before the free keeps its frozen value");

    /* a communicator made now may take the freed one's address */
    MPI_Comm next;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &next));
    traffic(next, 1);
    rc = MPI_T_pvar_read(session, handle, &value);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "read after a new communicator returned %d", rc);

    MPI_OK(MPI_T_pvar_handle_free(session, &handle));
    MPI_OK(MPI_T_pvar_handle_free(session, &stopped));
    CHECK(spc_switch_is_on(SPC_SWITCH_COMM_COUNTERS), "the handle on A still holds the switch");
    MPI_OK(MPI_T_pvar_handle_free(session, &kept));
    CHECK(!spc_switch_is_on(SPC_SWITCH_COMM_COUNTERS), "no handle started: the sites are off");
    MPI_OK(MPI_Comm_free(&next));
    MPI_OK(MPI_T_pvar_session_free(&session));
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        fprintf(stderr, "run with 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    take_pml_argument(argc, argv);
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_a));
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_b));
    CHECK(!spc_switch_is_on(SPC_SWITCH_COMM_COUNTERS), "nobody watches: the sites are off");

    check_where_traffic_goes();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    check_unexpected();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    check_semantics();
    check_freed_communicator();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    check_peers();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    check_histograms();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    check_peer_histograms();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    check_match_time();

    MPI_OK(MPI_Comm_free(&comm_a));
    MPI_OK(MPI_Comm_free(&comm_b));
    MPI_OK(MPI_T_finalize());
    MPI_OK(MPI_Finalize());
    return finish("mpit_comm");
}
