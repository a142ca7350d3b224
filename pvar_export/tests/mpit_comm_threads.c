/*
 * Counters bound to communicators under MPI_THREAD_MULTIPLE, on 4 ranks in
 * pairs (0 to 1, 2 to 3): 4 threads per rank, threads 0 and 2 on a
 * duplicate A of MPI_COMM_WORLD, threads 1 and 3 on a duplicate B, each
 * sending (even ranks) or receiving (odd ranks) MESSAGES blocking messages
 * of its own size.  Per communicator the calls and user bytes are exact,
 * and they sum to the process-wide counters; the unexpected and
 * out-of-sequence messages, which the threads' races decide, sum too.
 * argv[1] names the job's PML (default ob1): what it does not count has no
 * variable (ucx: OUT_OF_SEQUENCE; cm: UNEXPECTED too); the calls and bytes
 * are exact under every PML.
 */
#include "mpit_util.h"

#include <pthread.h>
#include <stdint.h>

enum { THREADS = 4, MESSAGES = 500 };
static const int sizes[THREADS] = {1, 100, 1000, 20000};  /* the last is rendezvous */

static MPI_Comm comms[2];  /* A, B */

static void *exchange(void *arg)
{
    const int thread = (int)(intptr_t)arg;
    MPI_Comm comm = comms[thread % 2];
    const int partner = test_rank ^ 1;
    char *buffer = calloc((size_t)sizes[thread], 1);
    for (int i = 0; i < MESSAGES; ++i) {
        if (test_rank % 2 == 0) {
            MPI_OK(MPI_Send(buffer, sizes[thread], MPI_CHAR, partner, thread, comm));
        } else {
            MPI_OK(MPI_Recv(buffer, sizes[thread], MPI_CHAR, partner, thread, comm, MPI_STATUS_IGNORE));
        }
    }
    free(buffer);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE || size != 4) {
        fprintf(stderr, "run with 4 ranks and MPI_THREAD_MULTIPLE (provided %d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_OK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    take_pml_argument(argc, argv);
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]));
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]));

    const char *names[] = {"SEND", "RECV", "BYTES_SENT_USER", "BYTES_RECEIVED_USER",
                           "UNEXPECTED", "OUT_OF_SEQUENCE"};
    enum { SEND, RECV, SENT, RECEIVED, UNEXPECTED, OOS, N };
    bool offered[N];
    for (int i = 0; i < N; ++i) {
        offered[i] = pml_offers(names[i]);
    }
    /* Every barrier message to this rank is received inside the barrier, and
     * MPI_T calls do not progress messages: from the starts to the reads
     * only A and B carry traffic to count. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle bound[2][N], unbound[N];
    for (int i = 0; i < N; ++i) {
        if (offered[i]) {
            bound[0][i] = started_comm_handle(session, names[i], comms[0]);
            bound[1][i] = started_comm_handle(session, names[i], comms[1]);
            unbound[i] = started_handle(session, names[i]);
        }
    }

    pthread_t workers[THREADS];
    for (int t = 0; t < THREADS; ++t) {
        if (pthread_create(&workers[t], NULL, exchange, (void *)(intptr_t)t) != 0) {
            spc_client_die("pthread_create failed");
        }
    }
    for (int t = 0; t < THREADS; ++t) {
        pthread_join(workers[t], NULL);
    }

    const int sender = test_rank % 2 == 0;
    unsigned long long expected[2][N] = {{0}};
    for (int t = 0; t < THREADS; ++t) {
        expected[t % 2][sender ? SEND : RECV] += MESSAGES;
        expected[t % 2][sender ? SENT : RECEIVED] += (unsigned long long)MESSAGES * sizes[t];
    }
    unsigned long long values[2][N] = {{0}}, totals[N] = {0};
    for (int i = 0; i < N; ++i) {
        if (!offered[i]) {
            continue;
        }
        totals[i] = read_handle(session, unbound[i]);
        for (int c = 0; c < 2; ++c) {
            values[c][i] = read_handle(session, bound[c][i]);
        }
    }
    for (int i = 0; i < N; ++i) {
        char what[128];
        if (!offered[i]) {
            continue;
        }
        for (int c = 0; c < 2 && i < UNEXPECTED; ++c) {
            snprintf(what, sizeof what, "%s bound to %c", names[i], "AB"[c]);
            CHECK_EQ_U64(values[c][i], expected[c][i], what);
        }
        snprintf(what, sizeof what, "%s: A + B = process-wide (A %llu, B %llu)", names[i],
                 values[0][i], values[1][i]);
        CHECK_EQ_U64(values[0][i] + values[1][i], totals[i], what);
    }
    for (int i = UNEXPECTED; i < N && !sender; ++i) {
        if (offered[i]) {
            printf("rank %d: %s A %llu B %llu\n", test_rank, names[i], values[0][i], values[1][i]);
        }
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
    MPI_OK(MPI_Comm_free(&comms[0]));
    MPI_OK(MPI_Comm_free(&comms[1]));
    MPI_OK(MPI_T_finalize());
    MPI_OK(MPI_Finalize());
    return finish("mpit_comm_threads");
}
