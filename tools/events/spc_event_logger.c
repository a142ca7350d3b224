/*
 * spc-event-logger: records ob1's MPI_T events of an unchanged application
 * (the MEL logger of seed 000, as a tool).  Loaded with LD_PRELOAD (or
 * `mpirun -x LD_PRELOAD=...`), it wraps MPI_Init, the communicator
 * constructors (WATCHED below), MPI_Comm_free and MPI_Finalize through the
 * PMPI layer, allocates a handle for every chosen event on every
 * communicator the application makes, and
 * writes per rank:
 *   DIR/spc-events.RANK.csv      one row per event, timestamps in seconds
 *   DIR/spc-events.RANK.profile  queue profiles: messages queued, the longest
 *                                queue, time in queue (total, mean, min, max);
 *                                search profiles: searches, time per search;
 *                                and the UNEXPECTED and OUT_OF_SEQUENCE
 *                                counters read through MPI_T over the same run
 * Environment: SPC_EVENTS (names, with or without ompi_pml_ob1_, comma
 * separated; default every event), SPC_EVENTS_DIR (default spc-events).
 * Callbacks are registered at THREAD_SAFE, valid wherever ob1 raises, so
 * they run at once; the logger never stops the job: a folder it cannot
 * write, or a full disk, gives one message and the job goes on.  One case
 * stops it, before MPI_Init: a rank that Open MPI 5's mpirun started on an
 * Open MPI 4 libmpi (spc_launcher_check.h), which would run alone or fail
 * in MPI_Init; each rank says why in one line and exits with status 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "spc/names.h"
#include "spc/spc_mpit_client.h"
#include "spc_launcher_check.h"

#define PREFIX SPC_EVENT_PREFIX
#define MAX_EVENTS 32
#define MAX_COMMS 4096

/* The queues an insert/remove pair of events describes. */
enum queue { UNEXPECTED_Q, POSTED_Q, OOS_Q, NUM_QUEUES };
static const char *const queue_names[NUM_QUEUES] = {"unexpected", "posted", "out_of_sequence"};
static const struct {
    const char *insert, *remove;
} queue_events[NUM_QUEUES] = {{"unexpected_insert", "unexpected_remove"},
                              {"posted_insert", "posted_remove"},
                              {"oos_hold", "oos_release"}};

/* The searches a begin/end pair of events describes; a thread raises the
 * two back to back, so each source pairs its own. */
enum search { POSTED_SEARCH, UNEXPECTED_SEARCH, NUM_SEARCHES };
static const char *const search_names[NUM_SEARCHES] = {"search_posted", "search_unexpected"};
#define MAX_SOURCES 1024

/* The elements a row holds, looked up by name in each event's enumeration. */
enum element { COMM_ID, SOURCE, DEST, TAG, SEQUENCE, SIZE, REQUEST, NUM_ELEMENTS };
static const char *const element_names[NUM_ELEMENTS] = {"comm_id", "source", "dest", "tag",
                                                        "sequence", "size", "request"};

struct event_type {
    char name[96];
    int index, chosen;
    int queue, inserts;  /* queue is -1 if the event is no queue's */
    int search, begins;  /* search is -1 if the event is no search's */
    int element[NUM_ELEMENTS];
};

struct waiting {  /* an entry in a queue: its request and when it went in */
    struct waiting *next;
    int queue;
    uint64_t request;
    MPI_Count since;
};

struct queue_profile {
    unsigned long long messages, removed;
    long long length, longest;
    double total, min, max;  /* seconds */
};

