/*
 * MPI_T events on 2 ranks.  Rank 0 sends K messages with tags 100..124 on a
 * duplicate A of MPI_COMM_WORLD; rank 1 probes for the last one, so all K
 * wait in ob1's unexpected queue, then receives them in order.  Rank 1 holds
 * handles for ompi_pml_ob1_unexpected_insert and _remove bound to A.
 *
 * mpit_events MODE, MODE one of:
 *   restricted  callbacks at MPI_T_CB_REQUIRE_MPI_RESTRICTED, the level ob1
 *               raises at: each called at once, K inserts and K removes
 *               before MPI_Finalize, tags 100..124, each remove at or after
 *               its insert and naming the same queue entry; K posted-queue
 *               searches (one per arrival) and K + 1 unexpected-queue ones
 *               (the probe and each receive); the transfer events on a
 *               second duplicate B (check_transfers); and CANCELS receives
 *               cancelled on a third, C (check_cancels);
 *   async       only at ASYNC_SIGNAL_SAFE: valid everywhere, called at once
 *               (told MPI_RESTRICTED, the level of the place it runs at);
 *   none        only at NONE: no callback may run where ob1 raises, so each
 *               event waits for the next safe point, the exit of the MPI
 *               call it was raised in (patch
 *               "mpit: MPI_T events, raised in ob1"):
 *               all K inserts by the return of the probe, one remove by
 *               the return of each receive, at level NONE;
 *   dropped     as none, run with mpi_spc_events_buffer = 4: inserts
 *               delivered and reported dropped add up to K (how many arrive
 *               in one call depends on timing), every remove arrives; and
 *               K posted-queue inserts raised in one MPI_Startall
 *               (check_forced_drops): exactly 4 arrive and 21 are reported
 *               dropped by its return.
 * In mode none, also: an insert raised inside MPI_Wait, and one raised
 * inside MPI_Test, each delivered by that call's return
 * (check_wait_and_test_safe_points).
 * Every rank also checks the interface's rules and error codes.
 */
#include <stdint.h>
#include <string.h>

#include "mpit_util.h"
#include "spc/spc.h"

enum { K = 25, FIRST_TAG = 100, READY_TAG = 1, BUFFER_FOR_DROPPED = 4 };

struct seen {
    int count;
    int32_t tags[K];
    uint64_t requests[K];
    MPI_Count stamps[K];
    MPI_T_cb_safety safety;
    long long dropped;
};

static struct seen inserted, removed;
/* Searches on A seen by rank 1 (restricted mode): begins and ends of the
 * posted-queue and the unexpected-queue searches. */
enum { POSTED_BEGIN, POSTED_END, UNEXPECTED_BEGIN, UNEXPECTED_END, NUM_SEARCH_EVENTS };
static const char *const search_events[NUM_SEARCH_EVENTS] = {
    "ompi_pml_ob1_search_posted_begin", "ompi_pml_ob1_search_posted_end",
    "ompi_pml_ob1_search_unexpected_begin", "ompi_pml_ob1_search_unexpected_end"};
static int searches[NUM_SEARCH_EVENTS];

static void count_search(MPI_T_event_instance instance, MPI_T_event_registration registration,
                         MPI_T_cb_safety safety, void *user_data)
{
    (void)instance, (void)registration, (void)safety;
    ++*(int *)user_data;
}
static int tag_element = -1, request_element = -1;

static void record(MPI_T_event_instance instance, MPI_T_event_registration registration,
                   MPI_T_cb_safety safety, void *user_data)
{
    (void)registration;
    struct seen *s = user_data;
    if (s->count < K) {
        MPI_OK(MPI_T_event_read(instance, tag_element, &s->tags[s->count]));
        MPI_OK(MPI_T_event_read(instance, request_element, &s->requests[s->count]));
        MPI_OK(MPI_T_event_get_timestamp(instance, &s->stamps[s->count]));
    }
    s->safety = safety;
    ++s->count;
}

static void count_dropped(MPI_Count count, MPI_T_event_registration registration, int source,
                          MPI_T_cb_safety safety, void *user_data)
{
    (void)registration, (void)source, (void)safety;
    ((struct seen *)user_data)->dropped += count;
}

