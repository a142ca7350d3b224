/*
 * What the three files of the MPI_T event machinery share (not installed):
 * event_grace.c keeps the sources and the grace periods, event_registry.c
 * the registrations, event_delivery.c raises and delivers events and
 * answers for instances.  spc/events.h says what they offer together.
 */
#ifndef SPC_EVENT_INTERNAL_H
#define SPC_EVENT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "spc/events.h"

#pragma GCC visibility push(hidden)

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* Replaced as a whole, never changed once published. */
struct callbacks {
    spc_ev_callback *callback[SPC_EV_NUM_SAFETY];
    void *user_data[SPC_EV_NUM_SAFETY];
    spc_ev_dropped_callback *dropped;
};

struct ompi_mpit_event_registration_t {
    int type;
    const void *object;             /* immutable */
    struct callbacks *callbacks;    /* atomic */
    int freed, object_gone;         /* atomic */
    int refs;                       /* atomic: the owner, each waiting event and pending drop */
    /* under the registry lock: */
    int low;                        /* has a callback below the raise level */
    spc_ev_free_callback *free_callback;
    void *free_user_data;
    spc_ev_registration *next_live;
};

/* The registrations of one type as raisers see them. */
struct registrations {
    int n;
    spc_ev_registration *items[];
};

/* One waiting event; its data follows (the types' largest extent). */
struct entry {
    spc_ev_registration *registration;
    uint64_t ticks;
    int type;
};

struct drop {
    spc_ev_registration *registration;
    long long count;
};

struct source {
    unsigned sequence;              /* atomic, its owner's: odd while inside */
    int index;
    pthread_mutex_t lock;           /* the rest, between owner and spc_ev_deliver_all */
    int head, count;                /* count: atomic, read by the owner unlocked */
    unsigned char *entries;
    struct drop *drops;
    int num_drops, drops_capacity;  /* num_drops: atomic */
} __attribute__((aligned(64)));

/* ---- event_registry.c: the types, set once by spc_ev_init ---------------- */

extern const struct spc_ev_type *types;
extern int num_types;
extern int capacity;
extern size_t entry_size;
extern int raise_safety;                                 /* atomic */
extern pthread_mutex_t registry_lock;
extern struct registrations *lists[SPC_EV_MAX_TYPES];    /* atomic pointers */

/* ---- event_grace.c: sources and grace periods ----------------------------- */

extern pthread_mutex_t sources_lock;
extern struct source *sources[SPC_EV_MAX_SOURCES];       /* atomic pointers */
extern int num_sources;                                  /* atomic */
extern int retired_pending;                              /* atomic */

/* Initial-exec, as the counters' thread blocks (spc.h): a raise reads them
 * without a call to __tls_get_addr, which a shared library's default model
 * needs. */
#define THREAD_LOCAL __thread __attribute__((tls_model("initial-exec")))
extern THREAD_LOCAL struct source *my_source;
extern THREAD_LOCAL int my_depth;       /* raises and deliveries we are inside */
extern THREAD_LOCAL int my_callbacks;   /* user callbacks we are inside */

/* Sources lock held: source index, new. */
struct source *new_source(int index);
/* The calling thread's source: source 0 for the first thread that needs one,
 * then a new one per thread; NULL beyond SPC_EV_MAX_SOURCES. */
struct source *claim_source(void);
void unref(spc_ev_registration *r);
/* Registry lock held: memory is freed, and registration's free callback run
 * and its owner's reference dropped, after the next grace period. */
void retire(void *memory, spc_ev_registration *registration);
/* Frees what was retired, after a grace period; runs free callbacks.  Not
 * from inside a raise, delivery or callback (the thread would wait for
 * itself): then it is left for the thread's way out.  Without wait, it
 * leaves the work to a thread already at it. */
void reclaim(int safety, int wait);

/* Inline: every raise passes through both. */
static inline void enter(void)
{
    if (0 == my_depth++) {
        __atomic_add_fetch(&my_source->sequence, 1, __ATOMIC_SEQ_CST);
    }
}

static inline void leave(int safety)
{
    if (0 == --my_depth) {
        __atomic_add_fetch(&my_source->sequence, 1, __ATOMIC_RELEASE);
        if (__atomic_load_n(&retired_pending, __ATOMIC_RELAXED)) {
            reclaim(safety, 0);  /* unless another thread is at it */
        }
    }
}

/* ---- event_delivery.c ------------------------------------------------------ */

/* spc_ev_fini: what waits in the sources belongs to freed registrations. */
void drop_waiting(void);

/* ---- callback levels (registry and delivery) ------------------------------ */

static inline int has_low(const struct callbacks *c, int level)
{
    for (int l = 0; l < level; ++l) {
        if (NULL != c->callback[l]) {
            return 1;
        }
    }
    return 0;
}

/* The level of the callback to call where the level is required, or -1. */
static inline int chosen(const struct callbacks *c, int level)
{
    for (int l = level; l < SPC_EV_NUM_SAFETY; ++l) {
        if (NULL != c->callback[l]) {
            return l;
        }
    }
    return -1;
}

#pragma GCC visibility pop

#endif