static struct {
    int on, rank;
    pthread_mutex_t lock;
    struct event_type types[MAX_EVENTS];
    int num_types;
    double ticks_per_second;
    FILE *csv;
    char csv_path[4096], profile_path[4096];
    int write_failed;
    unsigned long long recorded, dropped;
    struct waiting *waiting[4096];
    struct queue_profile queues[NUM_QUEUES];
    struct queue_profile searches[NUM_SEARCHES];  /* messages: searches; removed: ended */
    MPI_Count search_began[NUM_SEARCHES][MAX_SOURCES];
    struct {
        MPI_Comm comm;
        MPI_T_event_registration registrations[MAX_EVENTS];
    } comms[MAX_COMMS];
    int num_comms;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle unexpected, out_of_sequence;
    int have_counters;
} logger = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "spc-event-logger (rank %d): ", logger.rank);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}

/* ---- recording (callbacks, under the logger's lock) ------------------------------- */

static struct waiting **slot(int queue, uint64_t request)
{
    return &logger.waiting[(request >> 4 ^ (uint64_t)queue) % (sizeof logger.waiting / sizeof logger.waiting[0])];
}

static void account(const struct event_type *type, uint64_t request, MPI_Count ticks)
{
    if (type->queue < 0) {
        return;
    }
    struct queue_profile *q = &logger.queues[type->queue];
    struct waiting **head = slot(type->queue, request);
    if (type->inserts) {
        struct waiting *w = malloc(sizeof *w);
        if (NULL != w) {
            *w = (struct waiting){*head, type->queue, request, ticks};
            *head = w;
        }
        ++q->messages;
        if (++q->length > q->longest) {
            q->longest = q->length;
        }
        return;
    }
    --q->length;
    for (struct waiting **w = head; NULL != *w; w = &(*w)->next) {
        if ((*w)->queue == type->queue && (*w)->request == request) {
            struct waiting *found = *w;
            const double seconds = (double)(ticks - found->since) / logger.ticks_per_second;
            q->total += seconds;
            q->min = 0 == q->removed++ || seconds < q->min ? seconds : q->min;
            q->max = seconds > q->max ? seconds : q->max;
            *w = found->next;
            free(found);
            return;
        }
    }
}

static void time_search(const struct event_type *type, int source, MPI_Count ticks)
{
    if (type->search < 0 || source < 0 || source >= MAX_SOURCES) {
        return;
    }
    struct queue_profile *p = &logger.searches[type->search];
    if (type->begins) {
        logger.search_began[type->search][source] = ticks;
        ++p->messages;
        return;
    }
    const double seconds = (double)(ticks - logger.search_began[type->search][source]) / logger.ticks_per_second;
    p->total += seconds;
    p->min = 0 == p->removed++ || seconds < p->min ? seconds : p->min;
    p->max = seconds > p->max ? seconds : p->max;
}

static void write_row(const struct event_type *type, const long long values[NUM_ELEMENTS], MPI_Count ticks)
{
    if (NULL == logger.csv || logger.write_failed) {
        return;
    }
    if (fprintf(logger.csv, "%.9f,%s,%lld,%lld,%lld,%lld,%lld,%lld,%llu\n",
                (double)ticks / logger.ticks_per_second, type->name + strlen(PREFIX), values[COMM_ID],
                values[SOURCE], values[DEST], values[TAG], values[SEQUENCE], values[SIZE],
                (unsigned long long)values[REQUEST]) < 0) {
        logger.write_failed = 1;
        say("cannot write %s (%s): the rest of this rank's events are counted, not written",
            logger.csv_path, strerror(errno));
    }
}