/* The index of event element name, through the enumeration get_info returns. */
static int element(int event, const char *name)
{
    MPI_T_enum names;
    int num_elements = 0;
    MPI_OK(MPI_T_event_get_info(event, NULL, NULL, NULL, NULL, NULL, &num_elements, &names, NULL,
                                NULL, NULL, NULL));
    for (int i = 0; i < num_elements; ++i) {
        char item[64];
        int value, length = sizeof item;
        MPI_OK(MPI_T_enum_get_item(names, i, &value, item, &length));
        if (0 == strcmp(item, name)) {
            return value;
        }
    }
    spc_client_die("no element %s", name);
}

static int event_index(const char *name)
{
    int index = -1;
    MPI_OK(MPI_T_event_get_index(name, &index));
    return index;
}

static void check_rules(int insert, MPI_Comm comm)
{
    int num = -1;
    MPI_OK(MPI_T_event_get_num(&num));
    CHECK(num == 14, "MPI_T_event_get_num: %d events, ob1 raises 14", num);
    int index = -7;
    CHECK(MPI_T_event_get_index("nope", &index) == MPI_T_ERR_INVALID_NAME, "get_index of an unknown name");
    CHECK(index == -7, "a failed get_index leaves its output alone");
    for (int e = 0; e < num; ++e) {
        char name[128];
        int length = sizeof name;
        MPI_OK(MPI_T_event_get_info(e, name, &length, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                    NULL));
        CHECK(event_index(name) == e, "%s: get_index gives back index %d", name, e);
    }
    /* arrays truncated to the caller's count; the count needed comes back */
    MPI_Datatype types[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
    MPI_Aint places[3] = {-1, -1, -1};
    int count = 2, bind = -1, verbosity = -1;
    MPI_OK(MPI_T_event_get_info(insert, NULL, NULL, &verbosity, types, places, &count, NULL, NULL,
                                NULL, NULL, &bind));
    CHECK(count == 8, "get_info returns the 8 elements it has, not %d", count);
    CHECK(places[2] == -1, "no displacement written past the caller's count");
    CHECK(types[0] == MPI_UNSIGNED && places[0] == 0, "element 0: comm_id, an unsigned at 0");
    CHECK(bind == MPI_T_BIND_MPI_COMM, "bound to a communicator, not %d", bind);
    CHECK(MPI_T_event_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX, "get_info of index %d", num);
    CHECK(MPI_T_event_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX, "get_info of index -1");

    MPI_T_event_registration r;
    CHECK(MPI_T_event_handle_alloc(num, &comm, MPI_INFO_NULL, &r) == MPI_T_ERR_INVALID_INDEX,
          "handle_alloc of a bad index");
    MPI_OK(MPI_T_event_handle_alloc(insert, &comm, MPI_INFO_NULL, &r));
    CHECK(MPI_T_event_register_callback(r, (MPI_T_cb_safety)17, MPI_INFO_NULL, NULL, record) != MPI_SUCCESS,
          "a safety level that does not exist is refused");
    MPI_OK(MPI_T_event_register_callback(r, MPI_T_CB_REQUIRE_THREAD_SAFE, MPI_INFO_NULL, NULL, record));
    MPI_OK(MPI_T_event_register_callback(r, MPI_T_CB_REQUIRE_THREAD_SAFE, MPI_INFO_NULL, NULL, NULL));
    MPI_Info info;
    MPI_OK(MPI_T_event_handle_get_info(r, &info));
    MPI_OK(MPI_Info_free(&info));
    MPI_OK(MPI_T_event_handle_free(r, NULL, NULL));
    CHECK(MPI_T_event_register_callback(r, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, NULL, record) ==
              MPI_T_ERR_INVALID_HANDLE, "a freed registration is refused");
    CHECK(MPI_T_event_handle_free(r, NULL, NULL) == MPI_T_ERR_INVALID_HANDLE, "a second free is refused");
    CHECK(MPI_T_event_set_dropped_handler(NULL, NULL) == MPI_T_ERR_INVALID_HANDLE, "a NULL registration");

    int sources = -1;
    MPI_OK(MPI_T_source_get_num(&sources));
    CHECK(sources >= 0, "source count %d", sources);
    CHECK(MPI_T_source_get_info(sources, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX, "source_get_info past the last source");
}

/* Transfer events on B: rank 0 sends TRANSFERS messages of TRANSFER_BYTES
 * (too large for ob1's inline send, so each has a request) with tags
 * 0..TRANSFERS-1 to rank 1, which receives them into receives posted
 * before, and rank 1 sends one back (tag TRANSFERS).  Each rank sees one
 * transfer_begin and one transfer_end per request it has, in tag order per
 * direction, each end with its begin's request, at or after its begin. */
enum { TRANSFERS = 6, TRANSFER_BYTES = 256 * 1024 };
struct transfer {
    int32_t direction, source, dest, tag;
    int64_t size;
    uint64_t request;
    MPI_Count stamp;
};
struct transfers {
    int count;
    struct transfer seen[2 * TRANSFERS];
};
static struct transfers begun, ended;
static int direction_element, source_element, dest_element, size_element;

static void record_transfer(MPI_T_event_instance instance, MPI_T_event_registration registration,
                            MPI_T_cb_safety safety, void *user_data)
{
    (void)registration, (void)safety;
    struct transfers *t = user_data;
    if (t->count < 2 * TRANSFERS) {
        struct transfer *x = &t->seen[t->count];
        MPI_OK(MPI_T_event_read(instance, direction_element, &x->direction));
        MPI_OK(MPI_T_event_read(instance, source_element, &x->source));
        MPI_OK(MPI_T_event_read(instance, dest_element, &x->dest));
        MPI_OK(MPI_T_event_read(instance, tag_element, &x->tag));
        MPI_OK(MPI_T_event_read(instance, size_element, &x->size));
        MPI_OK(MPI_T_event_read(instance, request_element, &x->request));
        MPI_OK(MPI_T_event_get_timestamp(instance, &x->stamp));
    }
    ++t->count;
}

/* The transfers of one direction (0 send, 1 receive) in the order seen. */
static int of_direction(const struct transfers *t, int direction, struct transfer *out)
{
    int n = 0;
    for (int i = 0; i < t->count && i < 2 * TRANSFERS; ++i) {
        if (t->seen[i].direction == direction) {
            out[n++] = t->seen[i];
        }
    }
    return n;
}

static void check_direction(int direction, int expected, int first_tag, int from, int to)
{
    struct transfer b[2 * TRANSFERS], e[2 * TRANSFERS];
    const char *what = direction == 0 ? "send" : "receive";
    const int nb = of_direction(&begun, direction, b), ne = of_direction(&ended, direction, e);
    CHECK(nb == expected && ne == expected, "%s transfers: %d begins, %d ends, expected %d each",
          what, nb, ne, expected);
    for (int i = 0; i < nb && i < ne && i < expected; ++i) {
        CHECK(b[i].tag == first_tag + i && e[i].tag == first_tag + i, "%s %d: tags %d, %d", what, i,
              b[i].tag, e[i].tag);
        CHECK(b[i].source == from && b[i].dest == to && e[i].source == from && e[i].dest == to,
              "%s %d: ranks %d->%d", what, i, b[i].source, b[i].dest);
        CHECK(b[i].size == TRANSFER_BYTES && e[i].size == TRANSFER_BYTES, "%s %d: sizes %lld, %lld",
              what, i, (long long)b[i].size, (long long)e[i].size);
        CHECK(b[i].request == e[i].request && b[i].request != 0, "%s %d: the end names its begin's request",
              what, i);
        CHECK(e[i].stamp >= b[i].stamp, "%s %d: the end is not before its begin", what, i);
    }
}

static void check_transfers(void)
{
    const int begin = event_index("ompi_pml_ob1_transfer_begin");
    const int end = event_index("ompi_pml_ob1_transfer_end");
    direction_element = element(begin, "direction");
    source_element = element(begin, "source");
    dest_element = element(begin, "dest");
    size_element = element(begin, "size");
    MPI_Comm b;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &b));
    MPI_T_event_registration on_begin, on_end;
    MPI_OK(MPI_T_event_handle_alloc(begin, &b, MPI_INFO_NULL, &on_begin));
    MPI_OK(MPI_T_event_handle_alloc(end, &b, MPI_INFO_NULL, &on_end));
    MPI_OK(MPI_T_event_register_callback(on_begin, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL,
                                         &begun, record_transfer));
    MPI_OK(MPI_T_event_register_callback(on_end, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL,
                                         &ended, record_transfer));
    char *buffer = calloc(TRANSFERS, TRANSFER_BYTES);
    MPI_Request requests[TRANSFERS];
    for (int i = 0; i < TRANSFERS; ++i) {
        char *message = buffer + (size_t)i * TRANSFER_BYTES;
        if (test_rank == 0) {
            MPI_OK(MPI_Isend(message, TRANSFER_BYTES, MPI_BYTE, 1, i, b, &requests[i]));
        } else {
            MPI_OK(MPI_Irecv(message, TRANSFER_BYTES, MPI_BYTE, 0, i, b, &requests[i]));
        }
    }
    MPI_OK(MPI_Waitall(TRANSFERS, requests, MPI_STATUSES_IGNORE));
    if (test_rank == 0) {
        MPI_OK(MPI_Recv(buffer, TRANSFER_BYTES, MPI_BYTE, 1, TRANSFERS, b, MPI_STATUS_IGNORE));
    } else {
        MPI_OK(MPI_Send(buffer, TRANSFER_BYTES, MPI_BYTE, 0, TRANSFERS, b));
    }
    MPI_OK(MPI_T_event_handle_free(on_begin, NULL, NULL));
    MPI_OK(MPI_T_event_handle_free(on_end, NULL, NULL));
    if (test_rank == 0) {
        check_direction(0, TRANSFERS, 0, 0, 1);
        check_direction(1, 1, TRANSFERS, 1, 0);
    } else {
        check_direction(1, TRANSFERS, 0, 0, 1);
        check_direction(0, 1, TRANSFERS, 1, 0);
    }
    free(buffer);
    MPI_OK(MPI_Comm_free(&b));
}

