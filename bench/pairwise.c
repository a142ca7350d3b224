/*
 * The pairwise benchmark of the SPC paper (seed 004, section 6.1, Table 3):
 * T thread pairs over 2 ranks race for one communicator's sequence numbers,
 * and the counters say how many messages arrived out of sequence.
 *
 * usage: mpirun -np 2 pairwise [--threads T] [--window W] [--size S]
 *        [--iterations I] [--warmup N] [--no-ack] [--no-counters] [--all-exact]
 * The exact counts are the same under ob1, ucx and cm: calls in the MPI
 * layer, user bytes from each PML's send and receive sites, MPI's negative
 * tags apart; --all-exact makes a count without a variable fail, where
 * otherwise (upstream, a PML that would not count it) it is left unchecked.
 * Output (rank 0): one JSON line, then one line starting with "#" for humans;
 * exit status BENCH_EXIT_* (mpi_bench.h).
 */
/* pthread barriers are POSIX, not C11 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>

#include "mpi_bench.h"

struct options {
    int threads, window, size, iterations, warmup;
    bool ack, counters, all_exact;
};

/* ---- command line --------------------------------------------------------- */

static const char usage_text[] =
    "usage: mpirun -np 2 pairwise [--threads T] [--window W] [--size S] [--iterations I]\n"
    "                             [--warmup N] [--no-ack] [--no-counters] [--all-exact]\n"
    "  --threads T     threads per rank, thread t of rank 0 pairs with thread t of rank 1 (2)\n"
    "  --window W      MPI_Isend/MPI_Irecv posted per thread and iteration (256)\n"
    "  --size S        bytes per message (64)\n"
    "  --iterations I  measured iterations (100)\n"
    "  --warmup N      warm-up iterations, counted by the counters but not timed (10)\n"
    "  --no-ack        no 1-byte acknowledgement after each window\n"
    "  --no-counters   read no performance variable (and turn none on)\n"
    "  --all-exact     fail if an exact count has no variable (ours: every PML counts them)\n";

static bool apply_option(int option, const char *value, void *options, char *error, size_t len)
{
    struct options *o = options;
    switch (option) {
    case 't': return parse_int("--threads", value, 1, 256, &o->threads, error, len);
    case 'w': return parse_int("--window", value, 1, 1 << 20, &o->window, error, len);
    case 's': return parse_int("--size", value, 0, 1 << 24, &o->size, error, len);
    case 'i': return parse_int("--iterations", value, 1, 1 << 24, &o->iterations, error, len);
    case 'u': return parse_int("--warmup", value, 0, 1 << 24, &o->warmup, error, len);
    case 'a': o->ack = false; return true;
    case 'c': o->counters = false; return true;
    case 'x': o->all_exact = true; return true;
    default: snprintf(error, len, "option '%c' is in the table but not handled", option); return false;
    }
}

