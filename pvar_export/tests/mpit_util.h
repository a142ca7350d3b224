/* Checks for the MPI tests: each failed CHECK prints the rank and line and
 * counts; finish() turns the count into the exit status. */
#ifndef MPIT_UTIL_H
#define MPIT_UTIL_H

#include "spc_mpit_client.h"

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
