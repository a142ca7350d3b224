/*
 * MPI_T around MPI's whole life, as tools use it (issue 37), on 2 ranks.
 * The argument is the order of the calls, one letter each:
 *   T MPI_T_init_thread   t MPI_T_finalize
 *   I MPI_Init            J MPI_Init_thread (MPI_THREAD_MULTIPLE)   F MPI_Finalize
 *   S MPI_Session_init    s MPI_Session_finalize   (Open MPI 5.0)
 * e.g. TIFt: MPI_T started before MPI_Init and finalized after MPI_Finalize,
 * which crashed Open MPI 4.1.4 (open-mpi/ompi#11485).
 *
 * After every call the program does what a tool does at that point and
 * checks what it gets:
 *   - MPI_T answers (variable and category counts, the control variable
 *     mpi_spc_timer_sampling read as 1) while started, and
 *     MPI_T_ERR_NOT_INITIALIZED while not;
 *   - the SPC variables exist from MPI's start for as long as Open MPI
 *     keeps its variable system: until the end of MPI or of MPI_T,
 *     whichever comes last;
 *   - while MPI runs, rank 0 sends a few messages to rank 1 (sizes summed
 *     here); handles started on SEND/RECV and the user bytes read exactly
 *     the calls and bytes since their start, and after MPI_Finalize their
 *     final values;
 *   - a session, its handles and a control-variable handle kept past the
 *     last MPI_T_finalize are errors from then on, also once MPI_T is
 *     started again: never a crash.
 * The exit status says whether every check passed; the test runs each rank
 * under rank_status.sh and checks every rank's status.
 *
 * usage: mpirun -np 2 rank_status.sh DIR mpit_lifetime ORDER
 */
#include "mpit_util.h"

/* What the program knows of MPI and MPI_T, to predict each answer. */
static int tool_starts;             /* MPI_T_init_thread calls not yet finalized */
static bool world_running;          /* between MPI_Init and MPI_Finalize */
static int open_sessions;           /* MPI sessions not yet finalized */
static bool spc_variables;          /* the SPC variables are registered */
static MPI_Comm comm = MPI_COMM_NULL; /* where the messages go */
static int step_number;

/* The handles a tool keeps: on SEND (rank 0) or RECV (rank 1), and on the
 * user bytes, with what they must read; and on a control variable. */
static struct {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle calls, bytes;
    MPI_T_cvar_handle cvar;
    unsigned long long expected_calls, expected_bytes;
    bool live;  /* MPI_T has not ended since they were made */
    bool stale; /* kept past the last MPI_T_finalize */
} kept;

#if OMPI_MAJOR_VERSION >= 5 /* MPI sessions; 5.0 says MPI_VERSION 3 */
static MPI_Session mpi_session = MPI_SESSION_NULL;
#endif

static const char *calls_name(void) { return 0 == test_rank ? "SEND" : "RECV"; }
static const char *bytes_name(void) { return 0 == test_rank ? "BYTES_SENT_USER" : "BYTES_RECEIVED_USER"; }

/* A handle on the control variable mpi_spc_timer_sampling (1 unless set). */
static MPI_T_cvar_handle sampling_handle(void)
{
    int index, count;
    MPI_T_cvar_handle cvar;
    MPI_OK(MPI_T_cvar_get_index("mpi_spc_timer_sampling", &index));
    MPI_OK(MPI_T_cvar_handle_alloc(index, NULL, &cvar, &count));
    return cvar;
}

/* What MPI_T answers, started or not. */
static void check_queries(void)
{
    int num, rc;
    if (0 == tool_starts) {
        rc = MPI_T_pvar_get_num(&num);
        CHECK(MPI_T_ERR_NOT_INITIALIZED == rc, "MPI_T_pvar_get_num without MPI_T returned %d", rc);
        return;
    }
    MPI_OK(MPI_T_pvar_get_num(&num));
    MPI_OK(MPI_T_cvar_get_num(&num));
    MPI_OK(MPI_T_category_get_num(&num));
    int index, sampling = -1;
    MPI_T_cvar_handle cvar = sampling_handle();
    MPI_OK(MPI_T_cvar_read(cvar, &sampling));
    MPI_OK(MPI_T_cvar_handle_free(&cvar));
    CHECK(1 == sampling, "mpi_spc_timer_sampling reads %d", sampling);
    rc = MPI_T_pvar_get_index(SPC_PVAR_PREFIX SPC_COUNTER_PREFIX "SEND", MPI_T_PVAR_CLASS_COUNTER, &index);
    CHECK(rc == (spc_variables ? MPI_SUCCESS : MPI_T_ERR_INVALID_NAME),
          "the SEND variable %s, but MPI_T_pvar_get_index returned %d",
          spc_variables ? "should exist" : "should not exist", rc);
}

/* Rank 0 sends step_number + 2 messages to rank 1, of sizes it sums. */
static void exchange(void)
{
    if (MPI_COMM_NULL == comm) {
        return;
    }
    static char buffer[4096];
    unsigned long long calls = 0, bytes = 0;
    for (int i = 0; i < step_number + 2; ++i) {
        int size = 100 * step_number + 7 * i;
        if (0 == test_rank) {
            MPI_OK(MPI_Send(buffer, size, MPI_CHAR, 1, i, comm));
        } else if (1 == test_rank) {
            MPI_OK(MPI_Recv(buffer, size, MPI_CHAR, 0, i, comm, MPI_STATUS_IGNORE));
        }
        ++calls;
        bytes += (unsigned long long)size;
    }
    if (kept.live) {
        kept.expected_calls += calls;
        kept.expected_bytes += bytes;
    }
}

