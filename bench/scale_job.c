/*
 * The job netpipe_runs/scale.py measures: every rank sends MESSAGES messages
 * of 1 KiB around a ring (to rank + 1, from rank - 1), so every counter that
 * counts traffic has counted, then writes DIR/ready.<rank> (its pid) and
 * waits for DIR/go before MPI_Finalize; after it, DIR/times.<rank> holds
 * how long MPI_Init and MPI_Finalize took, in nanoseconds.  Plain MPI, no
 * SPC call: the same binary runs on every build (swap the library, not the
 * program).
 *
 * usage: mpirun -np N scale_job DIR
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MESSAGES = 100, BYTES = 1024 };

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
    int rank, size;
    char path[4096], buffer[BYTES];
    const long long init_start = now_ns();
    MPI_Init(&argc, &argv);
    const long long init_ns = now_ns() - init_start;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (0 == rank) fprintf(stderr, "usage: mpirun -np N scale_job DIR\n");
        MPI_Finalize();
        return 2;
    }
    memset(buffer, rank & 0xff, sizeof buffer);
    for (int i = 0; i < MESSAGES; ++i) {
        MPI_Sendrecv_replace(buffer, BYTES, MPI_BYTE, (rank + 1) % size, i, (rank + size - 1) % size, i,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    snprintf(path, sizeof path, "%s/ready.%d", argv[1], rank);
    FILE *ready = fopen(path, "w");
    if (NULL == ready) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fprintf(ready, "%d\n", (int)getpid());
    fclose(ready);
    snprintf(path, sizeof path, "%s/go", argv[1]);
    const struct timespec tick = {0, 20 * 1000 * 1000};
    while (0 != access(path, F_OK)) {
        nanosleep(&tick, NULL);
    }
    const long long finalize_start = now_ns();
    MPI_Finalize();
    const long long finalize_ns = now_ns() - finalize_start;
    snprintf(path, sizeof path, "%s/times.%d", argv[1], rank);
    FILE *times = fopen(path, "w");
    if (NULL == times) {
        perror(path);
        return 1;
    }
    fprintf(times, "%lld %lld\n", init_ns, finalize_ns);
    return 0 == fclose(times) ? 0 : 1;
}
