/*
 * Every send and receive path of a PML counted once, exactly, on 2 ranks:
 * the same program under ob1 (the control: its counts were established
 * before), ucx and cm.  On a duplicate C of MPI_COMM_WORLD, rank 0 sends
 * the messages of the table below to rank 1, each by another send call and
 * received by another receive call (blocking, nonblocking, persistent start
 * of a 4-byte datatype, buffered, synchronous, matched probe, a wildcard
 * receive, eager and rendezvous sizes, 0 bytes), then rank 1 sends one
 * back.  The test sums the bytes and bins the sizes itself and checks, on
 * both ranks, first the user bytes with nothing bound to a communicator,
 * then: BYTES_SENT_USER and BYTES_RECEIVED_USER process-wide and bound to
 * C, the four per-peer arrays of C and the two size histograms,
 * process-wide and bound to C.  A collective on C afterwards moves MPI bytes only: the user
 * counters do not move, the MPI ones do.  Then UNEXPECTED on rank 1: K
 * eager messages and a rendezvous one that it lets arrive before it posts
 * their receives (a probe for the last one, which comes last) count K + 1;
 * K more whose receives it posted before it told rank 0 to send count 0
 * (not under cm, which does not count UNEXPECTED).  Last, what the PML
 * named by argv[1] does not count is not offered: under ucx the counters of
 * ob1's queues, order, match timers and RDMA have no MPI_T variable (nor a
 * communicator's queue levels), under cm neither has UNEXPECTED, while the
 * ones they count have; under ob1 all have.
 */
#include "mpit_util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "spc/spc.h"

enum { RENDEZVOUS = 200000, TAG = 7, BACK_BYTES = 5, K = 9, READY_TAG = 99 };

/* How rank 0 sends a message and how rank 1 receives it. */
enum send_path { SEND, ISEND, SEND_START, BSEND, SSEND, ISSEND };
enum recv_path { RECV, IRECV, RECV_START, MPROBE_MRECV, IMPROBE_IMRECV, RECV_ANY };

static const struct message {
    int bytes;
    enum send_path send;
    enum recv_path recv;
    int repeats;
} messages[] = {
    {10, SEND, RECV, 1},
    {100, ISEND, IRECV, 2},
    {1000, SEND_START, RECV_START, 3},
    {20, BSEND, RECV, 1},
    {30, SSEND, MPROBE_MRECV, 1},
    {40, ISSEND, IMPROBE_IMRECV, 1},
    {7, SEND, RECV_ANY, 1},
    {0, SEND, IRECV, 1},
    {RENDEZVOUS, SEND, RECV, 1},
    {RENDEZVOUS, ISEND, RECV_START, 2},
};
enum { NUM_MESSAGES = sizeof messages / sizeof messages[0] };

static char *buffer;

static void send_message(const struct message *m, MPI_Comm comm)
{
    MPI_Request request;
    switch (m->send) {
    case SEND:
        MPI_OK(MPI_Send(buffer, m->bytes, MPI_CHAR, 1, TAG, comm));
        return;
    case ISEND:
        MPI_OK(MPI_Isend(buffer, m->bytes, MPI_CHAR, 1, TAG, comm, &request));
        break;
    case SEND_START: {
        /* in words of 4 chars: a PML that took the request's count for
         * elements where it holds bytes (pml cm did) counts 4 times too many */
        MPI_Datatype word;
        MPI_OK(MPI_Type_contiguous(4, MPI_CHAR, &word));
        MPI_OK(MPI_Type_commit(&word));
        if (m->bytes % 4 != 0) {
            spc_client_die("a persistent send's %d bytes are not whole words", m->bytes);
        }
        MPI_OK(MPI_Send_init(buffer, m->bytes / 4, word, 1, TAG, comm, &request));
        MPI_OK(MPI_Type_free(&word));
        MPI_OK(MPI_Start(&request));
        MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
        MPI_OK(MPI_Request_free(&request));
        return;
    }
    case BSEND:
        MPI_OK(MPI_Bsend(buffer, m->bytes, MPI_CHAR, 1, TAG, comm));
        return;
    case SSEND:
        MPI_OK(MPI_Ssend(buffer, m->bytes, MPI_CHAR, 1, TAG, comm));
        return;
    case ISSEND:
        MPI_OK(MPI_Issend(buffer, m->bytes, MPI_CHAR, 1, TAG, comm, &request));
        break;
    }
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
}

