/*
 * Unexpected messages on 2 ranks: rank 0 sends K small messages with tags
 * 0..K-1; rank 1 probes for the last one, which makes the PML take all K
 * off the transport with no receive posted, then receives them.  Every one
 * of them is unexpected, and so are LATER messages sent the same way, and
 * MATCHED more that rank 1 takes by matched probes (MPI_Mprobe,
 * MPI_Improbe): UNEXPECTED grows by exactly K, K + LATER, K + LATER +
 * MATCHED.  When it grows is the PML's: ob1 counts a message as it
 * arrives, so all K are counted once the probe returns; ucx when a receive
 * is posted for a message UCX holds, or a matched probe finds one, so none
 * is counted before the receives.  Under ob1 the queue level is K while
 * they wait, 0 once all are received, the watermark K; a second watermark
 * handle, started after that, sees only the LATER messages queued later; a
 * reset starts a handle's watermark over; the process-wide watermark is
 * never reset.  argv[1] names the job's PML (default ob1): what it does
 * not count has no variable (ucx: the queue level and watermark; cm:
 * UNEXPECTED too), and the messages still arrive, each with its payload.
 */
#include "mpit_util.h"

#include "spc/spc.h"

enum { K = 25, LATER = 3, MATCHED = 6, READY_TAG = K + 1 };

/* Rank 0 sends count messages; rank 1 lets them all become unexpected, then
 * receives them, if matched through matched probes (MPI_Mprobe for even
 * tags, MPI_Improbe for odd ones). */
