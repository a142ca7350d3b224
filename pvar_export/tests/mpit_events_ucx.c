/*
 * The MPI_T events pml ucx raises, on 2 ranks, each with exact fields: both
 * ranks hold handles for posted_insert, unexpected_remove and transfer_end
 * bound to a duplicate A of MPI_COMM_WORLD (the ranks' handshakes go over
 * MPI_COMM_WORLD, which no handle sees).  Rank 0 sends to rank 1 on A:
 *   tags 10..14, 8 B each, blocking, which rank 1 lets arrive (a probe
 *       for the last) before it receives them: 5 unexpected_remove;
 *   tags 20..23, 16 B each, into receives rank 1 posted before (each
 *       can hold 64 B; tag 23's is for any source and any tag):
 *       4 posted_insert, sources and tags as posted;
 *   tag 30, taken by MPI_Mprobe and MPI_Mrecv: 1 unexpected_remove;
 *   tag 40, 1 MiB with MPI_Isend, which UCX cannot complete before rank 1
 *       receives it (rank 1 probes for it once rank 0 has posted it, then
 *       receives it): 1 unexpected_remove, and rank 0's transfer_end
 *       carries the request MPI_Isend returned;
 *   tag 41, 8 B from a persistent send into a persistent receive started
 *       before: 1 posted_insert.
 * Every receive and every send ends in one transfer_end (12 on each rank),
 * in the order of the tags above: source, dest, tag, size and direction
 * exact, sequence 0, and a receive's request its own (not 0).
 * usage: mpirun -np 2 --mca pml ucx ... mpit_events_ucx
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpit_util.h"

enum { UNEXPECTED_FIRST = 10, UNEXPECTED_COUNT = 5, POSTED_FIRST = 20, POSTED_COUNT = 4,
       MPROBE_TAG = 30, LARGE_TAG = 40, PERSISTENT_TAG = 41, SMALL = 8, POSTED_SIZE = 16,
       POSTED_ROOM = 64, LARGE = 1 << 20, MESSAGES = UNEXPECTED_COUNT + POSTED_COUNT + 3, GO = 1 };

enum { POSTED_INSERT, UNEXPECTED_REMOVE, TRANSFER_END, NUM_EVENTS };
static const char *const event_names[NUM_EVENTS] = {
    "ompi_pml_ob1_posted_insert", "ompi_pml_ob1_unexpected_remove", "ompi_pml_ob1_transfer_end"};

struct event {
    uint32_t comm_id, sequence;
    int32_t source, dest, tag, direction;
    int64_t size;
    uint64_t request;
};
/* Room for more than expected, so that an extra event is seen, not lost. */
struct seen {
    int count;
    struct event events[2 * MESSAGES];
};
static struct seen seen[NUM_EVENTS];

static void record(MPI_T_event_instance instance, MPI_T_event_registration registration,
                   MPI_T_cb_safety safety, void *user_data)
{
    (void)registration, (void)safety;
    struct seen *s = user_data;
    if (s->count < 2 * MESSAGES) {
        /* element by element, in the order check_element_order proved */
        struct event *e = &s->events[s->count];
        int index = 0;
        MPI_OK(MPI_T_event_read(instance, index++, &e->comm_id));
        MPI_OK(MPI_T_event_read(instance, index++, &e->source));
        MPI_OK(MPI_T_event_read(instance, index++, &e->dest));
        MPI_OK(MPI_T_event_read(instance, index++, &e->tag));
        MPI_OK(MPI_T_event_read(instance, index++, &e->sequence));
        MPI_OK(MPI_T_event_read(instance, index++, &e->direction));
        MPI_OK(MPI_T_event_read(instance, index++, &e->size));
        MPI_OK(MPI_T_event_read(instance, index++, &e->request));
    }
    ++s->count;
}

/* The elements in the order record() reads them, checked by name. */
static void check_element_order(int event)
{
    static const char *const order[] = {"comm_id", "source", "dest", "tag", "sequence", "direction",
                                        "size", "request"};
    MPI_T_enum names;
    int num_elements = 0;
    MPI_OK(MPI_T_event_get_info(event, NULL, NULL, NULL, NULL, NULL, &num_elements, &names, NULL, NULL,
                                NULL, NULL));
    CHECK(num_elements == 8, "%d elements", num_elements);
    for (int i = 0; i < num_elements && i < 8; ++i) {
        char item[64];
        int value, length = sizeof item;
        MPI_OK(MPI_T_enum_get_item(names, i, &value, item, &length));
        CHECK(0 == strcmp(item, order[value]), "element %d is %s, read as %s", value, item, order[value]);
    }
}