/* The kept handles read exactly; made while MPI runs (after MPI_Finalize a
 * start is refused: nothing counts any more). */
static void check_handles(void)
{
    if (!kept.live && !kept.stale && tool_starts > 0 && spc_variables && MPI_COMM_NULL != comm) {
        MPI_OK(MPI_T_pvar_session_create(&kept.session));
        kept.calls = started_handle(kept.session, calls_name());
        kept.bytes = started_handle(kept.session, bytes_name());
        kept.cvar = sampling_handle();
        kept.expected_calls = kept.expected_bytes = 0;
        kept.live = true;
    }
    exchange();
    if (kept.live) {
        CHECK_EQ_U64(read_handle(kept.session, kept.calls), kept.expected_calls, calls_name());
        CHECK_EQ_U64(read_handle(kept.session, kept.bytes), kept.expected_bytes, bytes_name());
    }
}

/* Bad input: the session and handle of an MPI_T that has ended. */
static void check_stale(void)
{
    if (!kept.stale) {
        return;
    }
    unsigned long long value;
    int rc = MPI_T_pvar_read(kept.session, kept.calls, &value);
    int expected = 0 == tool_starts ? MPI_T_ERR_NOT_INITIALIZED : MPI_T_ERR_INVALID_SESSION;
    CHECK(expected == rc, "a read of a handle of an ended MPI_T returned %d, expected %d", rc, expected);
    rc = MPI_T_pvar_start(kept.session, kept.bytes);
    CHECK(expected == rc, "a start of a handle of an ended MPI_T returned %d, expected %d", rc, expected);
    MPI_T_pvar_handle handle = kept.bytes;
    rc = MPI_T_pvar_handle_free(kept.session, &handle);
    CHECK(expected == rc, "freeing a handle of an ended MPI_T returned %d, expected %d", rc, expected);
    MPI_T_pvar_session session = kept.session;
    rc = MPI_T_pvar_session_free(&session);
    CHECK(expected == rc, "freeing a session of an ended MPI_T returned %d, expected %d", rc, expected);
    expected = 0 == tool_starts ? MPI_T_ERR_NOT_INITIALIZED : MPI_T_ERR_INVALID_HANDLE;
    int sampling;
    rc = MPI_T_cvar_read(kept.cvar, &sampling);
    CHECK(expected == rc, "a read of a control-variable handle of an ended MPI_T returned %d, expected %d",
          rc, expected);
    MPI_T_cvar_handle cvar = kept.cvar;
    rc = MPI_T_cvar_handle_free(&cvar);
    CHECK(expected == rc, "freeing a control-variable handle of an ended MPI_T returned %d, expected %d",
          rc, expected);
}

static void start_world(int rc)
{
    MPI_OK(rc);
    world_running = spc_variables = true;
    comm = MPI_COMM_WORLD;
    MPI_OK(MPI_Comm_rank(comm, &test_rank));
}

/* MPI's variables go with OPAL's, when neither MPI nor MPI_T holds it. */
static void after_an_end(void)
{
    if (!world_running && 0 == open_sessions && 0 == tool_starts) {
        spc_variables = false;
    }
}

static void run_step(char step)
{
    int provided;
    switch (step) {
    case 'T':
        MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
        ++tool_starts;
        break;
    case 't':
        MPI_OK(MPI_T_finalize());
        if (0 == --tool_starts && kept.live) {
            kept.live = false;
            kept.stale = true;
        }
        after_an_end();
        break;
    case 'I': start_world(MPI_Init(NULL, NULL)); break;
    case 'J':
        start_world(MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided));
        break;
    case 'F':
        MPI_OK(MPI_Finalize());
        world_running = false;
        comm = MPI_COMM_NULL;
        after_an_end();
        break;
#if OMPI_MAJOR_VERSION >= 5
    case 'S': {
        MPI_Group group;
        MPI_OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &mpi_session));
        MPI_OK(MPI_Group_from_session_pset(mpi_session, "mpi://WORLD", &group));
        MPI_OK(MPI_Comm_create_from_group(group, "ompi-spc.mpit_lifetime", MPI_INFO_NULL,
                                          MPI_ERRORS_RETURN, &comm));
        MPI_OK(MPI_Group_free(&group));
        MPI_OK(MPI_Comm_rank(comm, &test_rank));
        ++open_sessions;
        spc_variables = true;
        break;
    }
    case 's':
        MPI_OK(MPI_Comm_free(&comm));
        MPI_OK(MPI_Session_finalize(&mpi_session));
        --open_sessions;
        after_an_end();
        break;
#endif
    default:
        spc_client_die("unknown step '%c' (T t I J F"
#if OMPI_MAJOR_VERSION >= 5
                       " S s"
#endif
                       ")", step);
    }
}

int main(int argc, char **argv)
{
    if (2 != argc) {
        fprintf(stderr, "usage: mpit_lifetime ORDER (e.g. TIFt)\n");
        return 2;
    }
    const char *order = argv[1];
    for (step_number = 0; order[step_number]; ++step_number) {
        int failures = test_failures;
        run_step(order[step_number]);
        check_queries();
        check_handles();
        check_stale();
        printf("rank %d: %.*s[%c]%s: %s\n", test_rank, step_number, order, order[step_number],
               order + step_number + 1, failures == test_failures ? "ok" : "FAILED");
        fflush(stdout);
    }
    if (0 == tool_starts) {
        int rc = MPI_T_finalize();
        CHECK(MPI_T_ERR_NOT_INITIALIZED == rc, "MPI_T_finalize once too often returned %d", rc);
    }
    return finish("mpit_lifetime");
}