static void queue_unexpected(int count, bool matched)
{
    int payload = 0;
    if (test_rank == 0) {
        for (int tag = 0; tag < count; ++tag) {
            MPI_OK(MPI_Send(&tag, 1, MPI_INT, 1, tag, MPI_COMM_WORLD));
        }
        return;
    }
    /* a probe that removes nothing: no PML counts it */
    MPI_OK(MPI_Probe(0, count - 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int tag = count - 1; tag >= 0; --tag) {
        MPI_Message message;
        MPI_Request request;
        int found = 0;
        if (!matched) {
            MPI_OK(MPI_Recv(&payload, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else if (tag % 2 == 0) {
            MPI_OK(MPI_Mprobe(0, tag, MPI_COMM_WORLD, &message, MPI_STATUS_IGNORE));
            MPI_OK(MPI_Mrecv(&payload, 1, MPI_INT, &message, MPI_STATUS_IGNORE));
        } else {
            /* an improbe that finds nothing takes nothing: not counted */
            while (!found) {
                MPI_OK(MPI_Improbe(0, tag, MPI_COMM_WORLD, &found, &message, MPI_STATUS_IGNORE));
            }
            MPI_OK(MPI_Imrecv(&payload, 1, MPI_INT, &message, &request));
            MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
        }
        CHECK(payload == tag, "payload %d for tag %d", payload, tag);
    }
}

int main(int argc, char **argv)
{
    int provided;
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    take_pml_argument(argc, argv);
    const bool counted = pml_offers("UNEXPECTED");
    const bool queued = pml_offers("UNEXPECTED_IN_QUEUE") & pml_offers("MAX_UNEXPECTED_IN_QUEUE");
    /* ob1 counts at arrival (pml_ob1_recvfrag.c, hook OB1_UNEXPECTED);
     * ucx when a receive or matched probe takes a message it holds
     * (4.1.4 pml_ucx.c:599,644,1033,1061, pml_ucx_request.h:164-171) */
    const bool at_arrival = strcmp(test_pml, "ob1") == 0;

    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle unexpected = counted ? started_handle(session, "UNEXPECTED") : MPI_T_PVAR_HANDLE_NULL;
    MPI_T_pvar_handle level = MPI_T_PVAR_HANDLE_NULL, watermark = MPI_T_PVAR_HANDLE_NULL;
    if (queued) {
        level = started_handle(session, "UNEXPECTED_IN_QUEUE");
        watermark = started_handle(session, "MAX_UNEXPECTED_IN_QUEUE");
    }
    /* Rank 0 sends only after rank 1 has read its baseline: rank 1 may take
     * messages off the transport while it is still in the barrier, and they
     * would be counted before the baseline.  The empty "ready" message goes
     * to a receive posted before the barrier, so it is never unexpected. */
    MPI_Request ready = MPI_REQUEST_NULL;
    if (test_rank == 0) {
        MPI_OK(MPI_Irecv(NULL, 0, MPI_CHAR, 1, READY_TAG, MPI_COMM_WORLD, &ready));
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    const unsigned long long unexpected_before = counted ? read_handle(session, unexpected) : 0;

    if (test_rank == 0) {
        MPI_OK(MPI_Wait(&ready, MPI_STATUS_IGNORE));
        queue_unexpected(K, false);
    } else {
        MPI_OK(MPI_Send(NULL, 0, MPI_CHAR, 0, READY_TAG, MPI_COMM_WORLD));
        MPI_OK(MPI_Probe(0, K - 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        if (counted) {
            CHECK_EQ_U64(read_handle(session, unexpected) - unexpected_before, at_arrival ? K : 0,
                         "UNEXPECTED with all arrived, none received");
        }
        if (queued) {
            CHECK_EQ_U64(read_handle(session, level), K, "UNEXPECTED_IN_QUEUE with all queued");
        }
        queue_unexpected(K, false);
        if (counted) {
            CHECK_EQ_U64(read_handle(session, unexpected) - unexpected_before, K, "UNEXPECTED once received");
        }
        if (queued) {
            CHECK_EQ_U64(read_handle(session, level), 0, "UNEXPECTED_IN_QUEUE once all received");
            CHECK_EQ_U64(read_handle(session, watermark), K, "MAX_UNEXPECTED_IN_QUEUE");
            CHECK_EQ_U64(read_handle(session, watermark), K, "a read does not reset the watermark");
        }
    }

    /* Rank 0 waits for rank 1's word rather than in a barrier: its barrier
     * message would reach rank 1 early and be one more unexpected message. */
    MPI_T_pvar_handle later = queued ? started_handle(session, "MAX_UNEXPECTED_IN_QUEUE") : MPI_T_PVAR_HANDLE_NULL;
    int go = 1;
    if (test_rank == 0) {
        MPI_OK(MPI_Recv(&go, 1, MPI_INT, 1, K, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        MPI_OK(MPI_Send(&go, 1, MPI_INT, 0, K, MPI_COMM_WORLD));
    }
    queue_unexpected(LATER, false);
    if (test_rank == 1 && counted) {
        CHECK_EQ_U64(read_handle(session, unexpected) - unexpected_before, K + LATER, "UNEXPECTED, later ones too");
    }
    if (test_rank == 1 && queued) {
        CHECK_EQ_U64(read_handle(session, later), LATER, "a watermark handle started later");
        CHECK_EQ_U64(read_handle(session, watermark), K, "the first handle keeps its watermark");
        MPI_OK(MPI_T_pvar_reset(session, watermark));
        CHECK_EQ_U64(read_handle(session, watermark), 0, "a reset watermark starts at the level");
        CHECK_EQ_U64(spc_read(OMPI_SPC_MAX_UNEXPECTED_IN_QUEUE), K, "the process-wide watermark");
    }

    /* the same again, taken by matched probes */
    if (test_rank == 0) {
        MPI_OK(MPI_Recv(&go, 1, MPI_INT, 1, K, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        MPI_OK(MPI_Send(&go, 1, MPI_INT, 0, K, MPI_COMM_WORLD));
    }
    queue_unexpected(MATCHED, true);
    if (test_rank == 1 && counted) {
        CHECK_EQ_U64(read_handle(session, unexpected) - unexpected_before, K + LATER + MATCHED,
                     "UNEXPECTED, with those taken by matched probes");
    }
    if (test_rank == 1 && queued) {
        CHECK_EQ_U64(read_handle(session, level), 0, "UNEXPECTED_IN_QUEUE once the matched probes took them");
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
    MPI_OK(MPI_T_finalize());
    MPI_OK(MPI_Finalize());
    return finish("mpit_unexpected");
}
