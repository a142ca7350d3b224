/*
 * In-process A/B of watching (bench_exporter.py "ab"): two ranks ping-pong
 * 1-byte messages in blocks; before each block rank 0 tells an outside
 * scraper, through a file, whether to scrape spc-exporter every 100 ms
 * during it ("watched": CONTROL/watched exists) or to stay idle ("quiet").
 * Blocks go watched, quiet, quiet, watched, ... (ABBA), so a drift of the
 * machine weighs on both alike; each block lasts long enough to hold
 * several scrapes.
 *
 * usage: mpirun -np 2 scrape_pingpong --control DIR [--blocks B] [--round-trips R]
 * Output (rank 0): one JSON line per block {"block", "watched", "one_way_ns"}.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, blocks = 40, round_trips = 500000;
    const char *control = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "--control")) {
            control = argv[i + 1];
        } else if (0 == strcmp(argv[i], "--blocks")) {
            blocks = atoi(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "--round-trips")) {
            round_trips = atoi(argv[i + 1]);
        }
    }
    if (2 != size || NULL == control || blocks < 2 || round_trips < 1) {
        if (0 == rank) {
            fprintf(stderr, "usage: mpirun -np 2 scrape_pingpong --control DIR [--blocks B] [--round-trips R]\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char flag[4096], byte = 0;
    snprintf(flag, sizeof flag, "%s/watched", control);
    for (int b = 0; b < blocks; ++b) {
        const int watched = 0 == b % 4 || 3 == b % 4;
        if (0 == rank) {
            if (watched) {
                FILE *f = fopen(flag, "w");
                if (NULL != f) {
                    fclose(f);
                }
            } else {
                unlink(flag);
            }
            /* the scraper looks every 100 ms: let it take the change */
            struct timespec settle = {0, 150 * 1000000L};
            while (nanosleep(&settle, &settle) != 0 && errno == EINTR) {
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        for (int i = 0; i < round_trips; ++i) {
            if (0 == rank) {
                MPI_Send(&byte, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&byte, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&byte, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&byte, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        const double seconds = MPI_Wtime() - start;
        if (0 == rank) {
            printf("{\"block\": %d, \"watched\": %s, \"one_way_ns\": %.3f}\n", b, watched ? "true" : "false",
                   seconds * 1e9 / (2.0 * round_trips));
            fflush(stdout);
        }
    }
    if (0 == rank) {
        unlink(flag);
    }
    MPI_Finalize();
    return 0;
}
