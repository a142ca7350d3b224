/*
 * MPI_T semantics of the SPC performance variables, on 2 ranks:
 * classes and types; start turns a counter on; two sessions started at
 * different times read their own deltas; stop freezes a handle; reset and
 * readreset; exact call counts; user bytes summed by the test for sizes
 * 0 B to 4 MiB (eager, rendezvous and RDMA paths); MPI_ANY_TAG receives
 * count as user bytes; a Bcast between user sends counts as MPI bytes only;
 * every SPC variable enumerates with a unique name and a description, in
 * exactly one leaf category under "spc" (those bound to a communicator in
 * "spc_traffic"); a write is refused; null, freed and
 * foreign handles are MPI_T errors; a handle read after MPI_Finalize gives
 * its final value, and MPI_T_finalize follows MPI_Finalize.  argv[1] names
 * the job's PML (default ob1): a counter it does not count has no variable,
 * nor its communicator-bound form, and is in no category.
 */
#include "mpit_util.h"

#include "spc/spc.h"

static const int sizes[] = {0, 1, 7, 64, 4096, 12288, 65536, 1 << 20, 4 << 20};
#define NUM_SIZES ((int)(sizeof sizes / sizeof sizes[0]))

static const int expected_class[] = {
    [SPC_KIND_COUNTER] = MPI_T_PVAR_CLASS_COUNTER,
    [SPC_KIND_AGGREGATE] = MPI_T_PVAR_CLASS_AGGREGATE,
    [SPC_KIND_TIMER] = MPI_T_PVAR_CLASS_TIMER,
    [SPC_KIND_LEVEL] = MPI_T_PVAR_CLASS_LEVEL,
    [SPC_KIND_HIGHWATERMARK] = MPI_T_PVAR_CLASS_HIGHWATERMARK,
};

/* The communicator and window variables: counters, per-peer arrays,
 * histograms, histograms per peer (comm_counter_of). */
enum { NUM_COMM_PVARS = SPC_NUM_COMM_COUNTERS + SPC_NUM_PEER_COUNTERS + 2 * SPC_NUM_HISTOGRAMS };

/* The job's PML, and what each PML does not count (ompi_spc_pmls.def,
 * restated here on purpose). */
static const char *pml = "ob1";
static const char *const not_counted_by_ucx[] = {"OUT_OF_SEQUENCE", "MATCH_TIME", "OOS_MATCH_TIME",
                                                  "UNEXPECTED_IN_QUEUE", "OOS_IN_QUEUE",
                                                  "MAX_UNEXPECTED_IN_QUEUE", "MAX_OOS_IN_QUEUE",
                                                  "BYTES_PUT", "BYTES_GET", NULL};

/* Whether the job's PML counts catalogue counter id (cm: what ucx counts
 * but UNEXPECTED). */
static bool counted(int id)
{
    const char *name = spc_counter_infos[id].name + strlen(SPC_COUNTER_PREFIX);
    if (strcmp(pml, "ob1") == 0) {
        return true;
    }
    if (strcmp(pml, "cm") == 0 && strcmp(name, "UNEXPECTED") == 0) {
        return false;
    }
    for (const char *const *other = not_counted_by_ucx; *other != NULL; ++other) {
        if (strcmp(name, *other) == 0) {
            return false;
        }
    }
    return true;
}

/* Whether communicator variable comm_id (comm_counter_of) exists: its
 * counter is counted, and a queue level only where ob1 keeps it per
 * communicator; per-peer arrays and histograms under every PML. */
static bool comm_offered(int comm_id)
{
    if (comm_id >= SPC_NUM_COMM_COUNTERS) {
        return true;
    }
    const int counter = spc_comm_counter_infos[comm_id].counter;
    return counted(counter) && (spc_counter_infos[counter].kind != SPC_KIND_LEVEL || strcmp(pml, "ob1") == 0);
}