static void receive_message(const struct message *m, MPI_Comm comm)
{
    MPI_Request request;
    MPI_Message message;
    MPI_Status status;
    int flag = 0, count = -1;
    switch (m->recv) {
    case RECV:
        MPI_OK(MPI_Recv(buffer, m->bytes, MPI_CHAR, 0, TAG, comm, &status));
        break;
    case IRECV:
        MPI_OK(MPI_Irecv(buffer, m->bytes, MPI_CHAR, 0, TAG, comm, &request));
        MPI_OK(MPI_Wait(&request, &status));
        break;
    case RECV_START:
        MPI_OK(MPI_Recv_init(buffer, m->bytes, MPI_CHAR, 0, TAG, comm, &request));
        MPI_OK(MPI_Start(&request));
        MPI_OK(MPI_Wait(&request, &status));
        MPI_OK(MPI_Request_free(&request));
        break;
    case MPROBE_MRECV:
        MPI_OK(MPI_Mprobe(0, TAG, comm, &message, &status));
        MPI_OK(MPI_Mrecv(buffer, m->bytes, MPI_CHAR, &message, &status));
        break;
    case IMPROBE_IMRECV:
        while (!flag) {
            MPI_OK(MPI_Improbe(0, TAG, comm, &flag, &message, &status));
        }
        MPI_OK(MPI_Imrecv(buffer, m->bytes, MPI_CHAR, &message, &request));
        MPI_OK(MPI_Wait(&request, &status));
        break;
    case RECV_ANY:
        MPI_OK(MPI_Recv(buffer, m->bytes, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &status));
        break;
    }
    MPI_OK(MPI_Get_count(&status, MPI_CHAR, &count));
    CHECK(count == m->bytes, "received %d bytes of a %d-byte message", count, m->bytes);
}

/* A histogram's bin for a message of bytes bytes: its bit length. */
static int bin_of(unsigned long long bytes)
{
    int bin = 0;
    for (; bytes != 0; bytes >>= 1) {
        ++bin;
    }
    return bin;
}

/* What this rank's counters should read: [0] as sender, [1] as receiver. */
struct expected {
    unsigned long long bytes[2], messages[2], bins[2][SPC_HISTOGRAM_BINS];
};

static void expect(struct expected *e, int role, unsigned long long bytes, int repeats)
{
    e->bytes[role] += bytes * (unsigned long long)repeats;
    e->messages[role] += (unsigned long long)repeats;
    e->bins[role][bin_of(bytes)] += (unsigned long long)repeats;
}

static void check_bins(MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                       const unsigned long long *expected, const char *where)
{
    unsigned long long bins[SPC_HISTOGRAM_BINS];
    MPI_OK(MPI_T_pvar_read(session, handle, bins));
    for (int bin = 0; bin < SPC_HISTOGRAM_BINS; ++bin) {
        char what[128];
        snprintf(what, sizeof what, "%s bin %d", where, bin);
        CHECK_EQ_U64(bins[bin], expected[bin], what);
    }
}

/* UNEXPECTED on rank 1, process-wide and bound to comm, is exactly the
 * K + 1 messages it let arrive first; rank 0's is not checked (its
 * receive of the ready message may come before or after that message). */
