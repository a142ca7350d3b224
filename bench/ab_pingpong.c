/*
 * In-process A/B ping-pong: the cost of counting without process placement
 * noise.  One pair of processes alternates blocks of round trips with a set
 * of counters on and off (through MPI_T) and compares the blocks.
 *
 * usage: mpirun -np 2 ab_pingpong [--counters all|comm|comm-untimed|NAME,NAME,...]
 *        [--size BYTES] [--round-trips B] [--pairs P] [--warmup-pairs N]
 * Output (rank 0): one JSON line with every block (state, round trips,
 * seconds), then lines starting with "#"; exit status BENCH_EXIT_*.
 *
 * Why in one process: on the project's 2-vCPU VMs the same build's 1-byte
 * latency jumps between modes from one mpirun to the next (170 and 520 ns
 * one-way in consecutive runs), so two runs compare placements as much as
 * configurations.  It needs pvars that start and stop, and mpi_spc_attach
 * empty; upstream 4.1.4's pvars are continuous and a build without SPC has
 * none: the program says so and exits BENCH_EXIT_NOT_APPLICABLE.
 */
#include "mpi_bench.h"

struct options {
    const char *counters; /* "all", "comm", "comm-untimed", or names without OMPI_SPC_ */
    int size, round_trips, pairs, warmup_pairs;
};

static const char usage_text[] =
    "usage: mpirun -np 2 ab_pingpong [--counters LIST] [--size BYTES] [--round-trips B]\n"
    "                                [--pairs P] [--warmup-pairs N]\n"
    "  --counters LIST   counters toggled: all (default), or names such as SEND,MATCH_TIME;\n"
    "                    comm: instead every variable bound to a communicator, on\n"
    "                    MPI_COMM_WORLD (the ping-pong's), counters, arrays, histograms;\n"
    "                    comm-untimed: the same without MATCH_TIME (its timer)\n"
    "  --size BYTES      message size (1)\n"
    "  --round-trips B   timed round trips per block (1000)\n"
    "  --pairs P         measured pairs of blocks, one on and one off each (100)\n"
    "  --warmup-pairs N  pairs of blocks before them, not reported as measured (5)\n";

static bool apply_option(int option, const char *value, void *options, char *error, size_t len)
{
    struct options *o = options;
    switch (option) {
    case 'c':
        if ('\0' == value[0]) {
            snprintf(error, len, "--counters needs all or a comma list of counter names");
            return false;
        }
        o->counters = value;
        return true;
    case 's': return parse_int("--size", value, 0, 1 << 24, &o->size, error, len);
    case 'r': return parse_int("--round-trips", value, 1, 1 << 28, &o->round_trips, error, len);
    case 'p': return parse_int("--pairs", value, 1, 1 << 20, &o->pairs, error, len);
    case 'w': return parse_int("--warmup-pairs", value, 0, 1 << 20, &o->warmup_pairs, error, len);
    default: snprintf(error, len, "option '%c' is in the table but not handled", option); return false;
    }
}

