/*
 * Traffic whose communication matrix is known, for check_matrix.py, which
 * runs it on 4 ranks with the finalize report's matrix on and predicts
 * every cell.  One pattern a run:
 *
 *   bcast  BCASTS broadcasts of BCAST_BYTES from rank 0 on MPI_COMM_WORLD
 *          (with coll tuned's linear broadcast forced, rank 0 sends each
 *          peer one internal message a broadcast), then USER_SENDS user
 *          messages of USER_BYTES from rank 0 to rank 1;
 *   ring   rank r sends r + 1 messages of 8 (r + 1) bytes to rank r + 1
 *          (mod size) and receives from rank r - 1;
 *   split  MPI_COMM_WORLD split by rank parity, ranks in reverse order, so
 *          that a rank of the split is not the world's: each rank sends
 *          SPLIT_SENDS messages of SPLIT_BYTES to the next rank of its
 *          split (mod its size), whose matrix cells are in world ranks;
 *          the split is freed before MPI_Finalize.
 *
 * No other call communicates between MPI_Init and MPI_Finalize.
 *
 * usage: comm_matrix bcast|ring|split
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { BCASTS = 10, BCAST_BYTES = 64, USER_SENDS = 5, USER_BYTES = 16, SPLIT_SENDS = 3, SPLIT_BYTES = 100 };

/* count messages of bytes bytes each to next and from previous on comm */
static void exchange(MPI_Comm comm, int next, int previous, int count, int bytes)
{
    char out[1024] = {0}, in[1024];
    MPI_Request requests[2];
    for (int i = 0; i < count; ++i) {
        MPI_Irecv(in, bytes, MPI_BYTE, previous, i, comm, &requests[0]);
        MPI_Isend(out, bytes, MPI_BYTE, next, i, comm, &requests[1]);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *pattern = argc == 2 ? argv[1] : "";
    if (0 == strcmp(pattern, "bcast")) {
        char data[BCAST_BYTES] = {0};
        for (int i = 0; i < BCASTS; ++i) {
            MPI_Bcast(data, BCAST_BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
        }
        for (int i = 0; i < USER_SENDS && size > 1; ++i) {
            if (0 == rank) {
                MPI_Send(data, USER_BYTES, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
            } else if (1 == rank) {
                MPI_Recv(data, USER_BYTES, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
    } else if (0 == strcmp(pattern, "ring")) {
        /* rank r receives what rank r - 1 sends: r messages of 8 r bytes (rank 0: size's) */
        const int previous = (rank + size - 1) % size, next = (rank + 1) % size;
        char out[1024] = {0}, in[1024];
        MPI_Request requests[2 * 1024 / 8];
        int n = 0;
        for (int i = 0; i < previous + 1; ++i) {
            MPI_Irecv(in, 8 * (previous + 1), MPI_BYTE, previous, i, MPI_COMM_WORLD, &requests[n++]);
        }
        for (int i = 0; i < rank + 1; ++i) {
            MPI_Isend(out, 8 * (rank + 1), MPI_BYTE, next, i, MPI_COMM_WORLD, &requests[n++]);
        }
        MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
    } else if (0 == strcmp(pattern, "split")) {
        MPI_Comm split;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split);
        int split_rank, split_size;
        MPI_Comm_rank(split, &split_rank);
        MPI_Comm_size(split, &split_size);
        exchange(split, (split_rank + 1) % split_size, (split_rank + split_size - 1) % split_size, SPLIT_SENDS,
                 SPLIT_BYTES);
        MPI_Comm_free(&split);
    } else {
        if (0 == rank) {
            fprintf(stderr, "usage: comm_matrix bcast|ring|split\n");
        }
        MPI_Finalize();
        return 2;
    }
    MPI_Finalize();
    return 0;
}
