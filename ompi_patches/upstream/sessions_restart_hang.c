/* MPI started again after its end, with MPI sessions: Open MPI 5.0.7 hangs
 * about 1 run in 100 (README.md here says how it was seen).  No SPC, no
 * counters: two rounds of MPI_Session_init, a communicator from
 * mpi://WORLD, ten messages from rank 0 to the last rank (to itself when
 * alone), MPI_T_init_thread and MPI_T_finalize around them (without them the
 * hang was not seen in 350 runs), MPI_Session_finalize.
 *
 * build: mpicc -o sessions_restart_hang sessions_restart_hang.c
 * run:   for i in $(seq 100); do timeout 20 mpirun -np 2 ./sessions_restart_hang >/dev/null 2>&1 \
 *            || echo "run $i: exit $?"; done        (exit 124: hung; -np 1 as well) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define OK(call)                                                                                   \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (MPI_SUCCESS != rc_) {                                                                  \
            fprintf(stderr, "%s: %d\n", #call, rc_);                                             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void round_of_messages(int round)
{
    MPI_Session session;
    MPI_Group group;
    MPI_Comm comm;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    OK(MPI_Group_from_session_pset(session, "mpi://WORLD", &group));
    OK(MPI_Comm_create_from_group(group, "sessions_restart_hang", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    OK(MPI_Group_free(&group));
    int rank, size, provided, sent[3] = {0}, received[3];
    OK(MPI_Comm_rank(comm, &rank));
    OK(MPI_Comm_size(comm, &size));
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    for (int i = 0; i < 10; ++i) {
        MPI_Request request = MPI_REQUEST_NULL;
        if (size - 1 == rank) {
            OK(MPI_Irecv(received, 3, MPI_INT, 0, i, comm, &request));
        }
        if (0 == rank) {
            OK(MPI_Send(sent, 3, MPI_INT, size - 1, i, comm));
        }
        OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    }
    OK(MPI_T_finalize());
    OK(MPI_Comm_free(&comm));
    OK(MPI_Session_finalize(&session));
    fprintf(stderr, "rank %d: round %d done\n", rank, round);
}

int main(void)
{
    round_of_messages(1);
    round_of_messages(2);  /* MPI again after its end: here it hangs */
    return 0;
}
