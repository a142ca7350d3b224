/*
 * Matched receives under pml cm and mtl ofi (v4.1.x-mtl-ofi-mrecv-acks-sync-send.patch):
 * rank 0 sends rank 1 four messages that rank 1 takes with MPI_Mprobe and
 * MPI_Mrecv: a standard send and a synchronous one of 8 ints, each once
 * into a contiguous buffer and once into every other int of a vector
 * datatype.  Each line says what arrived against what was sent.  Without
 * the patch, on 4.1.x, the first synchronous send never completes (run it
 * with a time limit), and a non-contiguous receive gets nothing.
 *
 * mpicc ofi_mrecv_test.c -o ofi_mrecv_test
 * timeout 30 mpirun -np 2 --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp ./ofi_mrecv_test
 */
#include <mpi.h>
#include <stdio.h>

enum { N = 8 };

int main(int argc, char **argv)
{
    int rank, failures = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Datatype every_other;
    MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    for (int synchronous = 0; synchronous < 2; ++synchronous) {
        for (int strided = 0; strided < 2; ++strided) {
            int sent[N], received[2 * N] = {0};
            for (int i = 0; i < N; ++i) {
                sent[i] = 100 * synchronous + 10 * strided + i + 1;
            }
            if (rank == 0) {
                (synchronous ? MPI_Ssend : MPI_Send)(sent, N, MPI_INT, 1, 0, MPI_COMM_WORLD);
                continue;
            }
            MPI_Message message;
            MPI_Mprobe(0, 0, MPI_COMM_WORLD, &message, MPI_STATUS_IGNORE);
            if (strided) {
                MPI_Mrecv(received, 1, every_other, &message, MPI_STATUS_IGNORE);
            } else {
                MPI_Mrecv(received, N, MPI_INT, &message, MPI_STATUS_IGNORE);
            }
            int wrong = 0;
            for (int i = 0; i < N; ++i) {
                wrong += received[strided ? 2 * i : i] != sent[i];
            }
            printf("%s send into a %s buffer: %d of %d ints wrong\n", synchronous ? "synchronous" : "standard",
                   strided ? "strided" : "contiguous", wrong, N);
            failures += 0 != wrong;
        }
    }
    MPI_Type_free(&every_other);
    MPI_Finalize();
    return failures ? 1 : 0;
}