static void check_unexpected(MPI_Comm comm)
{
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle process = started_handle(session, "UNEXPECTED");
    MPI_T_pvar_handle on_c = started_comm_handle(session, "UNEXPECTED", comm);
    MPI_Request requests[K + 1];
    int ready = 0;
    /* rank 0 sends once rank 1's counters are on: a message that arrived
     * before would be queued uncounted (seen once in flag-sites mode) */
    if (test_rank == 0) {
        MPI_OK(MPI_Recv(&ready, 1, MPI_INT, 1, READY_TAG, comm, MPI_STATUS_IGNORE));
        for (int i = 0; i < K; ++i) {
            MPI_OK(MPI_Send(buffer, 8, MPI_CHAR, 1, i, comm));
        }
        MPI_OK(MPI_Isend(buffer, RENDEZVOUS, MPI_CHAR, 1, K, comm, &requests[K]));
        MPI_OK(MPI_Wait(&requests[K], MPI_STATUS_IGNORE));
        MPI_OK(MPI_Recv(&ready, 1, MPI_INT, 1, READY_TAG, comm, MPI_STATUS_IGNORE));
        for (int i = 0; i < K; ++i) {
            MPI_OK(MPI_Send(buffer, 8, MPI_CHAR, 1, i, comm));
        }
    } else {
        MPI_OK(MPI_Send(&ready, 1, MPI_INT, 0, READY_TAG, comm));
        /* messages of one sender on one communicator arrive in order */
        MPI_OK(MPI_Probe(0, K, comm, MPI_STATUS_IGNORE));
        for (int i = 0; i < K; ++i) {
            MPI_OK(MPI_Recv(buffer, 8, MPI_CHAR, 0, i, comm, MPI_STATUS_IGNORE));
        }
        MPI_OK(MPI_Recv(buffer, RENDEZVOUS, MPI_CHAR, 0, K, comm, MPI_STATUS_IGNORE));
        CHECK_EQ_U64(read_handle(session, process), K + 1, "UNEXPECTED after the messages let arrive first");
        for (int i = 0; i < K; ++i) {
            MPI_OK(MPI_Irecv(buffer + 8 * i, 8, MPI_CHAR, 0, i, comm, &requests[i]));
        }
        MPI_OK(MPI_Send(&ready, 1, MPI_INT, 0, READY_TAG, comm));
        MPI_OK(MPI_Waitall(K, requests, MPI_STATUSES_IGNORE));
        CHECK_EQ_U64(read_handle(session, process), K + 1, "UNEXPECTED process-wide, receives posted first");
        CHECK_EQ_U64(read_handle(session, on_c), K + 1, "UNEXPECTED bound to C");
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* The messages of the table from rank 0 to rank 1 on comm, then one back;
 * returns what this rank's counters should read. */
static struct expected run_traffic(MPI_Comm comm)
{
    struct expected mine;
    memset(&mine, 0, sizeof mine);
    enum { SENDER, RECEIVER };
    for (int i = 0; i < NUM_MESSAGES; ++i) {
        for (int r = 0; r < messages[i].repeats; ++r) {
            if (test_rank == 0) {
                send_message(&messages[i], comm);
            } else {
                receive_message(&messages[i], comm);
            }
        }
        expect(&mine, test_rank == 0 ? SENDER : RECEIVER, (unsigned long long)messages[i].bytes,
               messages[i].repeats);
    }
    if (test_rank == 1) {
        MPI_OK(MPI_Send(buffer, BACK_BYTES, MPI_CHAR, 0, TAG, comm));
    } else {
        MPI_OK(MPI_Recv(buffer, BACK_BYTES, MPI_CHAR, 1, TAG, comm, MPI_STATUS_IGNORE));
    }
    expect(&mine, test_rank == 1 ? SENDER : RECEIVER, BACK_BYTES, 1);
    /* the sender's counts are complete once its sends are: a buffered one
     * may still be on its way, so both ranks wait for the other's end */
    MPI_OK(MPI_Barrier(comm));
    return mine;
}

/* The user bytes alone, with nothing bound to a communicator: the hooks'
 * code for counters only (for every counter on, under mpi_spc_attach all). */
static void check_bytes_alone(MPI_Comm comm)
{
    const char *names[2] = {"BYTES_SENT_USER", "BYTES_RECEIVED_USER"};
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle handles[2] = {started_handle(session, names[0]), started_handle(session, names[1])};
    const struct expected mine = run_traffic(comm);
    for (int role = 0; role < 2; ++role) {
        CHECK_EQ_U64(read_handle(session, handles[role]), mine.bytes[role], names[role]);
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* Whether pml counts UNEXPECTED (ob1 and ucx do, cm does not). */
static bool counts_unexpected(const char *pml)
{
    return 0 != strcmp(pml, "cm");
}

/* The counters pml names: those only ob1 counts exist under ob1 alone. */
static void check_offered(const char *pml)
{
    static const char *const everywhere[] = {"SEND", "RECV", "BYTES_SENT_USER", "BYTES_RECEIVED_MPI"};
    static const char *const ob1_only[] = {"OUT_OF_SEQUENCE", "MATCH_TIME", "OOS_MATCH_TIME",
                                           "UNEXPECTED_IN_QUEUE", "OOS_IN_QUEUE",
                                           "MAX_UNEXPECTED_IN_QUEUE", "MAX_OOS_IN_QUEUE", "BYTES_PUT",
                                           "BYTES_GET"};
    const bool ob1 = 0 == strcmp(pml, "ob1");
    for (size_t i = 0; i < sizeof everywhere / sizeof everywhere[0]; ++i) {
        CHECK(spc_pvar_find(everywhere[i]) >= 0, "%s has no MPI_T variable under %s", everywhere[i], pml);
    }
    for (size_t i = 0; i < sizeof ob1_only / sizeof ob1_only[0]; ++i) {
        CHECK((spc_pvar_find(ob1_only[i]) >= 0) == ob1, "%s: an MPI_T variable under %s: %s", ob1_only[i], pml,
              ob1 ? "missing" : "there");
    }
    CHECK((spc_pvar_find("UNEXPECTED") >= 0) == counts_unexpected(pml), "UNEXPECTED: an MPI_T variable under %s: %s",
          pml, counts_unexpected(pml) ? "missing" : "there");
    int index;
    const int level = MPI_T_pvar_get_index(SPC_COMM_PVAR_PREFIX SPC_COUNTER_PREFIX "UNEXPECTED_IN_QUEUE",
                                           MPI_T_PVAR_CLASS_LEVEL, &index);
    CHECK((MPI_SUCCESS == level) == ob1, "a communicator's UNEXPECTED_IN_QUEUE under %s: %s (%d)", pml,
          ob1 ? "missing" : "there", level);
    CHECK(MPI_SUCCESS == MPI_T_pvar_get_index(SPC_COMM_PVAR_PREFIX SPC_COUNTER_PREFIX "BYTES_SENT_USER",
                                              MPI_T_PVAR_CLASS_AGGREGATE, &index),
          "a communicator's BYTES_SENT_USER under %s: missing", pml);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc != 2) {
        spc_client_die("usage: mpirun -np 2 pml_paths PML (the job's: ob1, ucx or cm), not %d ranks", size);
    }
    MPI_Comm comm;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    buffer = calloc(RENDEZVOUS, 1);
    const int attach_size = 4096 + MPI_BSEND_OVERHEAD;
    MPI_OK(MPI_Buffer_attach(malloc(attach_size), attach_size));
    check_bytes_alone(comm);

    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    const char *bytes_names[2] = {"BYTES_SENT_USER", "BYTES_RECEIVED_USER"};
    const char *mpi_names[2] = {"BYTES_SENT_MPI", "BYTES_RECEIVED_MPI"};
    const char *peer_names[2][2] = {{"PEER_MESSAGES_SENT", "PEER_BYTES_SENT"},
                                    {"PEER_MESSAGES_RECEIVED", "PEER_BYTES_RECEIVED"}};
    const char *histogram_names[2] = {"MESSAGE_SIZES_SENT", "MESSAGE_SIZES_RECEIVED"};
    MPI_T_pvar_handle bytes[2], bytes_on_c[2], mpi_bytes[2], peers[2][2], histograms[2], histograms_on_c[2];
    for (int role = 0; role < 2; ++role) {
        bytes[role] = started_handle(session, bytes_names[role]);
        bytes_on_c[role] = started_comm_handle(session, bytes_names[role], comm);
        mpi_bytes[role] = started_handle(session, mpi_names[role]);
        for (int i = 0; i < 2; ++i) {
            peers[role][i] = started_comm_array(session, peer_names[role][i], comm, 2);
        }
        histograms[role] = started_histogram(session, histogram_names[role], SPC_HISTOGRAM_BINS);
        histograms_on_c[role] = started_comm_array(session, histogram_names[role], comm, SPC_HISTOGRAM_BINS);
    }

    const struct expected mine = run_traffic(comm);

    const int peer = 1 - test_rank;
    for (int role = 0; role < 2; ++role) {
        char what[128];
        snprintf(what, sizeof what, "%s process-wide", bytes_names[role]);
        CHECK_EQ_U64(read_handle(session, bytes[role]), mine.bytes[role], what);
        snprintf(what, sizeof what, "%s bound to C", bytes_names[role]);
        CHECK_EQ_U64(read_handle(session, bytes_on_c[role]), mine.bytes[role], what);
        for (int i = 0; i < 2; ++i) {
            unsigned long long values[2] = {99, 99};
            MPI_OK(MPI_T_pvar_read(session, peers[role][i], values));
            const unsigned long long expected = i == 0 ? mine.messages[role] : mine.bytes[role];
            snprintf(what, sizeof what, "%s[%d] (the peer)", peer_names[role][i], peer);
            CHECK_EQ_U64(values[peer], expected, what);
            snprintf(what, sizeof what, "%s[%d] (this rank)", peer_names[role][i], test_rank);
            CHECK_EQ_U64(values[test_rank], 0, what);
        }
        snprintf(what, sizeof what, "%s process-wide", histogram_names[role]);
        check_bins(session, histograms[role], mine.bins[role], what);
        snprintf(what, sizeof what, "%s bound to C", histogram_names[role]);
        check_bins(session, histograms_on_c[role], mine.bins[role], what);
    }

    /* MPI's own traffic (negative tags) is never the user's */
    unsigned long long user_before[2], mpi_before[2];
    for (int role = 0; role < 2; ++role) {
        user_before[role] = read_handle(session, bytes[role]);
        mpi_before[role] = read_handle(session, mpi_bytes[role]);
    }
    int value = test_rank, sum = 0;
    MPI_OK(MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == 1, "allreduce: %d", sum);
    for (int role = 0; role < 2; ++role) {
        CHECK_EQ_U64(read_handle(session, bytes[role]), user_before[role], bytes_names[role]);
        const unsigned long long mpi_after = read_handle(session, mpi_bytes[role]);
        CHECK(mpi_after >= mpi_before[role] + sizeof(int), "%s: %llu after an allreduce of an int, %llu before",
              mpi_names[role], mpi_after, mpi_before[role]);
    }

    MPI_OK(MPI_T_pvar_session_free(&session));
    if (counts_unexpected(argv[1])) {
        check_unexpected(comm);
    }
    check_offered(argv[1]);
    void *attached;
    int attached_size;
    MPI_OK(MPI_Buffer_detach(&attached, &attached_size));
    free(attached);
    free(buffer);
    MPI_OK(MPI_Comm_free(&comm));
    MPI_OK(MPI_T_finalize());
    const int status = finish("pml_paths");
    MPI_Finalize();
    return status;
}