static void on_event(MPI_T_event_instance instance, MPI_T_event_registration registration,
                     MPI_T_cb_safety safety, void *user_data)
{
    (void)registration, (void)safety;
    const struct event_type *type = user_data;
    long long values[NUM_ELEMENTS] = {0};
    for (int e = 0; e < NUM_ELEMENTS; ++e) {
        /* elements are 4 or 8 bytes; read into the low end, then widen */
        union {
            int32_t i32;
            int64_t i64;
            unsigned char bytes[8];
        } value = {.i64 = 0};
        if (type->element[e] < 0 || MPI_SUCCESS != MPI_T_event_read(instance, type->element[e], &value)) {
            continue;
        }
        values[e] = e == SIZE || e == REQUEST ? value.i64
                    : e == COMM_ID || e == SEQUENCE ? (long long)(uint32_t)value.i32 : value.i32;
    }
    MPI_Count ticks = 0;
    int source = -1;
    MPI_T_event_get_timestamp(instance, &ticks);
    MPI_T_event_get_source(instance, &source);
    pthread_mutex_lock(&logger.lock);
    if (0 == logger.ticks_per_second) {  /* sources exist once events are raised */
        MPI_Count ticks_per_second = 0;
        MPI_T_source_get_info(source, NULL, NULL, NULL, NULL, NULL, &ticks_per_second, NULL, NULL);
        logger.ticks_per_second = ticks_per_second > 0 ? (double)ticks_per_second : 1;
    }
    ++logger.recorded;
    write_row(type, values, ticks);
    account(type, (uint64_t)values[REQUEST], ticks);
    time_search(type, source, ticks);
    pthread_mutex_unlock(&logger.lock);
}

static void on_dropped(MPI_Count count, MPI_T_event_registration registration, int source,
                       MPI_T_cb_safety safety, void *user_data)
{
    (void)registration, (void)source, (void)safety, (void)user_data;
    pthread_mutex_lock(&logger.lock);
    logger.dropped += (unsigned long long)count;
    pthread_mutex_unlock(&logger.lock);
}

/* ---- set-up ------------------------------------------------------------------------ */

static int element_index(MPI_T_enum names, int num_elements, const char *name)
{
    for (int i = 0; i < num_elements; ++i) {
        char item[64];
        int value, length = sizeof item;
        if (MPI_SUCCESS == MPI_T_enum_get_item(names, i, &value, item, &length) && 0 == strcmp(item, name)) {
            return value;
        }
    }
    return -1;
}

/* Marks the events SPC_EVENTS names (all without it); unknown names are said. */
static void choose(const char *list)
{
    for (int t = 0; t < logger.num_types; ++t) {
        logger.types[t].chosen = NULL == list || '\0' == list[0];
    }
    if (NULL == list || '\0' == list[0]) {
        return;
    }
    char *copy = strdup(list), *rest = copy, *name;
    while (NULL != copy && NULL != (name = strsep(&rest, ","))) {
        if ('\0' == name[0]) {
            continue;
        }
        int found = 0;
        for (int t = 0; t < logger.num_types; ++t) {
            const char *short_name = logger.types[t].name + strlen(PREFIX);
            if (0 == strcmp(name, logger.types[t].name) || 0 == strcmp(name, short_name)) {
                logger.types[t].chosen = found = 1;
            }
        }
        if (!found && 0 == logger.rank) {
            char known[1024] = "";
            for (int t = 0; t < logger.num_types; ++t) {
                strncat(known, t ? ", " : "", sizeof known - strlen(known) - 1);
                strncat(known, logger.types[t].name + strlen(PREFIX), sizeof known - strlen(known) - 1);
            }
            say("SPC_EVENTS: no event named '%s' (known: %s); it is ignored", name, known);
        }
    }
    free(copy);
}

