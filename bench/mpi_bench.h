/*
 * What the MPI benchmarks (pairwise.c, ab_pingpong.c) share: option
 * parsing on top of getopt_long, MPI_T error checks, and finding SPC performance variables by name
 * in any build (ours, upstream 4.1.4, or one without SPC).
 */
#ifndef MPI_BENCH_H
#define MPI_BENCH_H

#include <getopt.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPC_PVAR_PREFIX "runtime_spc_OMPI_SPC_"

/* Exit statuses of the MPI benchmarks; the study drivers read these lines
 * (one "BENCH_EXIT_<NAME> = <n>," each) instead of keeping their own copy. */
enum bench_exit {
    BENCH_EXIT_OK = 0,
    BENCH_EXIT_USAGE = 2,
    BENCH_EXIT_CHECK_FAILED = 3,
    BENCH_EXIT_NOT_APPLICABLE = 4,
};

/* Parses a whole decimal number in [low, high]; writes the reason otherwise. */
static inline bool parse_int(const char *option, const char *text, long low, long high, int *out,
                             char *error, size_t error_len)
{
    if (NULL == text) {
        snprintf(error, error_len, "%s needs a value", option);
        return false;
    }
    char *end;
    long value = strtol(text, &end, 10);
    if (end == text || '\0' != *end || value < low || value > high) {
        snprintf(error, error_len, "%s must be a whole number from %ld to %ld, not '%s'", option,
                 low, high, text);
        return false;
    }
    *out = (int)value;
    return true;
}

/* getopt_long over argv with the caller's table (opterr off: the caller
 * prints the error, on rank 0 only); each option of the table goes to
 * apply(option, optarg, ...).  false with the reason in error, or "help". */
static inline bool parse_options_with(int argc, char **argv, const struct option *table,
                                      bool (*apply)(int option, const char *value, void *options,
                                                    char *error, size_t len),
                                      void *options, char *error, size_t len)
{
    opterr = 0;
    optind = 1;
    for (int option; -1 != (option = getopt_long(argc, argv, ":h", table, NULL));) {
        if ('h' == option) {
            snprintf(error, len, "help");
            return false;
        }
        if (':' == option) {
            snprintf(error, len, "%s needs a value", argv[optind - 1]);
            return false;
        }
        if ('?' == option) {
            snprintf(error, len, "unknown argument '%s'", argv[optind - 1]);
            return false;
        }
        if (!apply(option, optarg, options, error, len)) {
            return false;
        }
    }
    if (optind < argc) {
        snprintf(error, len, "unknown argument '%s'", argv[optind]);
        return false;
    }
    return true;
}

static inline void mpit_ok(int rc, const char *what)
{
    if (MPI_SUCCESS != rc) {
        fprintf(stderr, "%s failed with MPI_T error %d\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* A string control variable (an MCA parameter) into value, cut to size;
 * "" if the build has no such variable.  Open MPI 4.1.4 gives every string
 * the count 2048 (ompi/mpi/tool/cvar_handle_alloc.c:65) and strcpy's the
 * value into the buffer (cvar_read.c:85), so it is read into one that large. */
static inline void read_string_cvar(const char *name, char *value, size_t size)
{
    int index, count;
    MPI_T_cvar_handle handle;
    value[0] = '\0';
    if (MPI_SUCCESS == MPI_T_cvar_get_index(name, &index) &&
        MPI_SUCCESS == MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) {
        char *whole = calloc((size_t)count + 1, 1);
        if (NULL != whole && MPI_SUCCESS == MPI_T_cvar_read(handle, whole)) {
            snprintf(value, size, "%s", whole);
        }
        free(whole);
        MPI_T_cvar_handle_free(&handle);
    }
}

struct spc_pvar {
    const char *name; /* without the runtime_spc_OMPI_SPC_ prefix */
    int index, var_class, continuous;
};

/* Calls visit for every SPC performance variable, found by full name over
 * all variables because MPI_T_pvar_get_index also matches the class, which
 * differs between our build and upstream's.  Every SPC variable must be 64
 * bits wide, which the benchmarks read into unsigned long long. */
static inline void for_each_spc_pvar(void (*visit)(const struct spc_pvar *, void *), void *context)
{
    int num;
    mpit_ok(MPI_T_pvar_get_num(&num), "MPI_T_pvar_get_num");
    for (int index = 0; index < num; ++index) {
        char name[256], description[8];
        int name_len = sizeof name, desc_len = sizeof description, verbosity, var_class, bind,
            readonly, continuous, atomic, type_size;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS != MPI_T_pvar_get_info(index, name, &name_len, &verbosity, &var_class,
                                               &datatype, &enumtype, description, &desc_len,
                                               &bind, &readonly, &continuous, &atomic) ||
            0 != strncmp(name, SPC_PVAR_PREFIX, strlen(SPC_PVAR_PREFIX))) {
            continue;
        }
        MPI_Type_size(datatype, &type_size);
        if (8 != type_size) {
            fprintf(stderr, "%s is not a 64-bit variable\n", name);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        const struct spc_pvar pvar = {name + strlen(SPC_PVAR_PREFIX), index, var_class, continuous};
        visit(&pvar, context);
    }
}

/* Whether name is one of the comma-separated names in list. */
static inline bool in_list(const char *list, const char *name)
{
    const size_t length = strlen(name);
    for (const char *item = list; NULL != item; item = strchr(item, ',') ? strchr(item, ',') + 1 : NULL) {
        if (0 == strncmp(item, name, length) && (',' == item[length] || '\0' == item[length])) {
            return true;
        }
    }
    return false;
}

#endif
