/* Small helpers for the MPI_T tests: fail loudly with the rank and line. */
#ifndef MPIT_UTIL_H
#define MPIT_UTIL_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define MPI_OK(call)                                                            \
    do {                                                                        \
        int rc_ = (call);                                                       \
        if (rc_ != MPI_SUCCESS) {                                               \
            fprintf(stderr, "rank %d: %s:%d: %s returned %d\n", test_rank,      \
                    __FILE__, __LINE__, #call, rc_);                            \
            MPI_Abort(MPI_COMM_WORLD, 2);                                       \
        }                                                                       \
    } while (0)

/* MPI_T index of runtime_spc_OMPI_SPC_<name>; aborts if there is none. */
static inline int spc_pvar(const char *name)
{
    char full[256];
    int index;
    snprintf(full, sizeof full, "runtime_spc_OMPI_SPC_%s", name);
    if (MPI_T_pvar_get_index(full, MPI_T_PVAR_CLASS_GENERIC, &index) == MPI_SUCCESS) {
        return index;
    }
    /* get_index matches the class too: try each one SPC uses */
    const int classes[] = {MPI_T_PVAR_CLASS_COUNTER, MPI_T_PVAR_CLASS_AGGREGATE,
                           MPI_T_PVAR_CLASS_TIMER, MPI_T_PVAR_CLASS_LEVEL,
                           MPI_T_PVAR_CLASS_HIGHWATERMARK};
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; ++i) {
        if (MPI_T_pvar_get_index(full, classes[i], &index) == MPI_SUCCESS) {
            return index;
        }
    }
    fprintf(stderr, "rank %d: no performance variable %s\n", test_rank, full);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return -1;
}

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