/* How many of the first n ids pass offered. */
static unsigned long long how_many(int n, bool (*offered)(int))
{
    unsigned long long count = 0;
    for (int id = 0; id < n; ++id) {
        count += offered(id);
    }
    return count;
}

/* The communicator variable a name is: a communicator counter's id, or
 * SPC_NUM_COMM_COUNTERS + a per-peer array's (a window's under its own
 * prefix), then the histograms' and the histograms per peer's
 * (OMPI_SPC_PEER_<NAME>); -1 if it is none. */
static int comm_counter_of(const char *name)
{
    for (int id = 0; id < SPC_NUM_PEER_COUNTERS; ++id) {
        const char *prefix = spc_peer_counter_infos[id].window ? SPC_WIN_PVAR_PREFIX : SPC_COMM_PVAR_PREFIX;
        if (strncmp(name, prefix, strlen(prefix)) == 0 &&
            strcmp(name + strlen(prefix), spc_peer_counter_infos[id].name) == 0) {
            return SPC_NUM_COMM_COUNTERS + id;
        }
    }
    const size_t prefix = strlen(SPC_COMM_PVAR_PREFIX);
    if (strncmp(name, SPC_COMM_PVAR_PREFIX, prefix) != 0) {
        return -1;
    }
    for (int id = 0; id < SPC_NUM_HISTOGRAMS; ++id) {
        char per_peer[128];
        snprintf(per_peer, sizeof per_peer, SPC_COUNTER_PREFIX "PEER_%s",
                 spc_histogram_infos[id].name + strlen(SPC_COUNTER_PREFIX));
        if (strcmp(name + prefix, spc_histogram_infos[id].name) == 0) {
            return SPC_NUM_COMM_COUNTERS + SPC_NUM_PEER_COUNTERS + id;
        }
        if (strcmp(name + prefix, per_peer) == 0) {
            return SPC_NUM_COMM_COUNTERS + SPC_NUM_PEER_COUNTERS + SPC_NUM_HISTOGRAMS + id;
        }
    }
    return spc_comm_counter_find(name + prefix);
}

/* Whether communicator variable comm_id is bound to a window. */
static bool bound_to_window(int comm_id)
{
    const int peer = comm_id - SPC_NUM_COMM_COUNTERS;
    return peer >= 0 && peer < SPC_NUM_PEER_COUNTERS && spc_peer_counter_infos[peer].window;
}

/* The process-wide histogram of a variable's name, or -1. */
static int histogram_of(const char *name)
{
    const size_t prefix = strlen(SPC_HISTOGRAM_PVAR_PREFIX);
    for (int id = 0; strncmp(name, SPC_HISTOGRAM_PVAR_PREFIX, prefix) == 0 && id < SPC_NUM_HISTOGRAMS; ++id) {
        if (strcmp(name + prefix, spc_histogram_infos[id].name) == 0) {
            return id;
        }
    }
    return -1;
}

/* Its kind and a text its description holds. */
static spc_kind comm_kind(int comm_id, const char **description)
{
    if (comm_id >= SPC_NUM_COMM_COUNTERS + SPC_NUM_PEER_COUNTERS) {
        *description =
            spc_histogram_infos[(comm_id - SPC_NUM_COMM_COUNTERS - SPC_NUM_PEER_COUNTERS) % SPC_NUM_HISTOGRAMS]
                .description;
        return SPC_KIND_COUNTER;
    }
    if (comm_id >= SPC_NUM_COMM_COUNTERS) {
        *description = spc_peer_counter_infos[comm_id - SPC_NUM_COMM_COUNTERS].description;
        return spc_peer_counter_infos[comm_id - SPC_NUM_COMM_COUNTERS].kind;
    }
    const spc_counter_info *counter = &spc_counter_infos[spc_comm_counter_infos[comm_id].counter];
    *description = counter->description;
    return counter->kind;
}