static MPI_T_event_registration watch(int event, MPI_Comm *comm)
{
    int index = -1;
    MPI_OK(MPI_T_event_get_index(event_names[event], &index));
    check_element_order(index);
    MPI_T_event_registration registration;
    MPI_OK(MPI_T_event_handle_alloc(index, comm, MPI_INFO_NULL, &registration));
    MPI_OK(MPI_T_event_register_callback(registration, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL,
                                         &seen[event], record));
    return registration;
}

/* One event, checked field by field against what it must say. */
static void check_event(int event, int i, int32_t source, int32_t dest, int32_t tag, int32_t direction,
                        int64_t size, int request_known, uint64_t request)
{
    const struct event *e = &seen[event].events[i];
    const char *name = event_names[event] + strlen("ompi_pml_ob1_");
    CHECK(e->source == source && e->dest == dest && e->tag == tag && e->direction == direction &&
              e->size == size && e->sequence == 0,
          "%s %d: source %d dest %d tag %d direction %d size %lld sequence %u, expected %d %d %d %d %lld 0",
          name, i, e->source, e->dest, e->tag, e->direction, (long long)e->size, e->sequence, source, dest,
          tag, direction, (long long)size);
    if (request_known) {
        CHECK(e->request == request, "%s %d (tag %d): request %#llx, expected %#llx", name, i, tag,
              (unsigned long long)e->request, (unsigned long long)request);
    }
}

static void rank0(MPI_Comm a, uint64_t *large_request)
{
    char small[SMALL] = {0}, posted[POSTED_SIZE] = {0};
    char *large = calloc(LARGE, 1);
    for (int t = 0; t < UNEXPECTED_COUNT; ++t) {
        MPI_OK(MPI_Send(small, SMALL, MPI_CHAR, 1, UNEXPECTED_FIRST + t, a));
    }
    MPI_OK(MPI_Recv(NULL, 0, MPI_CHAR, 1, GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE)); /* receives posted */
    for (int t = 0; t < POSTED_COUNT; ++t) {
        MPI_OK(MPI_Send(posted, POSTED_SIZE, MPI_CHAR, 1, POSTED_FIRST + t, a));
    }
    MPI_OK(MPI_Send(small, SMALL, MPI_CHAR, 1, MPROBE_TAG, a));
    MPI_Request request;
    MPI_OK(MPI_Isend(large, LARGE, MPI_CHAR, 1, LARGE_TAG, a, &request));
    *large_request = (uint64_t)(uintptr_t)request;
    MPI_OK(MPI_Send(NULL, 0, MPI_CHAR, 1, GO, MPI_COMM_WORLD)); /* posted */
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Send_init(small, SMALL, MPI_CHAR, 1, PERSISTENT_TAG, a, &request));
    MPI_OK(MPI_Recv(NULL, 0, MPI_CHAR, 1, GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE)); /* its receive started */
    MPI_OK(MPI_Start(&request));
    MPI_OK(MPI_Wait(&request, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Request_free(&request));
    free(large);
}

