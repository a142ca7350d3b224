/* Checks for the MPI tests: each failed CHECK prints the rank and line and
 * counts; finish() turns the count into the exit status. */
#ifndef MPIT_UTIL_H
#define MPIT_UTIL_H

#include "spc/spc_mpit_client.h"

static int test_rank = -1;
static int test_failures = 0;

#define CHECK(condition, ...)                                                   \
    do {                                                                        \
        if (!(condition)) {                                                     \
            fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed: ", test_rank,    \
                    __FILE__, __LINE__, #condition);                            \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            ++test_failures;                                                    \
        }                                                                       \
    } while (0)

#define CHECK_EQ_U64(actual, expected, what)                                    \
    CHECK((unsigned long long)(actual) == (unsigned long long)(expected),       \
          "%s: got %llu, expected %llu", what, (unsigned long long)(actual),    \
          (unsigned long long)(expected))

/* A started handle on counter name in session. */
static inline MPI_T_pvar_handle started_handle(MPI_T_pvar_session session, const char *name)
{
    MPI_T_pvar_handle handle;
    int count;
    MPI_OK(MPI_T_pvar_handle_alloc(session, spc_pvar(name), NULL, &handle, &count));
    CHECK(count == 1, "%s: count %d", name, count);
    MPI_OK(MPI_T_pvar_start(session, handle));
    return handle;
}

/* MPI_T index of variable prefix + OMPI_SPC_ + name; dies if there is none. */
static inline int spc_pvar_named(const char *prefix, const char *name)
{
    char wanted[256];
    snprintf(wanted, sizeof wanted, "%s" SPC_COUNTER_PREFIX "%s", prefix, name);
    int num;
    MPI_OK(MPI_T_pvar_get_num(&num));
    for (int index = 0; index < num; ++index) {
        char found[256];
        int found_len = sizeof found, verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS == MPI_T_pvar_get_info(index, found, &found_len, &verbosity, &var_class,
                                               &datatype, &enumtype, NULL, NULL, &bind, &readonly,
                                               &continuous, &atomic) &&
            0 == strcmp(found, wanted)) {
            return index;
        }
    }
    spc_client_die("no performance variable %s", wanted);
}

/* The variable of counter name (without OMPI_SPC_) bound to a communicator. */
static inline int spc_comm_pvar(const char *name) { return spc_pvar_named(SPC_COMM_PVAR_PREFIX, name); }

/* A started handle on variable name bound to communicator comm, whose
 * count must be expected_count (1, or the size for a per-peer array). */
static inline MPI_T_pvar_handle started_comm_array(MPI_T_pvar_session session, const char *name,
                                                   MPI_Comm comm, int expected_count)
{
    MPI_T_pvar_handle handle;
    int count;
    MPI_OK(MPI_T_pvar_handle_alloc(session, spc_comm_pvar(name), &comm, &handle, &count));
    CHECK(count == expected_count, "%s bound to a communicator: count %d, expected %d", name,
          count, expected_count);
    MPI_OK(MPI_T_pvar_start(session, handle));
    return handle;
}

static inline MPI_T_pvar_handle started_comm_handle(MPI_T_pvar_session session, const char *name,
                                                    MPI_Comm comm)
{
    return started_comm_array(session, name, comm, 1);
}

/* A started handle on the process-wide message-size histogram name, whose
 * count must be bins. */
static inline MPI_T_pvar_handle started_histogram(MPI_T_pvar_session session, const char *name, int bins)
{
    MPI_T_pvar_handle handle;
    int count = 0;
    MPI_OK(MPI_T_pvar_handle_alloc(session, spc_pvar_named(SPC_HISTOGRAM_PVAR_PREFIX, name), NULL, &handle,
                                   &count));
    CHECK(count == bins, "%s: count %d, expected %d", name, count, bins);
    MPI_OK(MPI_T_pvar_start(session, handle));
    return handle;
}

static inline unsigned long long read_handle(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    unsigned long long value = 0;
    MPI_OK(MPI_T_pvar_read(session, handle, &value));
    return value;
}

/* Ends the test: every rank's failures decide the exit code. */
static inline int finish(const char *name)
{
    if (test_failures == 0) {
        printf("rank %d: %s: all checks passed\n", test_rank, name);
    }
    return test_failures == 0 ? 0 : 1;
}

#endif
