/*
 * Unexpected messages on 2 ranks: rank 0 sends K small messages with tags
 * 0..K-1; rank 1 probes for the last one, which makes ob1 take all K off the
 * transport with no receive posted, so every one of them is unexpected.
 * Then UNEXPECTED = K, the queue level is K, back to 0 once all are received,
 * and the watermark is K.  A second watermark handle, started after that,
 * sees only the 3 messages queued later; a reset starts a handle's watermark
 * over; the process-wide watermark is never reset.
 */
#include "mpit_util.h"

#include "spc/spc.h"

enum { K = 25, LATER = 3, READY_TAG = K + 1 };

/* Rank 0 sends count messages; rank 1 lets them all become unexpected, then
 * receives them. */
static void queue_unexpected(int count)
{
    int payload = 0;
    if (test_rank == 0) {
        for (int tag = 0; tag < count; ++tag) {
            MPI_OK(MPI_Send(&tag, 1, MPI_INT, 1, tag, MPI_COMM_WORLD));
        }
        return;
    }
    MPI_OK(MPI_Probe(0, count - 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int tag = count - 1; tag >= 0; --tag) {
        MPI_OK(MPI_Recv(&payload, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(payload == tag, "payload %d for tag %d", payload, tag);
    }
}

int main(int argc, char **argv)
{
    int provided;
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);

    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle unexpected = started_handle(session, "UNEXPECTED");
    MPI_T_pvar_handle level = started_handle(session, "UNEXPECTED_IN_QUEUE");
    MPI_T_pvar_handle watermark = started_handle(session, "MAX_UNEXPECTED_IN_QUEUE");
    /* Rank 0 sends only after rank 1 has read its baseline: rank 1 may take
     * messages off the transport while it is still in the barrier, and they
     * would be counted before the baseline.  The empty "ready" message goes
     * to a receive posted before the barrier, so it is never unexpected. */
    MPI_Request ready = MPI_REQUEST_NULL;
    if (test_rank == 0) {
        MPI_OK(MPI_Irecv(NULL, 0, MPI_CHAR, 1, READY_TAG, MPI_COMM_WORLD, &ready));
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    const unsigned long long unexpected_before = read_handle(session, unexpected);

    if (test_rank == 0) {
        MPI_OK(MPI_Wait(&ready, MPI_STATUS_IGNORE));
        queue_unexpected(K);
    } else {
        MPI_OK(MPI_Send(NULL, 0, MPI_CHAR, 0, READY_TAG, MPI_COMM_WORLD));
        MPI_OK(MPI_Probe(0, K - 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ_U64(read_handle(session, unexpected) - unexpected_before, K, "UNEXPECTED");
        CHECK_EQ_U64(read_handle(session, level), K, "UNEXPECTED_IN_QUEUE with all queued");
        queue_unexpected(K);
        CHECK_EQ_U64(read_handle(session, level), 0, "UNEXPECTED_IN_QUEUE once all received");
        CHECK_EQ_U64(read_handle(session, watermark), K, "MAX_UNEXPECTED_IN_QUEUE");
        CHECK_EQ_U64(read_handle(session, watermark), K, "a read does not reset the watermark");
    }

    /* Rank 0 waits for rank 1's word rather than in a barrier: its barrier
     * message would reach rank 1 early and be one more unexpected message. */
    MPI_T_pvar_handle later = started_handle(session, "MAX_UNEXPECTED_IN_QUEUE");
    int go = 1;
    if (test_rank == 0) {
        MPI_OK(MPI_Recv(&go, 1, MPI_INT, 1, K, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        MPI_OK(MPI_Send(&go, 1, MPI_INT, 0, K, MPI_COMM_WORLD));
    }
    queue_unexpected(LATER);
    if (test_rank == 1) {
        CHECK_EQ_U64(read_handle(session, later), LATER, "a watermark handle started later");
        CHECK_EQ_U64(read_handle(session, watermark), K, "the first handle keeps its watermark");
        MPI_OK(MPI_T_pvar_reset(session, watermark));
        CHECK_EQ_U64(read_handle(session, watermark), 0, "a reset watermark starts at the level");
        CHECK_EQ_U64(spc_read(OMPI_SPC_MAX_UNEXPECTED_IN_QUEUE), K, "the process-wide watermark");
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
    MPI_OK(MPI_T_finalize());
    MPI_OK(MPI_Finalize());
    return finish("mpit_unexpected");
}