static void describe_events(void)
{
    int num = 0;
    MPI_T_event_get_num(&num);
    for (int t = 0; t < num && logger.num_types < MAX_EVENTS; ++t) {
        struct event_type *type = &logger.types[logger.num_types];
        int length = sizeof type->name, num_elements = 0;
        MPI_T_enum names = MPI_T_ENUM_NULL;
        if (MPI_SUCCESS != MPI_T_event_get_info(t, type->name, &length, NULL, NULL, NULL, &num_elements,
                                                &names, NULL, NULL, NULL, NULL) ||
            0 != strncmp(type->name, PREFIX, strlen(PREFIX))) {
            continue;
        }
        type->index = t;
        for (int e = 0; e < NUM_ELEMENTS; ++e) {
            type->element[e] = element_index(names, num_elements, element_names[e]);
        }
        type->queue = type->search = -1;
        for (int k = 0; k < NUM_SEARCHES; ++k) {
            const size_t length_k = strlen(search_names[k]);
            const char *short_name = type->name + strlen(PREFIX);
            if (0 == strncmp(short_name, search_names[k], length_k) && '_' == short_name[length_k]) {
                type->search = k;
                type->begins = 0 == strcmp(short_name + length_k, "_begin");
            }
        }
        for (int q = 0; q < NUM_QUEUES; ++q) {
            const char *short_name = type->name + strlen(PREFIX);
            if (0 == strcmp(short_name, queue_events[q].insert) || 0 == strcmp(short_name, queue_events[q].remove)) {
                type->queue = q;
                type->inserts = 0 == strcmp(short_name, queue_events[q].insert);
            }
        }
        ++logger.num_types;
    }
}

static void open_output(void)
{
    const char *dir = getenv("SPC_EVENTS_DIR");
    if (NULL == dir || '\0' == dir[0]) {
        dir = "spc-events";
    }
    if (0 != mkdir(dir, 0755) && EEXIST != errno) {
        say("cannot create the folder %s (SPC_EVENTS_DIR): %s; this rank's events are counted, not written",
            dir, strerror(errno));
        return;
    }
    snprintf(logger.csv_path, sizeof logger.csv_path, "%s/spc-events.%d.csv", dir, logger.rank);
    snprintf(logger.profile_path, sizeof logger.profile_path, "%s/spc-events.%d.profile", dir, logger.rank);
    logger.csv = fopen(logger.csv_path, "w");
    if (NULL == logger.csv) {
        say("cannot write %s: %s; this rank's events are counted, not written", logger.csv_path, strerror(errno));
        return;
    }
    fputs("seconds,event,comm_id,source,dest,tag,sequence,size,request\n", logger.csv);
}

/* A started handle on the process-wide variable of counter name (without
 * OMPI_SPC_), found as every client of ours finds it. */
static int started(const char *name, MPI_T_pvar_handle *handle)
{
    int index = spc_pvar_find(name), count;
    return index >= 0 && MPI_SUCCESS == MPI_T_pvar_handle_alloc(logger.session, index, NULL, handle, &count) &&
           MPI_SUCCESS == MPI_T_pvar_start(logger.session, *handle);
}

/* Handles for every chosen event on comm. */
static void watch(MPI_Comm comm)
{
    if (!logger.on || MPI_COMM_NULL == comm) {
        return;
    }
    pthread_mutex_lock(&logger.lock);
    int c = 0;
    while (c < logger.num_comms && MPI_COMM_NULL != logger.comms[c].comm) {
        ++c;  /* a freed communicator's place is taken again */
    }
    if (c == MAX_COMMS) {
        pthread_mutex_unlock(&logger.lock);
        say("more than %d communicators at once: the later ones are not watched", MAX_COMMS);
        return;
    }
    logger.num_comms += c == logger.num_comms;
    logger.comms[c].comm = comm;
    pthread_mutex_unlock(&logger.lock);
    for (int t = 0; t < logger.num_types; ++t) {
        MPI_T_event_registration *r = &logger.comms[c].registrations[t];
        *r = NULL;
        if (!logger.types[t].chosen || MPI_SUCCESS != MPI_T_event_handle_alloc(logger.types[t].index, &comm, MPI_INFO_NULL, r)) {
            *r = NULL;
            continue;
        }
        MPI_T_event_register_callback(*r, MPI_T_CB_REQUIRE_THREAD_SAFE, MPI_INFO_NULL, &logger.types[t], on_event);
        MPI_T_event_set_dropped_handler(*r, on_dropped);
    }
}

/* Under the lock, which callbacks take too: handle_free does not wait for
 * them. */
