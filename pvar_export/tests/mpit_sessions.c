/* SPC with MPI sessions alone (Open MPI 5.0, the patch
 * "mpit: MPI_T and SPC from the first init to the last finalize"): no MPI_Init, so SPC starts in
 * MPI_Session_init and ends in the last MPI_Session_finalize.  Two ranks,
 * two sessions at once: rank 0 sends, rank 1 receives, over the first
 * session's communicator, then over the second's, and MPI_T reads exactly
 * the calls and bytes of each round.  Finalizing the second session writes
 * no report (MPI goes on in the first); finalizing the first does.  The
 * report of a process without MPI_COMM_WORLD is its own: the CSV given as
 * argv[1] with ".rank<r>" before ".csv", counting both rounds.
 *
 * Not tested: MPI started again after its end.  Open MPI 5.0.7 itself hangs
 * there about 1 run in 100, without SPC (docs/open-mpi.md).
 *
 * usage: mpirun -np 2 --mca mpi_spc_attach SEND,RECV --mca mpi_spc_dump_enabled true \
 *            --mca mpi_spc_dump_file DIR/sessions.csv mpit_sessions DIR/sessions.csv */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpit_util.h"

enum { FIRST_ROUND = 10, SECOND_ROUND = 7, INTS = 3 };

static MPI_Comm world_of(MPI_Session session)
{
    MPI_Group group;
    MPI_Comm comm;
    MPI_OK(MPI_Group_from_session_pset(session, "mpi://WORLD", &group));
    MPI_OK(MPI_Comm_create_from_group(group, "ompi-spc.mpit_sessions", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                      &comm));
    MPI_OK(MPI_Group_free(&group));
    return comm;
}

/* rank 0 sends messages of INTS ints to rank 1; both read their counters */
static void round_of(MPI_Comm comm, int messages)
{
    int provided, rank;
    MPI_OK(MPI_Comm_rank(comm, &rank));
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_T_pvar_session pvars;
    MPI_OK(MPI_T_pvar_session_create(&pvars));
    MPI_T_pvar_handle calls = started_handle(pvars, 0 == rank ? "SEND" : "RECV");
    MPI_T_pvar_handle bytes = started_handle(pvars, 0 == rank ? "BYTES_SENT_USER" : "BYTES_RECEIVED_USER");
    int payload[INTS] = {0};
    for (int i = 0; i < messages; ++i) {
        if (0 == rank) {
            MPI_OK(MPI_Send(payload, INTS, MPI_INT, 1, i, comm));
        } else {
            MPI_OK(MPI_Recv(payload, INTS, MPI_INT, 0, i, comm, MPI_STATUS_IGNORE));
        }
    }
    CHECK_EQ_U64(read_handle(pvars, calls), messages, 0 == rank ? "SEND" : "RECV");
    CHECK_EQ_U64(read_handle(pvars, bytes), (unsigned long long)messages * sizeof payload,
                 0 == rank ? "BYTES_SENT_USER" : "BYTES_RECEIVED_USER");
    MPI_OK(MPI_T_pvar_handle_free(pvars, &calls));
    MPI_OK(MPI_T_pvar_handle_free(pvars, &bytes));
    MPI_OK(MPI_T_pvar_session_free(&pvars));
    MPI_OK(MPI_T_finalize());
}

/* value of counter in the report's CSV at path, -1 if it has no such row */
static long long csv_value(const char *path, int rank, const char *counter)
{
    FILE *csv = fopen(path, "r");
    if (NULL == csv) {
        return -1;
    }
    char line[512], wanted[128];
    snprintf(wanted, sizeof wanted, "%d,%s%s,", rank, SPC_COUNTER_PREFIX, counter);
    long long value = -1;
    while (fgets(line, sizeof line, csv)) {
        if (0 == strncmp(line, wanted, strlen(wanted))) {
            value = atoll(line + strlen(wanted));
        }
    }
    fclose(csv);
    return value;
}

static void check_report(const char *path, int rank, long long sends)
{
    const char *counter = 0 == rank ? "SEND" : "RECV";
    long long value = csv_value(path, rank, counter);
    CHECK(value == sends, "%s: %s is %lld, expected %lld", path, counter, value, sends);
}

int main(int argc, char **argv)
{
    if (argc != 2 || strlen(argv[1]) < 5 || 0 != strcmp(argv[1] + strlen(argv[1]) - 4, ".csv")) {
        fprintf(stderr, "usage: mpit_sessions DIR/NAME.csv (the mpi_spc_dump_file)\n");
        return 2;
    }
    MPI_Session session, second;
    MPI_OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    MPI_Comm comm = world_of(session);
    MPI_OK(MPI_Comm_rank(comm, &test_rank));
    char own_csv[4096];
    snprintf(own_csv, sizeof own_csv, "%.*s.rank%d.csv", (int)strlen(argv[1]) - 4, argv[1], test_rank);

    round_of(comm, FIRST_ROUND);
    MPI_OK(MPI_Comm_free(&comm));

    /* a second session while the first is open: no second start, and its
     * end is not MPI's end */
    MPI_OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &second));
    comm = world_of(second);
    round_of(comm, SECOND_ROUND);
    MPI_OK(MPI_Comm_free(&comm));
    unlink(own_csv);  /* the report writes it in the last finalize */
    MPI_OK(MPI_Session_finalize(&second));
    CHECK(0 != access(own_csv, F_OK), "%s written while a session is still open", own_csv);
    MPI_OK(MPI_Session_finalize(&session));
    check_report(own_csv, test_rank, FIRST_ROUND + SECOND_ROUND);
    return finish("mpit_sessions");
}
