/* oos_level_test.c: 2 ranks, 4 threads each, paired by tag, each 20 rounds
 * of 128 Irecv and 128 Isend of SIZE bytes both ways on MPI_COMM_WORLD
 * (threads sending to one peer at once make messages arrive out of
 * sequence).  Once every message is received, none is held out of
 * sequence: OOS_IN_QUEUE is 0.  Build with mpicc -pthread, run with
 * mpirun -np 2 ./oos_level_test SIZE (64: eager, 16384: rendezvous). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 4, WINDOW = 128, ROUNDS = 20 };
static int peer, size;

static int pvar_index(const char *name)
{
    int num, i;
    MPI_T_pvar_get_num(&num);
    for (i = 0; i < num; i++) {
        char n[256], d[1024];
        int nl = sizeof n, dl = sizeof d, verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (MPI_SUCCESS == MPI_T_pvar_get_info(i, n, &nl, &verb, &cls, &dt, &et, d, &dl, &bind, &ro,
                                               &cont, &atomic) && 0 == strcmp(n, name))
            return i;
    }
    return -1;
}

static void *pair(void *arg)
{
    int tag = (int)(long)arg, r, i;
    char *out = calloc(WINDOW, size), *in = calloc(WINDOW, size);
    MPI_Request req[2 * WINDOW];
    for (r = 0; r < ROUNDS; r++) {
        for (i = 0; i < WINDOW; i++)
            MPI_Irecv(in + (size_t)i * size, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[i]);
        for (i = 0; i < WINDOW; i++)
            MPI_Isend(out + (size_t)i * size, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[WINDOW + i]);
        MPI_Waitall(2 * WINDOW, req, MPI_STATUSES_IGNORE);
    }
    free(out);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *names[3] = {"runtime_spc_OMPI_SPC_OUT_OF_SEQUENCE", "runtime_spc_OMPI_SPC_OOS_IN_QUEUE",
                            "runtime_spc_OMPI_SPC_MAX_OOS_IN_QUEUE"};
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle[3];
    unsigned long long value[3];
    pthread_t thread[THREADS];
    int provided, rank, count, i;

    size = argc > 1 ? atoi(argv[1]) : 64;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    MPI_T_pvar_session_create(&session);
    for (i = 0; i < 3; i++) {
        MPI_T_pvar_handle_alloc(session, pvar_index(names[i]), NULL, &handle[i], &count);
        MPI_T_pvar_start(session, handle[i]);
    }
    for (i = 0; i < THREADS; i++) pthread_create(&thread[i], NULL, pair, (void *)(long)(100 + i));
    for (i = 0; i < THREADS; i++) pthread_join(thread[i], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < 3; i++) MPI_T_pvar_read(session, handle[i], &value[i]);
    printf("rank %d, %d-byte messages: OUT_OF_SEQUENCE %llu of %d, OOS_IN_QUEUE %lld (predicted 0), "
           "MAX_OOS_IN_QUEUE %llu (predicted >= 1 if any)\n", rank, size, value[0],
           THREADS * WINDOW * ROUNDS, (long long)value[1], value[2]);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