/* CANCELS receives posted on a duplicate C for a tag nobody sends, then
 * cancelled: exactly CANCELS recv_cancel events, each naming the request of
 * one posted_remove, and no other remove. */
static void check_cancels(void)
{
    enum { CANCELS = 5, NEVER_SENT = 77 };
    tag_element = element(event_index("ompi_pml_ob1_posted_remove"), "tag");
    request_element = element(event_index("ompi_pml_ob1_posted_remove"), "request");
    struct seen cancelled = {0}, left = {0};
    MPI_Comm c;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_T_event_registration on_cancel, on_remove;
    MPI_OK(MPI_T_event_handle_alloc(event_index("ompi_pml_ob1_recv_cancel"), &c, MPI_INFO_NULL, &on_cancel));
    MPI_OK(MPI_T_event_handle_alloc(event_index("ompi_pml_ob1_posted_remove"), &c, MPI_INFO_NULL, &on_remove));
    MPI_OK(MPI_T_event_register_callback(on_cancel, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL,
                                         &cancelled, record));
    MPI_OK(MPI_T_event_register_callback(on_remove, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL,
                                         &left, record));
    int values[CANCELS];
    MPI_Request requests[CANCELS];
    for (int i = 0; i < CANCELS; ++i) {
        MPI_OK(MPI_Irecv(&values[i], 1, MPI_INT, 1 - test_rank, NEVER_SENT, c, &requests[i]));
    }
    for (int i = 0; i < CANCELS; ++i) {
        MPI_OK(MPI_Cancel(&requests[i]));
        MPI_Status status;
        MPI_OK(MPI_Wait(&requests[i], &status));
        int flag = 0;
        MPI_OK(MPI_Test_cancelled(&status, &flag));
        CHECK(flag, "receive %d reports itself cancelled", i);
    }
    MPI_OK(MPI_T_event_handle_free(on_cancel, NULL, NULL));
    MPI_OK(MPI_T_event_handle_free(on_remove, NULL, NULL));
    CHECK(cancelled.count == CANCELS && left.count == CANCELS, "%d recv_cancel and %d posted_remove events, %d each",
          cancelled.count, left.count, CANCELS);
    for (int i = 0; i < cancelled.count && i < CANCELS; ++i) {
        CHECK(cancelled.tags[i] == NEVER_SENT && cancelled.requests[i] == left.requests[i] && cancelled.requests[i],
              "cancel %d: tag %d, names the request of remove %d", i, cancelled.tags[i], i);
    }
    MPI_OK(MPI_Comm_free(&c));
}

