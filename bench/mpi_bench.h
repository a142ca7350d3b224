/* What the MPI benchmarks (pairwise.c, ab_pingpong.c) share beyond the MPI_T
 * client: exit statuses and option parsing on top of getopt_long. */
#ifndef MPI_BENCH_H
#define MPI_BENCH_H

#include <getopt.h>

#include "spc/spc_mpit_client.h"

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
