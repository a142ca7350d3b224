/* What every MPI program of ours that reads the counters through MPI_T needs
 * (tests, benchmarks, the demo): find an SPC variable by name in any build
 * (ours, upstream 4.1.4's, or one without SPC), check calls, die clearly. */
#ifndef SPC_MPIT_CLIENT_H
#define SPC_MPIT_CLIENT_H

#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "spc/names.h"

/* Prints "rank R: message" and ends the whole job. */
static inline void spc_client_die(const char *format, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void spc_client_die(const char *format, ...)
{
    int rank = -1, started = 0, finished = 0;
    MPI_Initialized(&started);
    MPI_Finalized(&finished);
    if (started && !finished) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    fprintf(stderr, "rank %d: ", rank);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    if (started && !finished) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    exit(2);
}

/* Dies unless an MPI or MPI_T call returned MPI_SUCCESS. */
#define MPI_OK(call)                                                                          \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        if (MPI_SUCCESS != rc_) {                                                             \
            spc_client_die("%s:%d: %s returned %d", __FILE__, __LINE__, #call, rc_);          \
        }                                                                                     \
    } while (0)

struct spc_pvar_info {
    const char *name; /* the counter's name, after the prefix searched for */
    int index, var_class, continuous;
};

/* Calls visit for every SPC performance variable whose name starts with
 * prefix (pvar->name is the rest).  Found by full name over
 * all variables, because MPI_T_pvar_get_index also matches the class, which
 * differs between our build and upstream's.  Every SPC variable must be 64
 * bits wide: callers read them into unsigned long long. */
static inline void spc_for_each_pvar_named(const char *prefix,
                                           void (*visit)(const struct spc_pvar_info *, void *),
                                           void *context)
{
    int num;
    MPI_OK(MPI_T_pvar_get_num(&num));
    for (int index = 0; index < num; ++index) {
        char name[256], description[8];
        int name_len = sizeof name, desc_len = sizeof description, verbosity, var_class, bind,
            readonly, continuous, atomic, type_size;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS != MPI_T_pvar_get_info(index, name, &name_len, &verbosity, &var_class,
                                               &datatype, &enumtype, description, &desc_len,
                                               &bind, &readonly, &continuous, &atomic) ||
            0 != strncmp(name, prefix, strlen(prefix))) {
            continue;
        }
        MPI_Type_size(datatype, &type_size);
        if (8 != type_size) {
            spc_client_die("%s is not a 64-bit variable", name);
        }
        const struct spc_pvar_info pvar = {name + strlen(prefix), index, var_class, continuous};
        visit(&pvar, context);
    }
}

/* The process-wide counters' variables (name without SPC_PVAR_PREFIX SPC_COUNTER_PREFIX). */
static inline void spc_for_each_pvar(void (*visit)(const struct spc_pvar_info *, void *), void *context)
{
    spc_for_each_pvar_named(SPC_PVAR_PREFIX SPC_COUNTER_PREFIX, visit, context);
}

struct spc_pvar_search_ {
    const char *name;
    int index;
};

static inline void spc_pvar_match_(const struct spc_pvar_info *pvar, void *context)
{
    struct spc_pvar_search_ *search = (struct spc_pvar_search_ *)context;
    if (0 == strcasecmp(pvar->name, search->name)) {
        search->index = pvar->index;
    }
}

/* MPI_T index of the SPC variable of counter name (without OMPI_SPC_), or -1. */
static inline int spc_pvar_find(const char *name)
{
    struct spc_pvar_search_ search = {name, -1};
    spc_for_each_pvar(spc_pvar_match_, &search);
    return search.index;
}

/* MPI_T index of the SPC variable of counter name; dies if there is none. */
static inline int spc_pvar(const char *name)
{
    int index = spc_pvar_find(name);
    if (index < 0) {
        spc_client_die("no performance variable " SPC_PVAR_PREFIX SPC_COUNTER_PREFIX "%s", name);
    }
    return index;
}

/* A string control variable (an MCA parameter) into value, cut to size;
 * "" if the build has no such variable.  Open MPI 4.1.4 gives every string
 * the count 2048 (ompi/mpi/tool/cvar_handle_alloc.c:65) and strcpy's the
 * value into the buffer (cvar_read.c:85), so it is read into one that large. */
static inline void spc_read_string_cvar(const char *name, char *value, size_t size)
{
    int index, count;
    MPI_T_cvar_handle handle;
    value[0] = '\0';
    if (MPI_SUCCESS == MPI_T_cvar_get_index(name, &index) &&
        MPI_SUCCESS == MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) {
        char *whole = (char *)calloc((size_t)count + 1, 1);
        if (NULL != whole && MPI_SUCCESS == MPI_T_cvar_read(handle, whole)) {
            snprintf(value, size, "%s", whole);
        }
        free(whole);
        MPI_T_cvar_handle_free(&handle);
    }
}

#endif
