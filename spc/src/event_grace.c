/*
 * Sources and grace periods of the MPI_T event machinery (spc/events.h).
 *
 *  - Raisers never take the registry lock.  Each event type's registrations
 *    are an array that is replaced, never changed (copy on write), and so is
 *    each registration's set of callbacks.  What is replaced or freed waits
 *    for a grace period: every thread that calls callbacks owns a source
 *    whose sequence number is odd while the thread is inside a raise or a
 *    delivery; a grace period waits until each odd number has moved.  The
 *    raiser's increment is a sequentially consistent read-modify-write before
 *    it loads the array, and the writer's store of the new array is
 *    sequentially consistent before it loads the numbers, so either the
 *    writer waits for the raiser or the raiser sees the new array.
 *  - A free callback runs after the grace period that follows the free, so no
 *    event callback of that registration runs any more.  A thread inside a
 *    callback cannot wait for itself: what it frees is reclaimed when it
 *    leaves its outermost callback.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "event_internal.h"

/* Memory and registrations that wait for a grace period. */
struct retired {
    struct retired *next;
    void *memory;
    spc_ev_registration *registration;  /* its free callback, then its owner's reference */
};

pthread_mutex_t sources_lock = PTHREAD_MUTEX_INITIALIZER;
struct source *sources[SPC_EV_MAX_SOURCES];
int num_sources;
static int next_claim;                               /* sources lock */

static struct retired *retired_list;                 /* registry lock */
int retired_pending;
static pthread_mutex_t reclaim_lock = PTHREAD_MUTEX_INITIALIZER;

THREAD_LOCAL struct source *my_source;
THREAD_LOCAL int my_depth;
THREAD_LOCAL int my_callbacks;

struct source *new_source(int index)
{
    struct source *s = aligned_alloc(64, sizeof *s);
    unsigned char *entries = calloc((size_t)capacity, entry_size);
    if (NULL == s || NULL == entries) {
        free(s);
        free(entries);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->index = index;
    s->entries = entries;
    pthread_mutex_init(&s->lock, NULL);
    STORE(&sources[index], s);
    __atomic_store_n(&num_sources, index + 1, __ATOMIC_SEQ_CST);
    return s;
}

struct source *claim_source(void)
{
    pthread_mutex_lock(&sources_lock);
    struct source *s = NULL;
    if (next_claim < SPC_EV_MAX_SOURCES) {
        int index = next_claim++;
        s = index < LOAD(&num_sources) ? LOAD(&sources[index]) : new_source(index);
    }
    pthread_mutex_unlock(&sources_lock);
    my_source = s;
    return s;
}

/* Waits until no thread is inside a raise or delivery it entered before. */
static void synchronize(void)
{
    int n = __atomic_load_n(&num_sources, __ATOMIC_SEQ_CST);
    for (int i = 0; i < n; ++i) {
        struct source *s = LOAD(&sources[i]);
        if (NULL == s) {
            continue;
        }
        unsigned seen = __atomic_load_n(&s->sequence, __ATOMIC_SEQ_CST);
        while ((seen & 1) && __atomic_load_n(&s->sequence, __ATOMIC_ACQUIRE) == seen) {
            sched_yield();
        }
    }
}

void unref(spc_ev_registration *r)
{
    if (0 == __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL)) {
        free(LOAD(&r->callbacks));
        free(r);
    }
}

void retire(void *memory, spc_ev_registration *registration)
{
    struct retired *r = malloc(sizeof *r);
    if (NULL == r) {
        return;  /* memory leaks, a registration keeps its reference: never wrong */
    }
    *r = (struct retired){retired_list, memory, registration};
    retired_list = r;
    __atomic_store_n(&retired_pending, 1, __ATOMIC_RELAXED);
}

void reclaim(int safety, int wait)
{
    if (my_depth > 0 || my_callbacks > 0) {
        return;
    }
    if (wait) {
        pthread_mutex_lock(&reclaim_lock);
    } else if (0 != pthread_mutex_trylock(&reclaim_lock)) {
        return;
    }
    for (;;) {
        pthread_mutex_lock(&registry_lock);
        struct retired *batch = retired_list;
        retired_list = NULL;
        __atomic_store_n(&retired_pending, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&registry_lock);
        if (NULL == batch) {
            break;
        }
        synchronize();
        while (NULL != batch) {
            struct retired *r = batch;
            batch = r->next;
            free(r->memory);
            if (NULL != r->registration) {
                spc_ev_registration *g = r->registration;
                if (NULL != g->free_callback) {
                    ++my_callbacks;
                    g->free_callback(g, safety, g->free_user_data);
                    --my_callbacks;
                }
                unref(g);
            }
            free(r);
        }
    }
    pthread_mutex_unlock(&reclaim_lock);
}
