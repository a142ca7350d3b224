/*
 * The MPI job of the cluster tests (check_cluster.py): P ranks on several
 * nodes send known numbers of messages around a ring in phases and, after
 * each phase, hold until the test says go, so that the exporters of the
 * nodes can be read (and killed, and the job cancelled) while it runs.
 *
 * usage: cluster_job --phases N[,N...] --hold DIR [--size BYTES]
 *        (under mpirun, or srun --mpi=pmix)
 * Phase p: rank r sends N*(r+1) messages of BYTES to rank (r+1) mod P and
 * receives N*(q+1) from rank q = (r-1) mod P, so that every rank's SEND
 * differs and the test can tell ranks (and nodes) apart by their sums
 * (one rank sends to itself).
 * After phase p each rank writes DIR/ready.<p>.<rank> ("pid host") and
 * waits for DIR/go.<p>, then all meet in a barrier.  The test reads the
 * rank from these files, which MPI_Comm_rank wrote: never from Slurm.
 * Exit status 0, or 1 with a message.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PHASES 8

static int rank, ranks, phases[MAX_PHASES], num_phases, size = 100;
static const char *hold;

static void die(const char *message)
{
    fprintf(stderr, "cluster_job: rank %d: %s\n", rank, message);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void sleep_ms(long ms)
{
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
}

/* One phase: all receives posted first, then the sends, so no order of
 * the ranks can deadlock. */
static void ring(int n)
{
    const int next = (rank + 1) % ranks, previous = (rank + ranks - 1) % ranks;
    const int sends = n * (rank + 1), receives = n * (previous + 1);
    char *in = calloc((size_t)receives * (size_t)size + 1, 1), *out = calloc((size_t)size + 1, 1);
    MPI_Request *requests = calloc((size_t)receives + 1, sizeof *requests);
    if (NULL == in || NULL == out || NULL == requests) {
        die("no memory");
    }
    for (int i = 0; i < receives; ++i) {
        MPI_Irecv(in + (size_t)i * (size_t)size, size, MPI_BYTE, previous, 0, MPI_COMM_WORLD, &requests[i]);
    }
    for (int i = 0; i < sends; ++i) {
        MPI_Send(out, size, MPI_BYTE, next, 0, MPI_COMM_WORLD);
    }
    MPI_Waitall(receives, requests, MPI_STATUSES_IGNORE);
    free(requests);
    free(out);
    free(in);
}

static void wait_for_go(int phase)
{
    char path[4096], host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(path, sizeof path, "%s/.ready.%d.%d", hold, phase, rank);
    FILE *ready = fopen(path, "w");
    if (NULL == ready) {
        die("cannot write its ready file");
    }
    fprintf(ready, "%ld %s\n", (long)getpid(), host);
    fclose(ready);
    char final[4096];
    snprintf(final, sizeof final, "%s/ready.%d.%d", hold, phase, rank);
    rename(path, final);  /* the test never reads half a line */
    snprintf(path, sizeof path, "%s/go.%d", hold, phase);
    for (int waited = 0; access(path, F_OK) != 0; waited += 10) {
        if (waited > 300000) {
            die("no go file after 300 s");
        }
        sleep_ms(10);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "--phases")) {
            for (char *p = strtok(strdup(argv[i + 1]), ","); p && num_phases < MAX_PHASES; p = strtok(NULL, ",")) {
                phases[num_phases++] = atoi(p);
            }
        } else if (0 == strcmp(argv[i], "--hold")) {
            hold = argv[i + 1];
        } else if (0 == strcmp(argv[i], "--size")) {
            size = atoi(argv[i + 1]);
        } else {
            die("unknown option (see the comment at the top of cluster_job.c)");
        }
    }
    if (0 == num_phases || NULL == hold || size < 0) {
        die("--phases N[,N...] and --hold DIR are needed");
    }
    for (int p = 0; p < num_phases; ++p) {
        ring(phases[p]);
        wait_for_go(p);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