static MPI_T_cb_safety level_of(const char *mode)
{
    if (0 == strcmp(mode, "restricted")) {
        return MPI_T_CB_REQUIRE_MPI_RESTRICTED;
    }
    if (0 == strcmp(mode, "async")) {
        return MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE;
    }
    if (0 == strcmp(mode, "none") || 0 == strcmp(mode, "dropped")) {
        return MPI_T_CB_REQUIRE_NONE;
    }
    spc_client_die("usage: mpit_events restricted|async|none|dropped");
}

static void check_delivered(const char *mode, MPI_T_cb_safety level)
{
    const int dropping = 0 == strcmp(mode, "dropped");
    CHECK(dropping || inserted.count == K, "%d unexpected-insert events", inserted.count);
    CHECK(removed.count == K, "%d unexpected-remove events", removed.count);
    CHECK(dropping || inserted.dropped == 0, "%lld inserts dropped", inserted.dropped);
    CHECK(removed.dropped == 0, "%lld removes dropped", removed.dropped);
    CHECK(inserted.count + inserted.dropped == K && removed.count + removed.dropped == K,
          "every event arrived or was counted as dropped");
    /* a callback is told the level of the place it is called from */
    const MPI_T_cb_safety called_at = level == MPI_T_CB_REQUIRE_NONE ? MPI_T_CB_REQUIRE_NONE
                                                                     : MPI_T_CB_REQUIRE_MPI_RESTRICTED;
    CHECK(inserted.count == 0 || inserted.safety == called_at, "called at level %d", (int)inserted.safety);
    /* with drops, the inserts delivered are some of them, in order */
    for (int i = 0; i < inserted.count && i < K; ++i) {
        CHECK(dropping ? i == 0 || inserted.tags[i] > inserted.tags[i - 1] : inserted.tags[i] == FIRST_TAG + i,
              "insert %d: tag %d", i, inserted.tags[i]);
    }
    for (int i = 0; i < removed.count && i < K; ++i) {
        CHECK(removed.tags[i] == FIRST_TAG + i, "remove %d: tag %d", i, removed.tags[i]);
        if (inserted.count == K) {
            CHECK(removed.requests[i] == inserted.requests[i] && removed.requests[i] != 0,
                  "remove %d names the queue entry its insert named", i);
            CHECK(removed.stamps[i] >= inserted.stamps[i], "remove %d is not before its insert", i);
        }
    }
}

