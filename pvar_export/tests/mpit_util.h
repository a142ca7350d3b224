/* Checks for the MPI tests: each failed CHECK prints the rank and line and
 * counts; finish() turns the count into the exit status.  A test told the
 * job's PML predicts which counters it offers (pml_offers). */
#ifndef MPIT_UTIL_H
#define MPIT_UTIL_H

#include "spc/spc.h"
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

/* The job's PML, as the test's command line names it: the prediction
 * follows what the test is told, never what the library reports. */
static const char *test_pml __attribute__((unused)) = "ob1";

/* Takes the job's PML from argv[1], ob1 if there is none; a word that
 * names no PML ends the job, so a typo cannot check the wrong prediction. */
static inline void take_pml_argument(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "ob1") != 0 && strcmp(argv[1], "ucx") != 0 &&
                     strcmp(argv[1], "cm") != 0)) {
        spc_client_die("usage: %s [PML, the job's: ob1 (default), ucx or cm]", argv[0]);
    }
    if (argc == 2) {
        test_pml = argv[1];
    }
}

/* The same from a last "--pml PML" of a test with arguments of its own
 * (argc loses the two). */
static inline void take_pml_option(int *argc, char **argv)
{
    if (*argc >= 3 && strcmp(argv[*argc - 2], "--pml") == 0) {
        char *pml_argv[] = {argv[0], argv[*argc - 1]};
        take_pml_argument(2, pml_argv);
        *argc -= 2;
    }
}

/* Whether the job's PML counts counter name (without OMPI_SPC_): ob1 all;
 * ucx none of ob1's queues, their order, its match timers or RDMA bytes,
 * which UCX keeps to itself; cm not UNEXPECTED either, which no MTL is
 * asked.  ompi_spc_pmls.def restated on purpose: the test predicts what
 * the library should say, it does not ask the library. */
static inline bool pml_counts(const char *name)
{
    static const char *const ob1_only[] = {"OUT_OF_SEQUENCE", "MATCH_TIME", "OOS_MATCH_TIME",
                                           "UNEXPECTED_IN_QUEUE", "OOS_IN_QUEUE",
                                           "MAX_UNEXPECTED_IN_QUEUE", "MAX_OOS_IN_QUEUE",
                                           "BYTES_PUT", "BYTES_GET"};
    if (strcmp(test_pml, "ob1") == 0) {
        return true;
    }
    if (strcmp(test_pml, "cm") == 0 && strcmp(name, "UNEXPECTED") == 0) {
        return false;
    }
    for (size_t i = 0; i < sizeof ob1_only / sizeof ob1_only[0]; ++i) {
        if (strcmp(name, ob1_only[i]) == 0) {
            return false;
        }
    }
    return true;
}

/* MPI_T's class of a catalogue kind. */
static inline int pvar_class_of(spc_kind kind)
{
    switch (kind) {
    case SPC_KIND_AGGREGATE:
        return MPI_T_PVAR_CLASS_AGGREGATE;
    case SPC_KIND_TIMER:
        return MPI_T_PVAR_CLASS_TIMER;
    case SPC_KIND_LEVEL:
        return MPI_T_PVAR_CLASS_LEVEL;
    case SPC_KIND_HIGHWATERMARK:
        return MPI_T_PVAR_CLASS_HIGHWATERMARK;
    case SPC_KIND_COUNTER:
        break;
    }
    return MPI_T_PVAR_CLASS_COUNTER;
}

/* Checks that counter name has MPI_T variables, process-wide and (where
 * the catalogue has one) bound to a communicator, exactly when the job's
 * PML counts it: else MPI_T_pvar_get_index answers MPI_T_ERR_INVALID_NAME.
 * It answers that for a wrong class too, so the question names the
 * counter's own class, and under ob1 the same question must find them
 * (the control).  Returns whether the counter is predicted and there: a
 * test reads only those. */
static inline bool pml_offers(const char *name)
{
    const int id = spc_counter_find(name);
    if (id < 0) {
        spc_client_die("%s is not a counter of the catalogue", name);
    }
    const int var_class = pvar_class_of(spc_counter_infos[id].kind);
    const bool counted = pml_counts(name);
    bool offered = true;
    const char *const prefixes[] = {SPC_PVAR_PREFIX, SPC_COMM_PVAR_PREFIX};
    for (int bound = 0; bound <= (spc_comm_counter_find(name) >= 0); ++bound) {
        char full[256];
        int index;
        snprintf(full, sizeof full, "%s" SPC_COUNTER_PREFIX "%s", prefixes[bound], name);
        const int rc = MPI_T_pvar_get_index(full, var_class, &index);
        CHECK(rc == (counted ? MPI_SUCCESS : MPI_T_ERR_INVALID_NAME),
              "%s under pml %s: MPI_T_pvar_get_index answered %d, expected %s", full, test_pml, rc,
              counted ? "MPI_SUCCESS" : "MPI_T_ERR_INVALID_NAME");
        offered = offered && rc == MPI_SUCCESS;
    }
    return counted && offered;
}

/* MPI_T, then MPI, on exactly ranks ranks (else the job ends): this
 * rank's number, which failures are printed with. */
static inline int start_mpi_t_and_mpi(int *argc, char ***argv, int ranks)
{
    int provided, rank, size;
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_OK(MPI_Init(argc, argv));
    MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    test_rank = rank;
    if (size != ranks) {
        spc_client_die("run on %d ranks, not %d", ranks, size);
    }
    return rank;
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
