/*
 * The MPI job the live tests read from outside (check_live.py): two ranks
 * exchange known numbers of messages in phases and, after each phase, hold
 * until the test says go, so that a reader can check exact values while
 * the job runs.
 *
 * usage: mpirun -np 2 live_job --phases N[,N...] [--threads T] [--size BYTES]
 *                              [--unexpected K] [--hold DIR] [--spread-ms MS]
 * Phase p: each of T threads per rank sends N messages of BYTES to the
 * other rank and receives N from it (rank 0 sends first; tag = thread), so
 * per rank SEND and RECV grow by T*N and the user bytes each way by
 * T*N*BYTES.  --unexpected K (needs --hold): before phase 0, rank 0 sends K
 * messages that rank 1 receives only in phase 1, so while held after phase
 * 0 rank 1's unexpected queue holds exactly K (its receive for a later
 * message was posted before they were sent).  --hold DIR: after phase p
 * each rank writes DIR/ready.<p>.<rank> (its pid) and waits for DIR/go.<p>.
 * --spread-ms MS: the sends of a phase are spread over MS milliseconds (for
 * spc-record).  Exit status 0, or 1 with a message.
 *
 * Where the ranks must meet they meet through files in DIR, never in MPI: a
 * barrier's message counts as UNEXPECTED if its receiver's progress takes it
 * in before the barrier's receive is posted (rank 1 still in MPI_Init's
 * last wait when rank 0's arrives, say), which only timing decides, so no
 * held UNEXPECTED could be predicted.  Without one, the only receives of a
 * phase of 0 messages are rank 1's K, each of a message that waited since
 * before the hold.
 */
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PHASES 8
#define UNEXPECTED_TAG 1000
#define FENCE_TAG 1001

static int rank, phases[MAX_PHASES], num_phases, threads = 1, size = 8, unexpected, spread_ms;
static const char *hold;

static void die(const char *message)
{
    fprintf(stderr, "live_job: rank %d: %s\n", rank, message);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void sleep_ms(long ms)
{
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
}

struct work {
    int tag, count;
};

static void *exchange(void *argument)
{
    const struct work *w = argument;
    char *buffer = calloc((size_t)size + 1, 1);
    const int peer = 1 - rank;
    for (int i = 0; i < 2 * w->count; ++i) {
        /* rank 0: N sends then N receives; rank 1 the other way round */
        const int sending = (i < w->count) == (rank == 0);
        if (sending) {
            MPI_Send(buffer, size, MPI_BYTE, peer, w->tag, MPI_COMM_WORLD);
        } else {
            MPI_Recv(buffer, size, MPI_BYTE, peer, w->tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (spread_ms > 0 && w->tag == 0 && i % 10 == 9) {
            sleep_ms(spread_ms * 10L / (2L * w->count));
        }
    }
    free(buffer);
    return NULL;
}

static void wait_for_go(int phase)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ready.%d.%d", hold, phase, rank);
    FILE *ready = fopen(path, "w");
    if (NULL == ready) {
        die("cannot write its ready file");
    }
    fprintf(ready, "%ld\n", (long)getpid());
    fclose(ready);
    snprintf(path, sizeof path, "%s/go.%d", hold, phase);
    for (int waited = 0; access(path, F_OK) != 0; waited += 10) {
        if (waited > 300000) {
            die("no go file after 300 s");
        }
        sleep_ms(10);
    }
}

/* Each rank writes DIR/<name>.<rank> and waits for the other's. */
static void meet(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%d", hold, name, rank);
    FILE *mine = fopen(path, "w");
    if (NULL == mine) {
        die("cannot write a file to meet the other rank");
    }
    fclose(mine);
    snprintf(path, sizeof path, "%s/%s.%d", hold, name, 1 - rank);
    for (int waited = 0; access(path, F_OK) != 0; waited += 10) {
        if (waited > 300000) {
            die("the other rank did not come in 300 s");
        }
        sleep_ms(10);
    }
}

static void parse(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (NULL == value) {
            die("every option takes a value");
        }
        if (0 == strcmp(argv[i], "--phases")) {
            for (char *p = strtok(strdup(value), ","); p && num_phases < MAX_PHASES; p = strtok(NULL, ",")) {
                phases[num_phases++] = atoi(p);
            }
        } else if (0 == strcmp(argv[i], "--threads")) {
            threads = atoi(value);
        } else if (0 == strcmp(argv[i], "--size")) {
            size = atoi(value);
        } else if (0 == strcmp(argv[i], "--unexpected")) {
            unexpected = atoi(value);
        } else if (0 == strcmp(argv[i], "--hold")) {
            hold = value;
        } else if (0 == strcmp(argv[i], "--spread-ms")) {
            spread_ms = atoi(value);
        } else {
            die("unknown option (see the comment at the top of live_job.c)");
        }
        ++i;
    }
    if (0 == num_phases || threads < 1 || threads > 64 || size < 0 || unexpected < 0 ||
        (unexpected > 0 && (num_phases < 2 || NULL == hold))) {
        die("--phases N[,N...] is needed; --threads 1 to 64; --unexpected needs two phases and --hold");
    }
}

int main(int argc, char **argv)
{
    int provided, ranks;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    parse(argc, argv);
    if (2 != ranks || (threads > 1 && provided < MPI_THREAD_MULTIPLE)) {
        die("needs 2 ranks (and MPI_THREAD_MULTIPLE for threads)");
    }
    char *parked = calloc((size_t)size + 1, 1);
    MPI_Request fence = MPI_REQUEST_NULL;
    if (unexpected > 0) {
        /* rank 1 posts the receive of the fence before rank 0 sends anything:
         * only the K messages before it can wait in the unexpected queue */
        if (1 == rank) {
            MPI_Irecv(parked, size, MPI_BYTE, 0, FENCE_TAG, MPI_COMM_WORLD, &fence);
        }
        meet("posted");
        if (0 == rank) {
            for (int i = 0; i < unexpected; ++i) {
                MPI_Send(parked, size, MPI_BYTE, 1, UNEXPECTED_TAG, MPI_COMM_WORLD);
            }
            MPI_Send(parked, size, MPI_BYTE, 1, FENCE_TAG, MPI_COMM_WORLD);
        } else {
            MPI_Wait(&fence, MPI_STATUS_IGNORE);
        }
    }
    for (int p = 0; p < num_phases; ++p) {
        if (1 == p && 1 == rank) {
            for (int i = 0; i < unexpected; ++i) {
                MPI_Recv(parked, size, MPI_BYTE, 0, UNEXPECTED_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        pthread_t ids[64];
        struct work work[64];
        for (int t = 0; t < threads; ++t) {
            work[t] = (struct work){t, phases[p]};
            if (0 != pthread_create(&ids[t], NULL, exchange, &work[t])) {
                die("cannot start a thread");
            }
        }
        for (int t = 0; t < threads; ++t) {
            pthread_join(ids[t], NULL);
        }
        if (NULL != hold) {
            wait_for_go(p);
        }
    }
    free(parked);
    MPI_Finalize();
    return 0;
}