static void unwatch(MPI_Comm comm)
{
    pthread_mutex_lock(&logger.lock);
    for (int c = 0; c < logger.num_comms; ++c) {
        if (logger.comms[c].comm == comm) {
            for (int t = 0; t < logger.num_types; ++t) {
                if (NULL != logger.comms[c].registrations[t]) {
                    MPI_T_event_handle_free(logger.comms[c].registrations[t], NULL, NULL);
                    logger.comms[c].registrations[t] = NULL;
                }
            }
            logger.comms[c].comm = MPI_COMM_NULL;
        }
    }
    pthread_mutex_unlock(&logger.lock);
}

static void start(void)
{
    int provided;
    PMPI_Comm_rank(MPI_COMM_WORLD, &logger.rank);
    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided)) {
        say("MPI_T_init_thread failed: no events are recorded");
        return;
    }
    describe_events();
    if (0 == logger.num_types) {
        say("this Open MPI raises no ob1 MPI_T event (built without SPC?): nothing is recorded");
        return;
    }
    choose(getenv("SPC_EVENTS"));
    open_output();
    logger.have_counters = MPI_SUCCESS == MPI_T_pvar_session_create(&logger.session) &&
                           started("UNEXPECTED", &logger.unexpected) &&
                           started("OUT_OF_SEQUENCE", &logger.out_of_sequence);
    logger.on = 1;
    watch(MPI_COMM_WORLD);
}

static void write_profile(void)
{
    unsigned long long unexpected = 0, out_of_sequence = 0;
    if (logger.have_counters) {
        MPI_T_pvar_read(logger.session, logger.unexpected, &unexpected);
        MPI_T_pvar_read(logger.session, logger.out_of_sequence, &out_of_sequence);
    }
    if ('\0' == logger.profile_path[0]) {
        return;
    }
    FILE *f = fopen(logger.profile_path, "w");
    if (NULL == f) {
        say("cannot write %s: %s", logger.profile_path, strerror(errno));
        return;
    }
    fprintf(f, "rank %d\nevents.recorded %llu\nevents.dropped %llu\n", logger.rank, logger.recorded,
            logger.dropped);
    for (int q = 0; q < NUM_QUEUES; ++q) {
        const struct queue_profile *p = &logger.queues[q];
        fprintf(f, "%s.messages %llu\n%s.longest %lld\n%s.seconds_total %.9f\n%s.seconds_mean %.9f\n"
                   "%s.seconds_min %.9f\n%s.seconds_max %.9f\n",
                queue_names[q], p->messages, queue_names[q], p->longest, queue_names[q], p->total,
                queue_names[q], p->removed ? p->total / (double)p->removed : 0.0, queue_names[q], p->min,
                queue_names[q], p->max);
    }
    for (int k = 0; k < NUM_SEARCHES; ++k) {
        const struct queue_profile *p = &logger.searches[k];
        fprintf(f, "%s.searches %llu\n%s.seconds_total %.9f\n%s.seconds_mean %.9f\n%s.seconds_min %.9f\n"
                   "%s.seconds_max %.9f\n",
                search_names[k], p->messages, search_names[k], p->total, search_names[k],
                p->removed ? p->total / (double)p->removed : 0.0, search_names[k], p->min, search_names[k], p->max);
    }
    if (logger.have_counters) {
        fprintf(f, "mpit.UNEXPECTED %llu\nmpit.OUT_OF_SEQUENCE %llu\n", unexpected, out_of_sequence);
    }
    if (0 != fclose(f)) {
        say("cannot write %s: %s", logger.profile_path, strerror(errno));
    }
}

static void stop(void)
{
    if (!logger.on) {
        return;
    }
    for (int c = 0; c < logger.num_comms; ++c) {
        unwatch(logger.comms[c].comm);
    }
    logger.on = 0;
    write_profile();
    if (NULL != logger.csv && 0 != fclose(logger.csv) && !logger.write_failed) {
        say("cannot write %s: %s", logger.csv_path, strerror(errno));
    }
    logger.csv = NULL;
    if (logger.have_counters) {
        MPI_T_pvar_session_free(&logger.session);
    }
    MPI_T_finalize();
}