static void check_registration(void)
{
    int num;
    MPI_OK(MPI_T_pvar_get_num(&num));
    int found = 0, found_comm = 0, found_histograms = 0;
    for (int index = 0; index < num; ++index) {
        char name[256], description[1024];
        int name_len = sizeof name, desc_len = sizeof description;
        int verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        if (MPI_T_pvar_get_info(index, name, &name_len, &verbosity, &var_class, &datatype,
                                &enumtype, description, &desc_len, &bind, &readonly,
                                &continuous, &atomic) != MPI_SUCCESS) {
            continue;
        }
        if (strncmp(name, SPC_PVAR_PREFIX, strlen(SPC_PVAR_PREFIX)) != 0) {
            continue;
        }
        if (strncmp(name, SPC_HISTOGRAM_PVAR_PREFIX, strlen(SPC_HISTOGRAM_PVAR_PREFIX)) == 0) {
            int histogram = histogram_of(name);
            CHECK(histogram >= 0, "%s is not a histogram of the catalogue", name);
            found_histograms += histogram >= 0;
            CHECK(histogram < 0 || strstr(description, spc_histogram_infos[histogram].description) != NULL,
                  "%s: description", name);
            CHECK(!continuous && !readonly && bind == MPI_T_BIND_NO_OBJECT &&
                      var_class == MPI_T_PVAR_CLASS_COUNTER && datatype == MPI_UNSIGNED_LONG_LONG,
                  "%s: a process-wide counter array", name);
            continue;
        }
        if (strncmp(name, SPC_COMM_PVAR_PREFIX, strlen(SPC_COMM_PVAR_PREFIX)) == 0 ||
            strncmp(name, SPC_WIN_PVAR_PREFIX, strlen(SPC_WIN_PVAR_PREFIX)) == 0) {
            int comm_id = comm_counter_of(name);
            CHECK(comm_id >= 0, "%s is not a communicator or window counter of the catalogue", name);
            if (comm_id < 0) {
                continue;
            }
            ++found_comm;
            const char *holds;
            spc_kind kind = comm_kind(comm_id, &holds);
            CHECK(strstr(description, holds) != NULL, "%s: description", name);
            CHECK(datatype == MPI_UNSIGNED_LONG_LONG, "%s: datatype", name);
            CHECK(!continuous, "%s: not continuous", name);
            CHECK(readonly == (kind == SPC_KIND_LEVEL), "%s: only levels are read-only (cannot be reset)", name);
            CHECK(bind == (bound_to_window(comm_id) ? MPI_T_BIND_MPI_WIN : MPI_T_BIND_MPI_COMM), "%s: bind %d", name,
                  bind);
            CHECK(var_class == expected_class[kind], "%s: class %d", name, var_class);
            continue;
        }
        int id = spc_counter_find(name + 12);
        CHECK(id >= 0, "%s is not in the catalogue", name);
        if (id < 0) {
            continue;
        }
        ++found;
        CHECK(counted(id), "%s has a variable, but pml %s does not count it", name, pml);
        CHECK(strcmp(description, spc_counter_infos[id].description) == 0, "%s: description", name);
        CHECK(datatype == MPI_UNSIGNED_LONG_LONG, "%s: datatype", name);
        CHECK(!continuous, "%s must not be continuous", name);
        CHECK(readonly == (spc_counter_infos[id].kind == SPC_KIND_LEVEL),
              "%s: only levels are read-only (cannot be reset)", name);
        CHECK(bind == MPI_T_BIND_NO_OBJECT, "%s: bind", name);
        CHECK(var_class == expected_class[spc_counter_infos[id].kind], "%s: class %d", name, var_class);
    }
    /* names are unique in the catalogue, so one per counter means no duplicate */
    CHECK_EQ_U64(found, how_many(OMPI_SPC_NUM_COUNTERS, counted), SPC_PVAR_PREFIX " variables");
    CHECK_EQ_U64(found_comm, how_many(NUM_COMM_PVARS, comm_offered),
                 SPC_COMM_PVAR_PREFIX " and " SPC_WIN_PVAR_PREFIX " variables");
    CHECK_EQ_U64(found_histograms, SPC_NUM_HISTOGRAMS, SPC_HISTOGRAM_PVAR_PREFIX " variables");
}