static bool parse_options(int argc, char **argv, struct options *o, char *error, size_t len)
{
    static const struct option table[] = {
        {"threads", required_argument, NULL, 't'}, {"window", required_argument, NULL, 'w'},
        {"size", required_argument, NULL, 's'}, {"iterations", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, 'u'}, {"no-ack", no_argument, NULL, 'a'},
        {"no-counters", no_argument, NULL, 'c'}, {"all-exact", no_argument, NULL, 'x'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *o = (struct options){.threads = 2, .window = 256, .size = 64, .iterations = 100,
                          .warmup = 10, .ack = true, .counters = true};
    if (!parse_options_with(argc, argv, table, apply_option, o, error, len)) {
        return false;
    }
    if ((long)o->window * o->size > (1L << 30)) {
        snprintf(error, len, "--window x --size must stay within 1 GiB per thread");
        return false;
    }
    if (o->all_exact && !o->counters) {
        snprintf(error, len, "--all-exact reads the counters: not with --no-counters");
        return false;
    }
    return true;
}

/* ---- the counters, through MPI_T ------------------------------------------- */

enum { ISEND, IRECV, SEND, RECV, OOS, UNEXPECTED, MATCH_TIME, OOS_MATCH_TIME, SENT_USER,
       RECEIVED_USER, NUM_COUNTERS };
static const char *const counter_names[NUM_COUNTERS] = {
    "ISEND", "IRECV", "SEND", "RECV", "OUT_OF_SEQUENCE", "UNEXPECTED", "MATCH_TIME",
    "OOS_MATCH_TIME", "BYTES_SENT_USER", "BYTES_RECEIVED_USER"};

enum status { NOT_READ, ABSENT, NOT_ATTACHED, STARTED, CONTINUOUS };
static const char *const status_names[] = {"not read", "absent", "not attached", "started",
                                           "continuous"};

struct counter {
    int index;
    MPI_T_pvar_handle handle;
    enum status status;
    unsigned long long first, value;
};

static MPI_T_pvar_session session;
static struct counter counters[NUM_COUNTERS];
static char spc_attach[2048];  /* MPI_T's string cvars are at most 2048 bytes here */

/* Whether upstream's ompi_spc_init would have turned OMPI_SPC_<name> on:
 * "all" alone, or the full name, exactly, in the comma list. */
static bool upstream_attached(const char *name)
{
    char full[128];
    snprintf(full, sizeof full, SPC_COUNTER_PREFIX "%s", name);
    return 0 == strcmp(spc_attach, "all") || in_list(spc_attach, full);
}

static void find_counter(const struct spc_pvar_info *pvar, void *unused)
{
    (void)unused;
    for (int c = 0; c < NUM_COUNTERS; ++c) {
        if (0 == strcmp(pvar->name, counter_names[c])) {
            counters[c].index = pvar->index;
        }
    }
}

/* Every counter this build has gets its index; the others are absent. */
static void find_counters(void)
{
    for (int c = 0; c < NUM_COUNTERS; ++c) {
        counters[c] = (struct counter){.index = -1, .status = ABSENT};
    }
    spc_for_each_pvar(find_counter, NULL);
}

static unsigned long long read_counter(struct counter *counter)
{
    unsigned long long value = 0;
    MPI_OK(MPI_T_pvar_read(session, counter->handle, &value));
    return value;
}

/* Before the warm-up, as in the paper: every counter the build has gets a
 * handle, started if it can be, and a first read.
 *  - a build whose SPC pvars start and stop (ours): handles started here,
 *    read here and at the end;
 *  - a build whose SPC pvars are CONTINUOUS (upstream 4.1.4):
 *    MPI_T_pvar_start fails with MPI_T_ERR_PVAR_NO_STARTSTOP, and a counter
 *    counts only if mpi_spc_attach named it, so the value is the difference
 *    of the two reads for named counters and "not attached" for the others
 *    (upstream would read 0 for those, which would be a lie);
 *  - a variable the build does not have (every SPC pvar with SPC compiled
 *    out, OOS_MATCH_TIME upstream) is "absent", never 0. */
static void start_counters(void)
{
    MPI_OK(MPI_T_pvar_session_create(&session));
    for (int c = 0; c < NUM_COUNTERS; ++c) {
        struct counter *counter = &counters[c];
        if (counter->index < 0) {
            continue;
        }
        int count;
        MPI_OK(MPI_T_pvar_handle_alloc(session, counter->index, NULL, &counter->handle, &count));
        int rc = MPI_T_pvar_start(session, counter->handle);
        if (MPI_SUCCESS == rc) {
            counter->status = STARTED;
        } else if (MPI_T_ERR_PVAR_NO_STARTSTOP == rc) {
            counter->status = upstream_attached(counter_names[c]) ? CONTINUOUS : NOT_ATTACHED;
        } else {
            MPI_OK(rc);
        }
        counter->first = read_counter(counter);
    }
}

static void stop_counters(void)
{
    for (int c = 0; c < NUM_COUNTERS; ++c) {
        struct counter *counter = &counters[c];
        if (STARTED == counter->status || CONTINUOUS == counter->status) {
            counter->value = read_counter(counter) - counter->first;
        }
        if (counter->index >= 0) {
            if (STARTED == counter->status) {
                MPI_T_pvar_stop(session, counter->handle);
            }
            MPI_T_pvar_handle_free(session, &counter->handle);
        }
    }
    MPI_T_pvar_session_free(&session);
}

/* ---- the benchmark ---------------------------------------------------------- */

static struct options opt;
static int rank;
static pthread_barrier_t barrier;
static double timed_start, timed_end;

/* All threads of both ranks at one point: a thread barrier around one
 * MPI_Barrier, so no thread sends while the ranks synchronise. */
static void synchronise(int thread, double *clock)
{
    pthread_barrier_wait(&barrier);
    if (0 == thread) {
        MPI_Barrier(MPI_COMM_WORLD);
        *clock = MPI_Wtime();
    }
    pthread_barrier_wait(&barrier);
}

/* Thread t of rank 0 is paired with thread t of rank 1 by tag (t for data,
 * T + t for the ack), all on MPI_COMM_WORLD.  Each iteration the sender posts
 * W MPI_Isend, the receiver W MPI_Irecv, both wait for all, then the
 * receiver acknowledges with one byte: the window is the unit of flow
 * control, as in the paper group's benchmark, so rank 0 cannot run ahead and
 * turn this into a test of the unexpected queue (--no-ack drops it).  The
 * warm-up (10 iterations) is counted but not timed, because Table 3's
 * receive counts are T x 256 x 110; the clock covers the measured iterations
 * between two synchronisations of all threads of both ranks. */
static void *pair(void *arg)
{
    const int thread = (int)(intptr_t)arg;
    const int tag = thread, ack_tag = opt.threads + thread, peer = 1 - rank;
    /* one buffer per request: pending receives must not share memory */
    char *buffers = calloc((size_t)opt.window, opt.size > 0 ? (size_t)opt.size : 1);
    MPI_Request *requests = malloc((size_t)opt.window * sizeof *requests);
    char ack = 0;
    if (NULL == buffers || NULL == requests) {
        spc_client_die("thread %d: out of memory", thread);
    }
    for (int iteration = 0; iteration < opt.warmup + opt.iterations; ++iteration) {
        if (iteration == opt.warmup) {
            synchronise(thread, &timed_start);
        }
        for (int k = 0; k < opt.window; ++k) {
            char *buffer = buffers + (size_t)k * (size_t)opt.size;
            if (0 == rank) {
                MPI_Isend(buffer, opt.size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &requests[k]);
            } else {
                MPI_Irecv(buffer, opt.size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &requests[k]);
            }
        }
        MPI_Waitall(opt.window, requests, MPI_STATUSES_IGNORE);
        if (opt.ack && 0 == rank) {
            MPI_Recv(&ack, 1, MPI_BYTE, peer, ack_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (opt.ack) {
            MPI_Send(&ack, 1, MPI_BYTE, peer, ack_tag, MPI_COMM_WORLD);
        }
    }
    synchronise(thread, &timed_end);
    free(buffers);
    free(requests);
    return NULL;
}

/* ---- the report (rank 0) --------------------------------------------------------- */

/* Both ranks' values and states, gathered on rank 0. */
static unsigned long long values[2][NUM_COUNTERS];
static int states[2][NUM_COUNTERS];

static bool known(int r, int c)
{
    return STARTED == states[r][c] || CONTINUOUS == states[r][c];
}

struct check {
    const char *what;
    unsigned long long expected, got;
    bool fatal;
};

/* Counts known exactly, of the counters this build counted.  Call counts
 * must hold in any build; byte counts are fatal only where the pvars start
 * and stop (ours): upstream 4.1.4 splits user from MPI bytes by a tag it can
 * read before the send completes (pml_ob1_sendreq.c:514), so there they are
 * only reported. */
static int exact_checks(struct check *checks, int *unread)
{
    const unsigned long long rounds = (unsigned long long)opt.warmup + (unsigned long long)opt.iterations;
    const unsigned long long messages = (unsigned long long)opt.threads * (unsigned long long)opt.window * rounds;
    const unsigned long long acks = opt.ack ? (unsigned long long)opt.threads * rounds : 0;
    const unsigned long long bytes = messages * (unsigned long long)opt.size;
    const struct {
        int rank, counter;
        unsigned long long expected;
        bool calls;
        const char *what;
    } wanted[] = {
        {0, ISEND, messages, true, "rank 0 ISEND = T x W x (I + warm-up)"},
        {1, IRECV, messages, true, "rank 1 IRECV = T x W x (I + warm-up)"},
        {1, SEND, acks, true, "rank 1 SEND = acks"},
        {0, RECV, acks, true, "rank 0 RECV = acks"},
        {0, SENT_USER, bytes, false, "rank 0 BYTES_SENT_USER = messages x S"},
        {1, RECEIVED_USER, bytes, false, "rank 1 BYTES_RECEIVED_USER = messages x S"},
        {1, SENT_USER, acks, false, "rank 1 BYTES_SENT_USER = acks x 1 byte"},
        {0, RECEIVED_USER, acks, false, "rank 0 BYTES_RECEIVED_USER = acks x 1 byte"},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; ++i) {
        const int r = wanted[i].rank, c = wanted[i].counter;
        if (known(r, c)) {
            checks[n++] = (struct check){wanted[i].what, wanted[i].expected, values[r][c],
                                         wanted[i].calls || STARTED == states[r][c]};
        } else if (opt.all_exact) {
            fprintf(stderr, "pairwise: FATAL: %s: %s, not read\n", wanted[i].what, status_names[states[r][c]]);
            ++*unread;
        }
    }
    return n;
}

/* "name": value, or null when the value is absent or was not read (never 0). */
static void print_value(const char *name, int r, int c)
{
    if (known(r, c)) {
        printf("\"%s\": %llu", name, values[r][c]);
    } else {
        printf("\"%s\": null", name);
    }
}

/* What a human reads for a Table 3 counter of the receiving rank. */
static void print_human(const char *label, int c, const char *unit)
{
    if (known(1, c)) {
        printf(", %s %llu%s", label, values[1][c], unit);
    } else {
        printf(", %s %s", label, status_names[states[1][c]]);
    }
}

/* Prints the JSON line and the human line; returns the exit status. */
static int report(double seconds)
{
    const double timed_messages = (double)opt.threads * opt.window * opt.iterations;
    const double rate = timed_messages / seconds;
    /* "Open MPI v4.1.4, package: <package string>, ..." up to the package */
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    int library_len;
    MPI_Get_library_version(library, &library_len);
    const char *package = strstr(library, "package: ");
    const char *version_end = strchr(package ? package : library, ',');
    const bool have_oos = known(1, OOS) && known(1, IRECV) && values[1][IRECV] > 0;
    const double oos_percent = have_oos ? 100.0 * (double)values[1][OOS] / (double)values[1][IRECV] : 0;

    printf("{\"benchmark\": \"pairwise\", \"library\": \"%.*s\", \"threads\": %d, "
           "\"window\": %d, \"size\": %d, \"iterations\": %d, \"warmup\": %d, \"ack\": %s, "
           "\"counters_mode\": \"%s\", \"spc_attach\": \"%s\", ",
           version_end ? (int)(version_end - library) : library_len, library, opt.threads,
           opt.window, opt.size, opt.iterations, opt.warmup, opt.ack ? "true" : "false",
           opt.counters ? "mpit" : "none", spc_attach);
    printf("\"timed_messages\": %.0f, \"wall_time_us\": %.3f, \"message_rate\": %.2f, ",
           timed_messages, seconds * 1e6, rate);
    /* Table 3's columns: the receiving rank's counters */
    printf("\"table3\": {");
    print_value("receives", 1, IRECV);
    printf(", ");
    print_value("oos", 1, OOS);
    if (have_oos) {
        printf(", \"oos_percent\": %.4f, ", oos_percent);
    } else {
        printf(", \"oos_percent\": null, ");
    }
    print_value("match_time_us", 1, MATCH_TIME);
    printf(", ");
    print_value("oos_match_time_us", 1, OOS_MATCH_TIME);
    printf("}, \"counters\": {");
    for (int r = 0; r < 2; ++r) {
        printf("%s\"rank%d\": {", r ? ", " : "", r);
        for (int c = 0; c < NUM_COUNTERS; ++c) {
            printf("%s\"%s\": {\"status\": \"%s\", ", c ? ", " : "", counter_names[c],
                   status_names[states[r][c]]);
            print_value("value", r, c);
            printf("}");
        }
        printf("}");
    }
    struct check checks[8];
    int unread = 0;
    const int num_checks = exact_checks(checks, &unread);
    bool ok = 0 == unread;
    printf("}, \"checks\": [");
    for (int i = 0; i < num_checks; ++i) {
        const struct check *k = &checks[i];
        printf("%s{\"what\": \"%s\", \"expected\": %llu, \"got\": %llu, \"ok\": %s, "
               "\"fatal\": %s}", i ? ", " : "", k->what, k->expected, k->got,
               k->got == k->expected ? "true" : "false", k->fatal ? "true" : "false");
        if (k->got != k->expected) {
            fprintf(stderr, "pairwise: %s check failed: %s: expected %llu, got %llu\n",
                    k->fatal ? "FATAL" : "informational", k->what, k->expected, k->got);
            ok = ok && !k->fatal;
        }
    }
    printf("], \"ok\": %s}\n", ok ? "true" : "false");

    printf("# pairwise T=%d W=%d S=%d I=%d warm-up=%d%s: %.0f msg/s, wall %.0f us", opt.threads,
           opt.window, opt.size, opt.iterations, opt.warmup, opt.ack ? "" : " (no ack)", rate,
           seconds * 1e6);
    print_human("rank 1: receives", IRECV, "");
    print_human("OOS", OOS, "");
    if (have_oos) {
        printf(" (%.2f%%)", oos_percent);
    }
    print_human("match time", MATCH_TIME, " us");
    print_human("OOS match time", OOS_MATCH_TIME, " us");
    printf("%s\n", ok ? "" : "  [EXACT COUNT CHECK FAILED]");
    fflush(stdout);
    return ok ? BENCH_EXIT_OK : BENCH_EXIT_CHECK_FAILED;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char error[256];
    if (!parse_options(argc, argv, &opt, error, sizeof error)) {
        if (0 == rank) {
            if (0 != strcmp(error, "help")) {
                fprintf(stderr, "pairwise: %s\n", error);
            }
            fputs(usage_text, 0 == strcmp(error, "help") ? stdout : stderr);
        }
        MPI_Finalize();
        return 0 == strcmp(error, "help") ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
    }
    if (2 != size || MPI_THREAD_MULTIPLE != provided) {
        if (0 == rank) {
            fprintf(stderr, "pairwise: needs exactly 2 ranks (got %d) and MPI_THREAD_MULTIPLE "
                            "(provided level %d)\n", size, provided);
        }
        MPI_Finalize();
        return BENCH_EXIT_USAGE;
    }

    int mpit_provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &mpit_provided);
    spc_read_string_cvar("mpi_spc_attach", spc_attach, sizeof spc_attach);
    for (int c = 0; c < NUM_COUNTERS; ++c) {
        counters[c] = (struct counter){.index = -1, .status = NOT_READ};
    }
    if (opt.counters) {
        find_counters();
        start_counters();
    }

    pthread_barrier_init(&barrier, NULL, (unsigned)opt.threads);
    pthread_t *threads = malloc((size_t)opt.threads * sizeof *threads);
    for (int t = 0; t < opt.threads; ++t) {
        if (0 != pthread_create(&threads[t], NULL, pair, (void *)(intptr_t)t)) {
            spc_client_die("cannot create thread %d", t);
        }
    }
    for (int t = 0; t < opt.threads; ++t) {
        pthread_join(threads[t], NULL);
    }
    free(threads);
    pthread_barrier_destroy(&barrier);
    if (opt.counters) {
        stop_counters();
    }

    /* Both ranks' values and states to rank 0; the slowest rank's time. */
    unsigned long long mine[NUM_COUNTERS];
    int my_states[NUM_COUNTERS];
    for (int c = 0; c < NUM_COUNTERS; ++c) {
        mine[c] = counters[c].value;
        my_states[c] = (int)counters[c].status;
    }
    MPI_Gather(mine, NUM_COUNTERS, MPI_UNSIGNED_LONG_LONG, values, NUM_COUNTERS,
               MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Gather(my_states, NUM_COUNTERS, MPI_INT, states, NUM_COUNTERS, MPI_INT, 0, MPI_COMM_WORLD);
    double seconds = timed_end - timed_start, slowest = 0;
    MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int exit_code = 0 == rank ? report(slowest) : 0;
    MPI_Bcast(&exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_T_finalize();
    MPI_Finalize();
    return exit_code;
}