/* ---- the wrapped MPI functions ---------------------------------------------------- */

/* Before MPI_Init: a rank whose libmpi is not the Open MPI of the mpirun that
 * started it stops with one line (spc_launcher_check.h says why it must). */
static void check_launcher(void)
{
    char message[2048];
    if (spc_launcher_mismatch("spc-event-logger", message, sizeof message)) {
        fprintf(stderr, "%s\n", message);
        exit(1);
    }
}

int MPI_Init(int *argc, char ***argv)
{
    check_launcher();
    int rc = PMPI_Init(argc, argv);
    if (MPI_SUCCESS == rc) {
        start();
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    check_launcher();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (MPI_SUCCESS == rc) {
        start();
    }
    return rc;
}

int MPI_Finalize(void)
{
    stop();
    return PMPI_Finalize();
}

/* The constructors that return one communicator when they return: each
 * calls its PMPI_ twin and watches what it made.  (MPI_Comm_idup's is not
 * made until its request completes; dynamic processes' are not covered.) */
#define WATCHED(name, parameters, arguments, made)  \
    int name parameters                             \
    {                                               \
        int rc = P##name arguments;                 \
        if (MPI_SUCCESS == rc) {                    \
            watch(*(made));                         \
        }                                           \
        return rc;                                  \
    }
WATCHED(MPI_Comm_dup, (MPI_Comm comm, MPI_Comm *newcomm), (comm, newcomm), newcomm)
WATCHED(MPI_Comm_dup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm), (comm, info, newcomm),
        newcomm)
WATCHED(MPI_Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *newcomm), (comm, color, key, newcomm),
        newcomm)
WATCHED(MPI_Comm_split_type, (MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *newcomm),
        (comm, type, key, info, newcomm), newcomm)
WATCHED(MPI_Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm), (comm, group, newcomm), newcomm)
WATCHED(MPI_Comm_create_group, (MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm),
        (comm, group, tag, newcomm), newcomm)
WATCHED(MPI_Intercomm_create,
        (MPI_Comm local, int local_leader, MPI_Comm bridge, int remote_leader, int tag, MPI_Comm *newcomm),
        (local, local_leader, bridge, remote_leader, tag, newcomm), newcomm)
WATCHED(MPI_Intercomm_merge, (MPI_Comm intercomm, int high, MPI_Comm *newcomm), (intercomm, high, newcomm),
        newcomm)
WATCHED(MPI_Cart_create,
        (MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *newcomm),
        (comm, ndims, dims, periods, reorder, newcomm), newcomm)
WATCHED(MPI_Cart_sub, (MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm), (comm, remain_dims, newcomm),
        newcomm)
WATCHED(MPI_Graph_create,
        (MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm *newcomm),
        (comm, nnodes, index, edges, reorder, newcomm), newcomm)
WATCHED(MPI_Dist_graph_create_adjacent,
        (MPI_Comm comm, int indegree, const int sources[], const int sourceweights[], int outdegree,
         const int destinations[], const int destweights[], MPI_Info info, int reorder, MPI_Comm *newcomm),
        (comm, indegree, sources, sourceweights, outdegree, destinations, destweights, info, reorder, newcomm),
        newcomm)
WATCHED(MPI_Dist_graph_create,
        (MPI_Comm comm, int n, const int nodes[], const int degrees[], const int targets[], const int weights[],
         MPI_Info info, int reorder, MPI_Comm *newcomm),
        (comm, n, nodes, degrees, targets, weights, info, reorder, newcomm), newcomm)

int MPI_Comm_free(MPI_Comm *comm)
{
    if (logger.on && NULL != comm) {
        unwatch(*comm);
    }
    return PMPI_Comm_free(comm);
}