/* Sends (rank 0) or receives (rank 1) count blocking messages of 8 bytes. */
/* The categories: a root "spc" whose children are leaves, every SPC variable
 * in exactly one leaf, names unique, descriptions present. */
static void check_categories(void)
{
    int num, root = -1;
    MPI_OK(MPI_T_category_get_num(&num));
    int *seen = calloc(OMPI_SPC_NUM_COUNTERS, sizeof *seen);
    int seen_comm[NUM_COMM_PVARS] = {0}, seen_histograms[SPC_NUM_HISTOGRAMS] = {0};
    int leaves = 0;
    for (int category = 0; category < num; ++category) {
        char name[256], description[1024];
        int name_len = sizeof name, desc_len = sizeof description;
        int num_cvars, num_pvars, num_categories;
        /* Open MPI keeps the indices of groups it deregistered, which then
         * fail; ours are checked by the counts below. */
        if (MPI_T_category_get_info(category, name, &name_len, description, &desc_len, &num_cvars,
                                    &num_pvars, &num_categories) != MPI_SUCCESS ||
            (strcmp(name, "spc") != 0 && strncmp(name, "spc_", 4) != 0)) {
            continue;
        }
        CHECK(strlen(description) > 10, "category %s has no description", name);
        if (strcmp(name, "spc") == 0) {
            root = category;
            CHECK(num_pvars == 0 && num_categories == SPC_NUM_CATEGORIES - 1,
                  "spc: %d variables, %d subcategories", num_pvars, num_categories);
            continue;
        }
        ++leaves;
        CHECK(spc_category_find(name) > 0, "%s is not a catalogue category", name);
        CHECK(num_categories == 0, "%s is not a leaf", name);
        int indices[OMPI_SPC_NUM_COUNTERS];
        /* a leaf may be empty: spc_timers holds only what ob1 alone counts */
        CHECK(num_pvars >= 0 && num_pvars <= OMPI_SPC_NUM_COUNTERS, "%s: %d variables", name, num_pvars);
        if (num_pvars <= 0 || num_pvars > OMPI_SPC_NUM_COUNTERS) {
            continue;
        }
        MPI_OK(MPI_T_category_get_pvars(category, num_pvars, indices));
        for (int i = 0; i < num_pvars; ++i) {
            char pvar[256];
            int pvar_len = sizeof pvar, verbosity, var_class, bind, readonly, continuous, atomic;
            MPI_Datatype datatype;
            MPI_T_enum enumtype;
            MPI_OK(MPI_T_pvar_get_info(indices[i], pvar, &pvar_len, &verbosity, &var_class,
                                       &datatype, &enumtype, NULL, NULL, &bind, &readonly,
                                       &continuous, &atomic));
            int comm_id = comm_counter_of(pvar);
            if (comm_id >= 0) {
                ++seen_comm[comm_id];
                CHECK(strcmp(name, "spc_traffic") == 0, "%s is in %s", pvar, name);
                continue;
            }
            if (histogram_of(pvar) >= 0) {
                ++seen_histograms[histogram_of(pvar)];
                CHECK(strcmp(name, "spc_traffic") == 0, "%s is in %s", pvar, name);
                continue;
            }
            int id = strncmp(pvar, SPC_PVAR_PREFIX, strlen(SPC_PVAR_PREFIX)) == 0 ? spc_counter_find(pvar + strlen(SPC_PVAR_PREFIX)) : -1;
            CHECK(id >= 0, "%s holds %s", name, pvar);
            if (id >= 0) {
                ++seen[id];
                CHECK(strcmp(spc_category_infos[spc_counter_infos[id].category].name, name) == 0,
                      "%s is in %s", pvar, name);
            }
        }
    }
    CHECK(root >= 0, "no category \"spc\"");
    CHECK_EQ_U64(leaves, SPC_NUM_CATEGORIES - 1, "leaf categories");
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        CHECK(seen[id] == counted(id), "%s is in %d categories under pml %s", spc_counter_infos[id].name, seen[id],
              pml);
    }
    for (int id = 0; id < NUM_COMM_PVARS; ++id) {
        CHECK(seen_comm[id] == comm_offered(id), "communicator variable %d is in %d categories under pml %s", id,
              seen_comm[id], pml);
    }
    for (int id = 0; id < SPC_NUM_HISTOGRAMS; ++id) {
        CHECK(seen_histograms[id] == 1, "%s is in %d categories", spc_histogram_infos[id].name,
              seen_histograms[id]);
    }
    free(seen);
}