/* Rank 1, buffer BUFFER_FOR_DROPPED: K persistent receives on a quiet
 * duplicate C, started by one MPI_Startall, raise K posted_insert events
 * inside it, for a callback only at NONE: by its return exactly
 * BUFFER_FOR_DROPPED were delivered and K - BUFFER_FOR_DROPPED reported
 * dropped.  Both ranks make C; only rank 1 receives (then cancels). */
static void check_forced_drops(void)
{
    MPI_Comm c;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    if (test_rank == 1) {
        static struct seen posted;
        MPI_T_event_registration r;
        MPI_OK(MPI_T_event_handle_alloc(event_index("ompi_pml_ob1_posted_insert"), &c, MPI_INFO_NULL, &r));
        MPI_OK(MPI_T_event_register_callback(r, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, &posted, record));
        MPI_OK(MPI_T_event_set_dropped_handler(r, count_dropped));
        int sink[K];
        MPI_Request requests[K];
        for (int i = 0; i < K; ++i) {
            MPI_OK(MPI_Recv_init(&sink[i], 1, MPI_INT, 0, i, c, &requests[i]));
        }
        MPI_OK(MPI_Startall(K, requests));
        CHECK(posted.count == BUFFER_FOR_DROPPED, "%d posted inserts delivered after MPI_Startall, expected %d",
              posted.count, BUFFER_FOR_DROPPED);
        CHECK(posted.dropped == K - BUFFER_FOR_DROPPED, "%lld posted inserts dropped, expected %d",
              posted.dropped, K - BUFFER_FOR_DROPPED);
        CHECK(posted.safety == MPI_T_CB_REQUIRE_NONE, "delivered at level %d", (int)posted.safety);
        for (int i = 0; i < K; ++i) {
            MPI_OK(MPI_Cancel(&requests[i]));
        }
        MPI_OK(MPI_Waitall(K, requests, MPI_STATUSES_IGNORE));
        for (int i = 0; i < K; ++i) {
            MPI_OK(MPI_Request_free(&requests[i]));
        }
        MPI_OK(MPI_T_event_handle_free(r, NULL, NULL));
    }
    MPI_OK(MPI_Comm_free(&c));
}

