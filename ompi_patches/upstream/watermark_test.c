/* watermark_test.c: 2 ranks; rank 0 sends 10 messages (tag 1), then one
 * (tag 2), which rank 1 receives first, so that the 10 wait in its
 * unexpected queue together: UNEXPECTED_IN_QUEUE reaches 10, and so must
 * MAX_UNEXPECTED_IN_QUEUE.  Build with mpicc, run with mpirun -np 2. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    const char *names[2] = {"runtime_spc_OMPI_SPC_UNEXPECTED_IN_QUEUE",
                            "runtime_spc_OMPI_SPC_MAX_UNEXPECTED_IN_QUEUE"};
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle[2];
    unsigned long long level = 0, max = 0;
    int provided, rank, count, i;
    char buf[8] = {0};

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_T_pvar_session_create(&session);
    for (i = 0; i < 2; i++) {
        MPI_T_pvar_handle_alloc(session, pvar_index(names[i]), NULL, &handle[i], &count);
        MPI_T_pvar_start(session, handle[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        for (i = 0; i < 10; i++) MPI_Send(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Send(buf, 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
    } else {
        MPI_Recv(buf, 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_T_pvar_read(session, handle[0], &level);
        for (i = 0; i < 10; i++) MPI_Recv(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_T_pvar_read(session, handle[1], &max);
        printf("UNEXPECTED_IN_QUEUE with the 10 waiting: %llu (predicted 10)\n", level);
        printf("MAX_UNEXPECTED_IN_QUEUE once received:   %llu (predicted 10)\n", max);
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