static bool parse_options(int argc, char **argv, struct options *o, char *error, size_t len)
{
    static const struct option table[] = {
        {"counters", required_argument, NULL, 'c'}, {"size", required_argument, NULL, 's'},
        {"round-trips", required_argument, NULL, 'r'}, {"pairs", required_argument, NULL, 'p'},
        {"warmup-pairs", required_argument, NULL, 'w'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *o = (struct options){.counters = "all", .size = 1, .round_trips = 1000, .pairs = 100,
                          .warmup_pairs = 5};
    return parse_options_with(argc, argv, table, apply_option, o, error, len);
}

/* ---- the toggled counters ---------------------------------------------------- */

struct counter {
    char name[240];  /* without runtime_spc_OMPI_SPC_; comm:NAME for one bound to a communicator */
    int index, var_class, count;
    MPI_T_pvar_handle handle;
    unsigned long long last;  /* an array's: the sum of its elements */
};

static int rank;
static MPI_T_pvar_session session;
static struct counter *counters;
static int num_counters;

/* Says why the A/B cannot run in this build, on rank 0, and ends. */
static void not_applicable(const char *why)
{
    if (0 == rank) {
        printf("{\"benchmark\": \"ab_pingpong\", \"applicable\": false, \"reason\": \"%s\"}\n", why);
        printf("# ab_pingpong: not applicable in this build: %s\n", why);
        fflush(stdout);
    }
    MPI_Finalize();
    exit(BENCH_EXIT_NOT_APPLICABLE);
}

struct handles_wanted {
    const char *counters;
    bool bound;  /* visiting the variables bound to a communicator */
    bool any_spc;
};

static void allocate_handle(const struct spc_pvar_info *pvar, void *context)
{
    struct handles_wanted *wanted = context;
    wanted->any_spc = true;
    if (pvar->continuous) {
        not_applicable("this build's SPC pvars are CONTINUOUS (upstream Open MPI 4.1.4): "
                       "MPI_T_pvar_start returns MPI_T_ERR_PVAR_NO_STARTSTOP, so MPI_T cannot "
                       "turn a counter on or off, and only mpi_spc_attach at MPI_Init can");
    }
    const bool untimed = 0 == strcmp(wanted->counters, "comm-untimed");
    const bool comm = untimed || 0 == strcmp(wanted->counters, "comm");
    if (comm != wanted->bound || (untimed && MPI_T_PVAR_CLASS_TIMER == pvar->var_class) ||
        (!comm && 0 != strcmp(wanted->counters, "all") && !in_list(wanted->counters, pvar->name))) {
        return;
    }
    struct counter *c = &counters[num_counters++];
    snprintf(c->name, sizeof c->name, "%s%s", comm ? "comm:" : "", pvar->name);
    c->index = pvar->index;
    c->var_class = pvar->var_class;
    MPI_Comm world = MPI_COMM_WORLD;
    MPI_OK(MPI_T_pvar_handle_alloc(session, pvar->index, comm ? (void *)&world : NULL, &c->handle,
                                   &c->count));
}

/* Handles (stopped) on every SPC pvar named in counters. */
static void allocate_handles(const char *names)
{
    int num;
    MPI_OK(MPI_T_pvar_get_num(&num));
    counters = calloc((size_t)num + 1, sizeof *counters);
    MPI_OK(MPI_T_pvar_session_create(&session));
    struct handles_wanted wanted = {names, false, false};
    spc_for_each_pvar(allocate_handle, &wanted);
    wanted.bound = true;
    spc_for_each_pvar_named(SPC_COMM_PVAR_PREFIX SPC_COUNTER_PREFIX, allocate_handle, &wanted);
    if (!wanted.any_spc) {
        not_applicable("this build has no SPC performance variables (SPC compiled out)");
    }
    if (0 == num_counters) {
        not_applicable("none of the named counters exists in this build");
    }
}

static struct counter *find(const char *name)
{
    for (int i = 0; i < num_counters; ++i) {
        if (0 == strcmp(counters[i].name, name)) {
            return &counters[i];
        }
    }
    return NULL;
}

static void set_state(bool on)
{
    for (int i = 0; i < num_counters; ++i) {
        int rc = on ? MPI_T_pvar_start(session, counters[i].handle)
                    : MPI_T_pvar_stop(session, counters[i].handle);
        if (MPI_T_ERR_PVAR_NO_STARTSTOP == rc) {
            not_applicable("MPI_T_pvar_start/stop returned MPI_T_ERR_PVAR_NO_STARTSTOP");
        }
        MPI_OK(rc);
    }
}

static bool is_sum(int var_class)
{
    return MPI_T_PVAR_CLASS_COUNTER == var_class || MPI_T_PVAR_CLASS_AGGREGATE == var_class ||
           MPI_T_PVAR_CLASS_TIMER == var_class;
}

static int failures;

/* A counter's value, an array's the sum of its elements. */
static unsigned long long read_sum(const struct counter *c)
{
    unsigned long long values[c->count], sum = 0;
    MPI_OK(MPI_T_pvar_read(session, c->handle, values));
    for (int i = 0; i < c->count; ++i) {
        sum += values[i];
    }
    return sum;
}

static void self_check_failed(const char *format, const char *name, unsigned long long expected,
                 unsigned long long got)
{
    ++failures;
    fprintf(stderr, "ab_pingpong: rank %d: SELF-CHECK FAILED: ", rank);
    fprintf(stderr, format, name, expected, got);
    fputc('\n', stderr);
}

/* Self-check after every block: a sum counter must not move in an off block
 * (exactly).  At the end SEND and RECV must equal the round trips of the on
 * blocks on each rank, the user bytes that many times the size, and a set
 * without them (MATCH_TIME alone) must have counted something.  That proves
 * counting while on, not silence while off: MPI_T subtracts a counter's
 * value at each start, so a counter that never stopped would pass too; the
 * raw totals of the finalize CSV (raw_total) check that.  Any failure prints
 * SELF-CHECK FAILED and ends in BENCH_EXIT_CHECK_FAILED. */
static void check_block(bool on, int block)
{
    for (int i = 0; i < num_counters; ++i) {
        struct counter *c = &counters[i];
        unsigned long long value = read_sum(c);
        if (!on && is_sum(c->var_class) && value != c->last) {
            char what[300];
            snprintf(what, sizeof what, "%s moved in off block %d", c->name, block);
            self_check_failed("%s: was %llu, now %llu", what, c->last, value);
        }
        c->last = value;
    }
}

/* ---- the ping-pong --------------------------------------------------------------- */

static void round_trips(char *buffer, int size, long count)
{
    const int peer = 1 - rank;
    for (long i = 0; i < count; ++i) {
        if (0 == rank) {
            MPI_Send(buffer, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(buffer, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buffer, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buffer, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        }
    }
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/* Counts predictable exactly from the round trips: per round trip each rank
 * sends and receives one message of the chosen size, on MPI_COMM_WORLD (the
 * comm: ones: the peer arrays and histograms summed over their elements),
 * and calls no MPI_Bcast (BCAST alone is the A/B's control: a counter whose
 * hook is off the ping-pong's path).  The first four are also in the
 * finalize CSV. */
static const struct {
    const char *name;
    bool bytes;
    unsigned per_round_trip;
} exact[] = {{"SEND", false, 1}, {"RECV", false, 1}, {"BYTES_SENT_USER", true, 1},
             {"BYTES_RECEIVED_USER", true, 1}, {"comm:SEND", false, 1}, {"comm:RECV", false, 1},
             {"comm:BYTES_SENT_USER", true, 1}, {"comm:BYTES_RECEIVED_USER", true, 1},
             {"comm:PEER_MESSAGES_SENT", false, 1}, {"comm:PEER_MESSAGES_RECEIVED", false, 1},
             {"comm:PEER_BYTES_SENT", true, 1}, {"comm:PEER_BYTES_RECEIVED", true, 1},
             {"comm:MESSAGE_SIZES_SENT", false, 1}, {"comm:MESSAGE_SIZES_RECEIVED", false, 1},
             {"BCAST", false, 0}};
enum { RAW_EXACT = 4 };

/* The file MPI_Finalize will write raw totals to, if it will write one. */
static bool dump_file_path(char path[2048])
{
    int index, count, enabled = 0;  /* Open MPI writes a C bool into its first byte */
    MPI_T_cvar_handle handle;
    if (MPI_SUCCESS == MPI_T_cvar_get_index("mpi_spc_dump_enabled", &index) &&
        MPI_SUCCESS == MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) {
        MPI_T_cvar_read(handle, &enabled);
        MPI_T_cvar_handle_free(&handle);
    }
    spc_read_string_cvar("mpi_spc_dump_file", path, 2048);
    return enabled && '\0' != path[0];
}

/* OMPI_SPC_<name>'s value for rank in the finalize CSV (rank,counter,value,unit),
 * or -1 if it is not there. */
static long long raw_total(const char *path, int rank_wanted, const char *name)
{
    FILE *csv = fopen(path, "r");
    char line[256], full[96];
    long long found = -1;
    snprintf(full, sizeof full, SPC_COUNTER_PREFIX "%s", name);
    while (csv && found < 0 && fgets(line, sizeof line, csv)) {
        int r;
        char counter[96];
        long long value;
        if (3 == sscanf(line, "%d,%95[^,],%lld", &r, counter, &value) && r == rank_wanted &&
            0 == strcmp(counter, full)) {
            found = value;
        }
    }
    if (csv) {
        fclose(csv);
    }
    return found;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct options opt;
    char error[256];
    if (!parse_options(argc, argv, &opt, error, sizeof error)) {
        bool help = 0 == strcmp(error, "help");
        if (0 == rank) {
            if (!help) {
                fprintf(stderr, "ab_pingpong: %s\n", error);
            }
            fputs(usage_text, help ? stdout : stderr);
        }
        MPI_Finalize();
        return help ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
    }
    if (2 != size) {
        if (0 == rank) {
            fprintf(stderr, "ab_pingpong: needs exactly 2 ranks, got %d\n", size);
        }
        MPI_Finalize();
        return BENCH_EXIT_USAGE;
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);

    /* A counter attached at MPI_Init stays on whatever the handles do. */
    char attach[2048];  /* MPI_T's string cvars are at most 2048 bytes here */
    spc_read_string_cvar("mpi_spc_attach", attach, sizeof attach);
    allocate_handles(opt.counters);
    if ('\0' != attach[0]) {
        if (0 == rank) {
            fprintf(stderr, "ab_pingpong: mpi_spc_attach is '%s': the counters it names stay on "
                            "in the off blocks; run with it empty\n", attach);
        }
        MPI_Finalize();
        return BENCH_EXIT_USAGE;
    }

    char *buffer = calloc(opt.size > 0 ? (size_t)opt.size : 1, 1);
    /* Pairs of blocks in the order on,off / off,on / on,off ... (ABBA), so
     * warm-up and drift favour neither state; the first pairs are warm-up.
     * Rank 1 switches after its last reply, rank 0 after receiving it, and
     * one untimed round trip after the switch makes sure both have switched
     * before the clock starts. */
    const int blocks = 2 * (opt.warmup_pairs + opt.pairs);
    double *seconds = calloc((size_t)blocks, sizeof *seconds);
    bool *states = calloc((size_t)blocks, sizeof *states);
    long on_blocks = 0;
    bool on = false;
    for (int block = 0; block < blocks; ++block) {
        const int pair = block / 2;
        /* ABBA: even pairs on then off, odd pairs off then on */
        const bool want = (0 == pair % 2) == (0 == block % 2);
        if (want != on) {
            set_state(want);
            on = want;
        }
        states[block] = on;
        on_blocks += on;
        round_trips(buffer, opt.size, 1);  /* both ranks have switched */
        double start = MPI_Wtime();
        round_trips(buffer, opt.size, opt.round_trips);
        seconds[block] = MPI_Wtime() - start;
        check_block(on, block);
    }
    if (on) {
        set_state(false);
    }

    /* Exact totals on this rank: one send and one receive per round trip. */
    const unsigned long long counted = (unsigned long long)on_blocks * (opt.round_trips + 1ULL);
    int exact_checks = 0;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; ++i) {
        struct counter *c = find(exact[i].name);
        if (NULL != c) {
            ++exact_checks;
            unsigned long long expected =
                counted * exact[i].per_round_trip * (exact[i].bytes ? (unsigned)opt.size : 1u);
            if (c->last != expected) {
                self_check_failed("%s: expected %llu (round trips in on blocks), got %llu", c->name, expected,
                     c->last);
            }
        }
    }
    if (0 == exact_checks) {
        /* Nothing predictable exactly: every sum counter must at least have moved. */
        for (int i = 0; i < num_counters; ++i) {
            if (is_sum(counters[i].var_class) && 0 == counters[i].last) {
                self_check_failed("%s: expected more than %llu after the on blocks, got %llu",
                     counters[i].name, 0ULL, 0ULL);
            }
        }
    }
    struct counter *send = find("SEND");
    const unsigned long long send_counted = send ? send->last : 0;
    const bool set_has[] = {find("SEND") != NULL, find("RECV") != NULL,
                            find("BYTES_SENT_USER") != NULL, find("BYTES_RECEIVED_USER") != NULL};
    for (int i = 0; i < num_counters; ++i) {
        MPI_T_pvar_handle_free(session, &counters[i].handle);
    }
    MPI_T_pvar_session_free(&session);
    char dump_file[2048];
    const bool dump = dump_file_path(dump_file);

    int all_failures = 0;
    MPI_Reduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_T_finalize();
    /* With mpi_spc_dump_enabled and mpi_spc_dump_file, MPI_Finalize writes
     * every rank's raw totals, which MPI_T's per-handle deltas hide: they
     * show whether the counters also counted in the off blocks. */
    MPI_Finalize();
    if (0 != rank) {
        return 0;
    }
    const char *raw_check = "not run (needs --mca mpi_spc_dump_enabled true --mca mpi_spc_dump_file FILE)";
    if (dump) {
        raw_check = "passed";
        for (int r = 0; r < 2; ++r) {
            for (size_t i = 0; i < RAW_EXACT; ++i) {
                unsigned long long expected =
                    set_has[i] ? counted * (exact[i].bytes ? (unsigned)opt.size : 1u) : 0;
                long long got = raw_total(dump_file, r, exact[i].name);
                if (got < 0 || (unsigned long long)got != expected) {
                    char what[sizeof dump_file + 64];
                    snprintf(what, sizeof what, "raw total of %s on rank %d in %s%s", exact[i].name,
                             r, dump_file, got < 0 ? " (missing)" : "");
                    self_check_failed("%s: expected %llu, got %llu", what, expected,
                         (unsigned long long)(got < 0 ? 0 : got));
                    ++all_failures;
                    raw_check = "FAILED";
                }
            }
        }
    }

    printf("{\"benchmark\": \"ab_pingpong\", \"applicable\": true, \"toggled\": \"%s\", "
           "\"counters\": %d, \"size\": %d, \"round_trips\": %d, \"pairs\": %d, "
           "\"warmup_pairs\": %d, \"on_blocks\": %ld, \"send_counted\": ",
           opt.counters, num_counters, opt.size, opt.round_trips, opt.pairs, opt.warmup_pairs,
           on_blocks);
    if (send) {
        printf("%llu, ", send_counted);
    } else {
        printf("null, ");
    }
    printf("\"send_expected\": %llu, \"self_check\": \"%s\", \"raw_totals_check\": \"%s\", "
           "\"blocks\": [", counted,
           all_failures ? "failed" : exact_checks ? "exact" : "moved only when on", raw_check);
    for (int block = 0; block < blocks; ++block) {
        printf("%s{\"block\": %d, \"warmup\": %s, \"state\": \"%s\", \"round_trips\": %d, "
               "\"seconds\": %.9f}", block ? ", " : "", block,
               block < 2 * opt.warmup_pairs ? "true" : "false", states[block] ? "on" : "off",
               opt.round_trips, seconds[block]);
    }
    printf("]}\n");

    /* medians of the measured blocks, one-way = round trip / 2 */
    double *on_ns = calloc((size_t)opt.pairs, sizeof *on_ns);
    double *off_ns = calloc((size_t)opt.pairs, sizeof *off_ns);
    double *ratio = calloc((size_t)opt.pairs, sizeof *ratio);
    for (int p = 0; p < opt.pairs; ++p) {
        int first = 2 * (opt.warmup_pairs + p);
        int on_block = states[first] ? first : first + 1, off_block = on_block ^ 1;
        on_ns[p] = seconds[on_block] / opt.round_trips / 2 * 1e9;
        off_ns[p] = seconds[off_block] / opt.round_trips / 2 * 1e9;
        ratio[p] = on_ns[p] / off_ns[p];
    }
    printf("# ab_pingpong counters=%s (%d) size=%d: one-way latency median on %.1f ns, "
           "off %.1f ns, median on/off ratio of %d pairs %.4f\n", opt.counters, num_counters,
           opt.size, median(on_ns, opt.pairs), median(off_ns, opt.pairs), opt.pairs,
           median(ratio, opt.pairs));
    if (all_failures) {
        printf("# SELF-CHECK FAILED (%d failures, details on standard error); raw totals check %s\n",
               all_failures, raw_check);
    } else {
        printf("# self-check passed: %s; raw totals check %s\n",
               exact_checks ? "SEND/RECV/user bytes of the set equal the round trips of the on "
                              "blocks on both ranks, and no sum counter moved while off"
                            : "no sum counter moved while off, each moved while on",
               raw_check);
    }
    fflush(stdout);
    free(on_ns);
    free(off_ns);
    free(ratio);
    free(buffer);
    free(seconds);
    free(states);
    free(counters);
    return all_failures ? BENCH_EXIT_CHECK_FAILED : BENCH_EXIT_OK;
}