/* Null, freed and foreign handles and a null session give MPI_T errors. */
static void check_misuse(void)
{
    MPI_T_pvar_session mine, other;
    MPI_OK(MPI_T_pvar_session_create(&mine));
    MPI_OK(MPI_T_pvar_session_create(&other));
    MPI_T_pvar_handle foreign = started_handle(other, "SEND");
    unsigned long long value = 0;
    CHECK(MPI_T_pvar_read(mine, foreign, &value) == MPI_T_ERR_INVALID_HANDLE, "read, foreign");
    CHECK(MPI_T_pvar_readreset(mine, foreign, &value) == MPI_T_ERR_INVALID_HANDLE, "readreset, foreign");
    CHECK(MPI_T_pvar_write(mine, foreign, &value) == MPI_T_ERR_INVALID_HANDLE, "write, foreign");
    CHECK(MPI_T_pvar_stop(mine, foreign) == MPI_T_ERR_INVALID_HANDLE, "stop, foreign");
    CHECK(MPI_T_pvar_start(mine, foreign) == MPI_T_ERR_INVALID_HANDLE, "start, foreign");
    CHECK(MPI_T_pvar_reset(mine, foreign) == MPI_T_ERR_INVALID_HANDLE, "reset, foreign");
    CHECK(MPI_T_pvar_handle_free(mine, &foreign) == MPI_T_ERR_INVALID_HANDLE, "free, foreign");

    MPI_T_pvar_handle freed = started_handle(mine, "RECV");
    MPI_OK(MPI_T_pvar_handle_free(mine, &freed));
    CHECK(freed == MPI_T_PVAR_HANDLE_NULL, "a freed handle is MPI_T_PVAR_HANDLE_NULL");
    CHECK(MPI_T_pvar_read(mine, freed, &value) == MPI_T_ERR_INVALID_HANDLE, "read, freed");
    CHECK(MPI_T_pvar_start(mine, freed) == MPI_T_ERR_INVALID_HANDLE, "start, freed");
    CHECK(MPI_T_pvar_handle_free(mine, &freed) == MPI_T_ERR_INVALID_HANDLE, "free, freed");
    CHECK(MPI_T_pvar_read(MPI_T_PVAR_SESSION_NULL, foreign, &value) == MPI_T_ERR_INVALID_SESSION,
          "read, null session");
    CHECK(MPI_T_pvar_start(MPI_T_PVAR_SESSION_NULL, MPI_T_PVAR_ALL_HANDLES) == MPI_T_ERR_INVALID_SESSION,
          "start all, null session");

    MPI_OK(MPI_T_pvar_session_free(&other));
    MPI_OK(MPI_T_pvar_session_free(&mine));
}