static void rank1(MPI_Comm a, uint64_t posted_requests[POSTED_COUNT])
{
    char small[SMALL], room[POSTED_COUNT][POSTED_ROOM];
    char *large = malloc(LARGE);
    MPI_OK(MPI_Probe(0, UNEXPECTED_FIRST + UNEXPECTED_COUNT - 1, a, MPI_STATUS_IGNORE));
    for (int t = 0; t < UNEXPECTED_COUNT; ++t) {
        MPI_OK(MPI_Recv(small, SMALL, MPI_CHAR, 0, UNEXPECTED_FIRST + t, a, MPI_STATUS_IGNORE));
    }
    MPI_Request requests[POSTED_COUNT];
    for (int t = 0; t < POSTED_COUNT; ++t) {
        const int any = t == POSTED_COUNT - 1;
        MPI_OK(MPI_Irecv(room[t], POSTED_ROOM, MPI_CHAR, any ? MPI_ANY_SOURCE : 0,
                         any ? MPI_ANY_TAG : POSTED_FIRST + t, a, &requests[t]));
        posted_requests[t] = (uint64_t)(uintptr_t)requests[t];
    }
    MPI_OK(MPI_Send(NULL, 0, MPI_CHAR, 0, GO, MPI_COMM_WORLD));
    MPI_OK(MPI_Waitall(POSTED_COUNT, requests, MPI_STATUSES_IGNORE));
    MPI_Message message;
    MPI_OK(MPI_Mprobe(0, MPROBE_TAG, a, &message, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Mrecv(small, SMALL, MPI_CHAR, &message, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Recv(NULL, 0, MPI_CHAR, 0, GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Probe(0, LARGE_TAG, a, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Recv(large, LARGE, MPI_CHAR, 0, LARGE_TAG, a, MPI_STATUS_IGNORE));
    MPI_Request persistent;
    MPI_OK(MPI_Recv_init(small, SMALL, MPI_CHAR, 0, PERSISTENT_TAG, a, &persistent));
    MPI_OK(MPI_Start(&persistent));
    MPI_OK(MPI_Send(NULL, 0, MPI_CHAR, 0, GO, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&persistent, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Request_free(&persistent));
    free(large);
}

/* The messages' tags and sizes in the order both ranks see them end. */
static void message(int i, int32_t *tag, int64_t *size)
{
    if (i < UNEXPECTED_COUNT) {
        *tag = UNEXPECTED_FIRST + i, *size = SMALL;
    } else if (i < UNEXPECTED_COUNT + POSTED_COUNT) {
        *tag = POSTED_FIRST + i - UNEXPECTED_COUNT, *size = POSTED_SIZE;
    } else {
        static const int32_t tags[] = {MPROBE_TAG, LARGE_TAG, PERSISTENT_TAG};
        *tag = tags[i - UNEXPECTED_COUNT - POSTED_COUNT];
        *size = *tag == LARGE_TAG ? LARGE : SMALL;
    }
}

int main(int argc, char **argv)
{
    int provided;
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm a;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    MPI_T_event_registration registrations[NUM_EVENTS];
    for (int e = 0; e < NUM_EVENTS; ++e) {
        registrations[e] = watch(e, &a);
    }

    uint64_t large_request = 0, posted_requests[POSTED_COUNT] = {0};
    if (test_rank == 0) {
        rank0(a, &large_request);
    } else {
        rank1(a, posted_requests);
    }
    for (int e = 0; e < NUM_EVENTS; ++e) {
        MPI_OK(MPI_T_event_handle_free(registrations[e], NULL, NULL));
    }

    const int receiver = test_rank == 1;
    const int expected[NUM_EVENTS] = {receiver * (POSTED_COUNT + 1), receiver * (UNEXPECTED_COUNT + 2), MESSAGES};
    for (int e = 0; e < NUM_EVENTS; ++e) {
        CHECK(seen[e].count == expected[e], "%s: %d events, expected %d", event_names[e], seen[e].count,
              expected[e]);
    }
    if (receiver && seen[POSTED_INSERT].count == expected[POSTED_INSERT]) {
        for (int t = 0; t < POSTED_COUNT; ++t) {
            const int any = t == POSTED_COUNT - 1;
            check_event(POSTED_INSERT, t, any ? MPI_ANY_SOURCE : 0, 1, any ? MPI_ANY_TAG : POSTED_FIRST + t,
                        1, POSTED_ROOM, 1, 0);
        }
        check_event(POSTED_INSERT, POSTED_COUNT, 0, 1, PERSISTENT_TAG, 1, SMALL, 1, 0);
    }
    if (receiver && seen[UNEXPECTED_REMOVE].count == expected[UNEXPECTED_REMOVE]) {
        for (int t = 0; t < UNEXPECTED_COUNT; ++t) {
            check_event(UNEXPECTED_REMOVE, t, 0, 1, UNEXPECTED_FIRST + t, 1, SMALL, 1, 0);
        }
        check_event(UNEXPECTED_REMOVE, UNEXPECTED_COUNT, 0, 1, MPROBE_TAG, 1, SMALL, 1, 0);
        check_event(UNEXPECTED_REMOVE, UNEXPECTED_COUNT + 1, 0, 1, LARGE_TAG, 1, LARGE, 1, 0);
    }
    if (seen[TRANSFER_END].count == expected[TRANSFER_END]) {
        for (int i = 0; i < MESSAGES; ++i) {
            int32_t tag;
            int64_t size;
            message(i, &tag, &size);
            const struct event *e = &seen[TRANSFER_END].events[i];
            /* a receive's request is its own: an MPI_Irecv's the handle it
             * returned; a blocking receive's, UCX's, never 0 */
            const int posted = i >= UNEXPECTED_COUNT && i < UNEXPECTED_COUNT + POSTED_COUNT;
            if (receiver) {
                check_event(TRANSFER_END, i, 0, 1, tag, 1, size, posted,
                            posted ? posted_requests[i - UNEXPECTED_COUNT] : 0);
                CHECK(e->request != 0, "transfer_end %d (tag %d) of a receive has request 0", i, tag);
            } else {
                /* a blocking send has no request (0); the large one waited
                 * for its receive in its request; the persistent one's is
                 * 0 or UCX's, as UCX completed it in its post or not */
                check_event(TRANSFER_END, i, 0, 1, tag, 0, size, tag != PERSISTENT_TAG,
                            tag == LARGE_TAG ? large_request : 0);
            }
        }
    }
    MPI_OK(MPI_Comm_free(&a));
    MPI_OK(MPI_T_finalize());
    MPI_OK(MPI_Finalize());
    return finish("mpit_events_ucx");
}