/* Rank 1 waits (MPI_Wait, or MPI_Test until done) for a message that rank
 * 0 sends right after one nobody asked for; that one arrives inside the
 * call, and its insert event, at level NONE, can run only at a safe point:
 * the one at the call's return (patch
 * "mpit: MPI_T events, raised in ob1"), else it would
 * wait for the next MPI call.  The raise time must lie inside the call, or
 * the round shows nothing (the message came during an earlier call) and is
 * tried again. */
static void check_wait_and_test_safe_points(MPI_Comm a)
{
    enum { ROUNDS = 20, UNASKED_TAG = 200, WANTED_TAG = 300 };
    const int insert = event_index("ompi_pml_ob1_unexpected_insert");
    for (int use_test = 0; use_test <= 1; ++use_test) {
        const char *call = use_test ? "MPI_Test" : "MPI_Wait";
        struct seen in_call = {0};
        MPI_T_event_registration r = NULL;
        if (1 == test_rank) {
            MPI_OK(MPI_T_event_handle_alloc(insert, &a, MPI_INFO_NULL, &r));
            MPI_OK(MPI_T_event_register_callback(r, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, &in_call, record));
        }
        int shown = 0, rounds = 0, payload = 0;
        while (!shown && rounds < ROUNDS) {
            const int unasked = UNASKED_TAG + rounds, wanted = WANTED_TAG + rounds;
            ++rounds;
            if (0 == test_rank) {
                MPI_OK(MPI_Recv(NULL, 0, MPI_INT, 1, READY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                MPI_OK(MPI_Send(&payload, 1, MPI_INT, 1, unasked, a));
                MPI_OK(MPI_Send(&payload, 1, MPI_INT, 1, wanted, a));
                MPI_OK(MPI_Bcast(&shown, 1, MPI_INT, 1, MPI_COMM_WORLD));
                continue;
            }
            MPI_Request request;
            const int before = in_call.count;
            MPI_OK(MPI_Irecv(&payload, 1, MPI_INT, 0, wanted, a, &request));
            MPI_OK(MPI_Send(NULL, 0, MPI_INT, 0, READY_TAG, MPI_COMM_WORLD));
            /* entry time of the first call, and of the call whose return
             * had the insert delivered (0: none did) */
            uint64_t first_entry = 0, delivering_entry = 0;
            for (int done = 0; !done;) {
                const uint64_t entry = spc_ticks();
                first_entry = first_entry ? first_entry : entry;
                if (use_test) {
                    MPI_OK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
                } else {
                    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
                    done = 1;
                }
                if (0 == delivering_entry && in_call.count > before) {
                    delivering_entry = entry;
                }
            }
            MPI_OK(MPI_Recv(&payload, 1, MPI_INT, 0, unasked, a, MPI_STATUS_IGNORE));
            CHECK(in_call.count - before == 1, "%d inserts for one unasked message", in_call.count - before);
            const uint64_t raised = in_call.count > before ? (uint64_t)in_call.stamps[before] : 0;
            /* no message arrives between calls, so raised after the first
             * entry means raised inside one of the calls */
            shown = raised > first_entry;
            CHECK(!shown || (0 != delivering_entry && raised > delivering_entry),
                  "an insert raised inside %s was delivered only after that call returned", call);
            MPI_OK(MPI_Bcast(&shown, 1, MPI_INT, 1, MPI_COMM_WORLD));
        }
        if (1 == test_rank) {
            CHECK(shown, "no insert was raised inside %s in %d rounds: nothing shown", call, rounds);
            if (shown) {
                printf("rank 1: an insert raised inside %s was delivered by its return (round %d)\n", call,
                       rounds);
            }
            MPI_OK(MPI_T_event_handle_free(r, NULL, NULL));
        }
    }
}

int main(int argc, char **argv)
{
    int provided;
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    const char *mode = argc > 1 ? argv[1] : "";
    const MPI_T_cb_safety level = level_of(mode);
    MPI_Comm a;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));

    const int insert = event_index("ompi_pml_ob1_unexpected_insert");
    const int remove = event_index("ompi_pml_ob1_unexpected_remove");
    check_rules(insert, a);
    tag_element = element(insert, "tag");
    request_element = element(insert, "request");

    MPI_T_event_registration on_insert = NULL, on_remove = NULL;
    if (test_rank == 1) {
        MPI_OK(MPI_T_event_handle_alloc(insert, &a, MPI_INFO_NULL, &on_insert));
        MPI_OK(MPI_T_event_handle_alloc(remove, &a, MPI_INFO_NULL, &on_remove));
        MPI_OK(MPI_T_event_register_callback(on_insert, level, MPI_INFO_NULL, &inserted, record));
        MPI_OK(MPI_T_event_register_callback(on_remove, level, MPI_INFO_NULL, &removed, record));
        MPI_OK(MPI_T_event_set_dropped_handler(on_insert, count_dropped));
        MPI_OK(MPI_T_event_set_dropped_handler(on_remove, count_dropped));
        for (int e = 0; e < NUM_SEARCH_EVENTS && level == MPI_T_CB_REQUIRE_MPI_RESTRICTED; ++e) {
            MPI_T_event_registration r;
            MPI_OK(MPI_T_event_handle_alloc(event_index(search_events[e]), &a, MPI_INFO_NULL, &r));
            MPI_OK(MPI_T_event_register_callback(r, level, MPI_INFO_NULL, &searches[e], count_search));
        }
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    int payload = -1;
    if (test_rank == 0) {
        for (int i = 0; i < K; ++i) {
            MPI_OK(MPI_Send(&i, 1, MPI_INT, 1, FIRST_TAG + i, a));
        }
    } else {
        MPI_OK(MPI_Probe(0, FIRST_TAG + K - 1, a, MPI_STATUS_IGNORE));
        /* at the latest, the probe's exit delivered the inserts */
        CHECK(inserted.count + inserted.dropped == K && removed.count == 0,
              "after the probe: %d inserts (%lld dropped), %d removes", inserted.count, inserted.dropped,
              removed.count);
        for (int i = 0; i < K; ++i) {
            MPI_OK(MPI_Recv(&payload, 1, MPI_INT, 0, FIRST_TAG + i, a, MPI_STATUS_IGNORE));
            CHECK(payload == i, "payload %d for tag %d", payload, FIRST_TAG + i);
            CHECK(removed.count == i + 1, "%d removes delivered when receive %d returns", removed.count, i);
        }
        check_delivered(mode, level);
        if (level == MPI_T_CB_REQUIRE_MPI_RESTRICTED) {
            /* each of the K arrivals searches the posted receives once; the
             * probe and the K receives each search the unexpected messages */
            CHECK(searches[POSTED_BEGIN] == K && searches[POSTED_END] == K, "posted-queue searches %d/%d",
                  searches[POSTED_BEGIN], searches[POSTED_END]);
            CHECK(searches[UNEXPECTED_BEGIN] == K + 1 && searches[UNEXPECTED_END] == K + 1,
                  "unexpected-queue searches %d/%d", searches[UNEXPECTED_BEGIN], searches[UNEXPECTED_END]);
        }
    }
    if (level == MPI_T_CB_REQUIRE_MPI_RESTRICTED) {
        check_transfers();
        check_cancels();
    }
    if (0 == strcmp(mode, "dropped")) {
        check_forced_drops();
    }
    if (0 == strcmp(mode, "none")) {
        check_wait_and_test_safe_points(a);
    }
    MPI_OK(MPI_T_finalize());
    MPI_OK(MPI_Finalize());
    return finish("mpit_events");
}