static void ping(int count, int tag)
{
    char buffer[8] = {0};
    for (int i = 0; i < count; ++i) {
        if (test_rank == 0) {
            MPI_OK(MPI_Send(buffer, sizeof buffer, MPI_CHAR, 1, tag, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Recv(buffer, sizeof buffer, MPI_CHAR, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    }
}

static void check_sessions(void)
{
    const char *calls = test_rank == 0 ? "SEND" : "RECV";
    MPI_T_pvar_session first, second;
    MPI_OK(MPI_T_pvar_session_create(&first));
    MPI_OK(MPI_T_pvar_session_create(&second));

    /* Not attached and not started: the counter is off. */
    MPI_T_pvar_handle idle;
    int count;
    MPI_OK(MPI_T_pvar_handle_alloc(first, spc_pvar(calls), NULL, &idle, &count));
    ping(4, 1);
    CHECK_EQ_U64(read_handle(first, idle), 0, "a handle never started");

    MPI_T_pvar_handle a = started_handle(first, calls);
    ping(10, 1);
    MPI_T_pvar_handle b = started_handle(second, calls);
    ping(5, 1);
    CHECK_EQ_U64(read_handle(first, a), 15, "session 1 after 15 calls");
    CHECK_EQ_U64(read_handle(second, b), 5, "session 2, started after 10 of them");

    MPI_OK(MPI_T_pvar_stop(first, a));
    ping(3, 1);
    CHECK_EQ_U64(read_handle(first, a), 15, "a stopped handle is frozen");
    CHECK_EQ_U64(read_handle(second, b), 8, "the other session still counts");

    MPI_OK(MPI_T_pvar_reset(second, b));
    CHECK_EQ_U64(read_handle(second, b), 0, "after reset");
    ping(2, 1);
    unsigned long long value = 0;
    MPI_OK(MPI_T_pvar_readreset(second, b, &value));
    CHECK_EQ_U64(value, 2, "readreset returns the value");
    CHECK_EQ_U64(read_handle(second, b), 0, "readreset resets");

    unsigned long long forty_two = 42;
    CHECK(MPI_T_pvar_write(second, b, &forty_two) == MPI_T_ERR_PVAR_NO_WRITE, "a counter cannot be written");
    CHECK_EQ_U64(read_handle(second, b), 0, "a refused write changes nothing");
    ping(3, 1);
    MPI_OK(MPI_T_pvar_reset(second, MPI_T_PVAR_ALL_HANDLES));
    CHECK_EQ_U64(read_handle(second, b), 0, "reset of all handles of a session");

    MPI_OK(MPI_T_pvar_start(first, a));
    ping(1, 1);
    CHECK_EQ_U64(read_handle(first, a), 16, "restarted handle adds to its value");

    MPI_OK(MPI_T_pvar_session_free(&second));
    MPI_OK(MPI_T_pvar_handle_free(first, &a));
    MPI_OK(MPI_T_pvar_handle_free(first, &idle));
    MPI_OK(MPI_T_pvar_session_free(&first));
}

static void check_bytes(void)
{
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle user_sent = started_handle(session, "BYTES_SENT_USER");
    MPI_T_pvar_handle user_received = started_handle(session, "BYTES_RECEIVED_USER");
    MPI_T_pvar_handle mpi_sent = started_handle(session, "BYTES_SENT_MPI");
    MPI_T_pvar_handle mpi_received = started_handle(session, "BYTES_RECEIVED_MPI");

    char *buffer = calloc(4 << 20, 1);
    unsigned long long user_bytes = 0;
    for (int i = 0; i < NUM_SIZES; ++i) {
        user_bytes += (unsigned long long)sizes[i];
        if (test_rank == 0) {
            MPI_OK(MPI_Send(buffer, sizes[i], MPI_CHAR, 1, 7, MPI_COMM_WORLD));
        } else {
            /* a wildcard receive is still a user message */
            MPI_OK(MPI_Recv(buffer, sizes[i], MPI_CHAR, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        if (i == NUM_SIZES / 2) {
            /* library traffic between user messages */
            MPI_OK(MPI_Bcast(buffer, 100000, MPI_CHAR, 0, MPI_COMM_WORLD));
        }
    }
    free(buffer);

    if (test_rank == 0) {
        CHECK_EQ_U64(read_handle(session, user_sent), user_bytes, "BYTES_SENT_USER");
        CHECK(read_handle(session, mpi_sent) >= 100000, "BYTES_SENT_MPI %llu holds the Bcast",
              read_handle(session, mpi_sent));
        CHECK_EQ_U64(read_handle(session, user_received), 0, "BYTES_RECEIVED_USER of the sender");
    } else {
        CHECK_EQ_U64(read_handle(session, user_received), user_bytes, "BYTES_RECEIVED_USER");
        CHECK(read_handle(session, mpi_received) >= 100000, "BYTES_RECEIVED_MPI %llu holds the Bcast",
              read_handle(session, mpi_received));
        CHECK_EQ_U64(read_handle(session, user_sent), 0, "BYTES_SENT_USER of the receiver");
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* Matched probes: the receiver counts its own calls, the counters must agree. */
static void check_matched_probes(void)
{
    enum { BLOCKING = 3, NONBLOCKING = 4 };
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    const char *names[] = {"MPROBE", "MRECV", "IMPROBE", "IMRECV"};
    MPI_T_pvar_handle handles[4];
    for (int i = 0; i < 4; ++i) {
        handles[i] = started_handle(session, names[i]);
    }
    unsigned long long improbe_calls = 0;
    int value = 0;
    for (int i = 0; i < BLOCKING + NONBLOCKING; ++i) {
        if (test_rank == 0) {
            MPI_OK(MPI_Send(&i, 1, MPI_INT, 1, 11, MPI_COMM_WORLD));
            continue;
        }
        MPI_Message message;
        if (i < BLOCKING) {
            MPI_OK(MPI_Mprobe(0, 11, MPI_COMM_WORLD, &message, MPI_STATUS_IGNORE));
            MPI_OK(MPI_Mrecv(&value, 1, MPI_INT, &message, MPI_STATUS_IGNORE));
        } else {
            MPI_Request request;
            for (int flag = 0; !flag; ++improbe_calls) {
                MPI_OK(MPI_Improbe(0, 11, MPI_COMM_WORLD, &flag, &message, MPI_STATUS_IGNORE));
            }
            MPI_OK(MPI_Imrecv(&value, 1, MPI_INT, &message, &request));
            MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
        }
        CHECK(value == i, "message %d arrived as %d", i, value);
    }
    const unsigned long long expected[4] = {BLOCKING, BLOCKING, improbe_calls, NONBLOCKING};
    for (int i = 0; i < 4; ++i) {
        CHECK_EQ_U64(read_handle(session, handles[i]), test_rank == 1 ? expected[i] : 0, names[i]);
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* DUPS duplicates of MPI_COMM_WORLD on every rank, and one of a duplicate:
 * COMM_DUP counts exactly DUPS + 1 calls on each rank. */
static void check_comm_dup(void)
{
    enum { DUPS = 3 };
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle handle = started_handle(session, "COMM_DUP");
    MPI_Comm copies[DUPS + 1];
    for (int i = 0; i < DUPS; ++i) {
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &copies[i]));
    }
    MPI_OK(MPI_Comm_dup(copies[0], &copies[DUPS]));
    CHECK_EQ_U64(read_handle(session, handle), DUPS + 1, "COMM_DUP");
    for (int i = 0; i <= DUPS; ++i) {
        MPI_OK(MPI_Comm_free(&copies[i]));
    }
    MPI_OK(MPI_T_pvar_session_free(&session));
}

/* The one-sided accumulates: each rank makes a known number of each call on
 * the other's window, checks the values they leave and fetch, and the six
 * counters must be those numbers exactly. */
static void check_accumulates(void)
{
    enum { ACC = 3, RACC = 2, GET_ACC = 4, RGET_ACC = 1, FETCH = 5, CAS = 2 };
    const char *names[] = {"ACCUMULATE",      "RACCUMULATE",  "GET_ACCUMULATE",
                           "RGET_ACCUMULATE", "FETCH_AND_OP", "COMPARE_AND_SWAP"};
    const unsigned long long expected[] = {ACC, RACC, GET_ACC, RGET_ACC, FETCH, CAS};
    MPI_T_pvar_session session;
    MPI_OK(MPI_T_pvar_session_create(&session));
    MPI_T_pvar_handle handles[6];
    for (int i = 0; i < 6; ++i) {
        handles[i] = started_handle(session, names[i]);
    }
    int *cell;
    MPI_Win window;
    MPI_OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &cell, &window));
    *cell = 0;
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));  /* each cell is 0 before the other's adds */
    const int peer = 1 - test_rank, one = 1;
    int fetched = 0, compare = -1, result;
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, window));
    for (int i = 0; i < ACC; ++i) {
        MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, peer, 0, 1, MPI_INT, MPI_SUM, window));
    }
    for (int i = 0; i < RACC; ++i) {
        MPI_Request request;
        MPI_OK(MPI_Raccumulate(&one, 1, MPI_INT, peer, 0, 1, MPI_INT, MPI_SUM, window, &request));
        MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    }
    for (int i = 0; i < GET_ACC; ++i) {
        MPI_OK(MPI_Get_accumulate(&one, 1, MPI_INT, &result, 1, MPI_INT, peer, 0, 1, MPI_INT, MPI_SUM, window));
    }
    MPI_Request request;
    MPI_OK(MPI_Rget_accumulate(&one, 1, MPI_INT, &result, 1, MPI_INT, peer, 0, 1, MPI_INT, MPI_SUM, window,
                               &request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    for (int i = 0; i < FETCH; ++i) {
        MPI_OK(MPI_Fetch_and_op(&one, &fetched, MPI_INT, peer, 0, MPI_SUM, window));
    }
    for (int i = 0; i < CAS; ++i) {  /* the cell is never -1: no swap */
        MPI_OK(MPI_Compare_and_swap(&one, &compare, &result, MPI_INT, peer, 0, window));
    }
    MPI_OK(MPI_Win_unlock(peer, window));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));  /* the other's epoch on this cell is over */
    const int adds = ACC + RACC + GET_ACC + RGET_ACC + FETCH;
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, test_rank, 0, window));
    const int mine = *cell;
    MPI_OK(MPI_Win_unlock(test_rank, window));
    CHECK(mine == adds, "the window holds %d after %d adds", mine, adds);
    CHECK(fetched == adds - 1, "the last fetch saw %d, not %d", fetched, adds - 1);
    for (int i = 0; i < 6; ++i) {
        CHECK_EQ_U64(read_handle(session, handles[i]), expected[i], names[i]);
    }
    MPI_OK(MPI_Win_free(&window));
    MPI_OK(MPI_T_pvar_session_free(&session));
}

