/*
 * MPI_THREAD_MULTIPLE on 2 ranks, the paper's pairwise pattern: thread t of
 * rank 0 sends WINDOW messages of 64 bytes per iteration to thread t of rank
 * 1, all on MPI_COMM_WORLD with tag t.  The threads race for sequence
 * numbers, so messages arrive out of sequence.  Totals are exact; the
 * out-of-sequence count is positive, its queue level is back at 0, and
 * OOS_MATCH_TIME has counted time.
 *
 * usage: mpit_threads THREADS [--expect-oos] [--pml ob1|ucx|cm]
 * (TCP delivers in order, so only shared memory is expected to go out of
 * sequence.)  Under ucx and cm the calls and user bytes are as exact (a
 * send counts when posted, a receive when completed, from any thread);
 * the out-of-sequence counters, their queue and the match timers are ob1's
 * and must have no variable.
 */
#include "mpit_util.h"

#include <pthread.h>
#include <stdint.h>

enum { WINDOW = 256, ITERATIONS = 100, BYTES = 64 };

static int threads;

static void *pairwise(void *arg)
{
    const int tag = (int)(intptr_t)arg;
    char buffers[WINDOW][BYTES];
    MPI_Request requests[WINDOW];
    memset(buffers, tag, sizeof buffers);
    for (int iteration = 0; iteration < ITERATIONS; ++iteration) {
        for (int i = 0; i < WINDOW; ++i) {
            if (test_rank == 0) {
                MPI_OK(MPI_Isend(buffers[i], BYTES, MPI_CHAR, 1, tag, MPI_COMM_WORLD, &requests[i]));
            } else {
                MPI_OK(MPI_Irecv(buffers[i], BYTES, MPI_CHAR, 0, tag, MPI_COMM_WORLD, &requests[i]));
            }
        }
        MPI_OK(MPI_Waitall(WINDOW, requests, MPI_STATUSES_IGNORE));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    take_pml_option(&argc, argv);
    if (provided != MPI_THREAD_MULTIPLE || argc < 2 || argc > 3 ||
        (threads = atoi(argv[1])) < 1 || threads > 64 ||
        (argc == 3 && (strcmp(argv[2], "--expect-oos") != 0 || !pml_counts("OUT_OF_SEQUENCE")))) {
        fprintf(stderr, "usage: mpit_threads THREADS [--expect-oos, only under ob1] [--pml ob1|ucx|cm], "
                        "with MPI_THREAD_MULTIPLE (provided %d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int expect_oos = argc == 3;
    MPI_OK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));

    const char *names[] = {"ISEND", "IRECV", "BYTES_SENT_USER", "BYTES_RECEIVED_USER",
                           "OUT_OF_SEQUENCE", "OOS_IN_QUEUE", "MAX_OOS_IN_QUEUE",
                           "MATCH_TIME", "OOS_MATCH_TIME", "WAITALL"};
    enum { ISEND, IRECV, SENT, RECEIVED, OOS, OOS_LEVEL, OOS_MAX, MATCH, OOS_MATCH, WAITALL, N };
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handles[N];
    bool offered[N];
    MPI_OK(MPI_T_pvar_session_create(&session));
    for (int i = 0; i < N; ++i) {
        offered[i] = pml_offers(names[i]);
        if (offered[i]) {
            handles[i] = started_handle(session, names[i]);
        }
    }

    pthread_t workers[64];
    for (int t = 0; t < threads; ++t) {
        pthread_create(&workers[t], NULL, pairwise, (void *)(intptr_t)t);
    }
    for (int t = 0; t < threads; ++t) {
        pthread_join(workers[t], NULL);
    }

    unsigned long long value[N] = {0};
    for (int i = 0; i < N; ++i) {
        if (offered[i]) {
            value[i] = read_handle(session, handles[i]);
        }
    }
    const unsigned long long messages = (unsigned long long)threads * WINDOW * ITERATIONS;
    CHECK_EQ_U64(value[WAITALL], (unsigned long long)threads * ITERATIONS, "WAITALL");
    if (test_rank == 0) {
        CHECK_EQ_U64(value[ISEND], messages, "ISEND");
        CHECK_EQ_U64(value[SENT], messages * BYTES, "BYTES_SENT_USER");
    } else {
        CHECK_EQ_U64(value[IRECV], messages, "IRECV");
        CHECK_EQ_U64(value[RECEIVED], messages * BYTES, "BYTES_RECEIVED_USER");
        if (offered[OOS_LEVEL]) {
            CHECK_EQ_U64(value[OOS_LEVEL], 0, "OOS_IN_QUEUE after all receives");
        }
        if (expect_oos) {
            CHECK(value[OOS] > 0, "no message arrived out of sequence among %llu", messages);
            CHECK(value[OOS_MAX] >= 1, "MAX_OOS_IN_QUEUE %llu", value[OOS_MAX]);
            CHECK(value[OOS_MATCH] > 0, "OOS_MATCH_TIME %llu us", value[OOS_MATCH]);
        }
        if (offered[MATCH]) {
            CHECK(value[MATCH] > 0, "MATCH_TIME %llu us", value[MATCH]);
        }
        printf("rank 1: pml %s, %d threads, %llu messages\n", test_pml, threads, messages);
        if (offered[OOS] && offered[MATCH] && offered[OOS_MATCH]) {
            printf("rank 1: %llu out of sequence (%.1f%%), match %llu us, OOS match %llu us\n",
                   value[OOS], 100.0 * (double)value[OOS] / (double)messages, value[MATCH],
                   value[OOS_MATCH]);
        }
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
    MPI_OK(MPI_T_finalize());
    MPI_OK(MPI_Finalize());
    return finish("mpit_threads");
}