int main(int argc, char **argv)
{
    int provided;
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc > 2) {
        fprintf(stderr, "usage: mpirun -np 2 mpit_semantics [PML, the job's: ob1 (default), ucx or cm]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (argc == 2) {
        pml = argv[1];
    }

    check_registration();
    check_categories();
    check_misuse();
    check_sessions();
    check_bytes();
    check_matched_probes();
    check_comm_dup();
    check_accumulates();

    /* A handle that outlives MPI_Finalize reads its final value: rank 0's
     * LATE_SENDS sends after its start. */
    enum { LATE_SENDS = 3 };
    MPI_T_pvar_session late;
    MPI_T_pvar_handle send;
    MPI_OK(MPI_T_pvar_session_create(&late));
    send = started_handle(late, "SEND");
    for (int i = 0; i < LATE_SENDS; ++i) {
        int value = i;
        if (0 == test_rank) {
            MPI_OK(MPI_Send(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Recv(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    }
    MPI_OK(MPI_Finalize());
    CHECK_EQ_U64(read_handle(late, send), 0 == test_rank ? LATE_SENDS : 0, "SEND after MPI_Finalize");
    MPI_OK(MPI_T_pvar_session_free(&late));
    /* After MPI_Finalize: stock Open MPI 4.1.4 crashed here (patch
     * "mpit: MPI_T and SPC from the first init to the last finalize"). */
    MPI_OK(MPI_T_finalize());
    return finish("mpit_semantics");
}
