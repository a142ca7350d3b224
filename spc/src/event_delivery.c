/*
 * Raising and delivering MPI_T events, and the instances callbacks read
 * (spc/events.h):
 *
 *  - Each thread is its own source, so a source's events come in order: an
 *    event is called back at once only when its source has nothing waiting;
 *    otherwise it waits in the source's buffer (bounded; beyond it, dropped
 *    and counted), delivered in order at the thread's next safe point.
 *    Pending drop counts are reported before any later event of the source.
 *  - At a safe point (level NONE) one thread delivers at a time: callbacks of
 *    level NONE need not be thread-safe.  A thread that finds another one
 *    delivering leaves its events for its next safe point.
 *  - A raise reads its type's registrations without a lock: what it may
 *    still see is freed only after a grace period (event_grace.c).
 */
#include <stdlib.h>
#include <string.h>

#include "event_internal.h"
#include "spc/spc.h"

struct ompi_mpit_event_instance_t {
    int type, source;
    uint64_t ticks;
    const unsigned char *data;
};

static pthread_mutex_t delivery_lock = PTHREAD_MUTEX_INITIALIZER;
static THREAD_LOCAL const spc_ev_instance *my_instance;

/* ---- dispatch ------------------------------------------------------------------ */

static void invoke(const struct callbacks *c, int level_chosen, spc_ev_registration *r,
                   int type, int source, uint64_t ticks, const void *data, int safety)
{
    struct ompi_mpit_event_instance_t instance = {type, source, ticks, data};
    const spc_ev_instance *outer = my_instance;
    my_instance = &instance;
    ++my_callbacks;
    c->callback[level_chosen](&instance, r, safety, c->user_data[level_chosen]);
    --my_callbacks;
    my_instance = outer;
}

static void note_drop(struct source *s, spc_ev_registration *r, const struct callbacks *c)
{
    if (NULL == c->dropped) {
        return;  /* no handler: no loss is recorded */
    }
    pthread_mutex_lock(&s->lock);
    int i = 0;
    while (i < s->num_drops && s->drops[i].registration != r) {
        ++i;
    }
    if (i == s->num_drops) {
        if (s->num_drops == s->drops_capacity) {
            int grown = s->drops_capacity ? 2 * s->drops_capacity : 8;
            struct drop *d = realloc(s->drops, (size_t)grown * sizeof *d);
            if (NULL == d) {
                pthread_mutex_unlock(&s->lock);
                return;
            }
            s->drops = d;
            s->drops_capacity = grown;
        }
        __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
        s->drops[i] = (struct drop){r, 0};
        __atomic_store_n(&s->num_drops, s->num_drops + 1, __ATOMIC_RELAXED);
    }
    if (s->drops[i].count < __LONG_LONG_MAX__) {
        ++s->drops[i].count;  /* the standard's count saturates */
    }
    pthread_mutex_unlock(&s->lock);
}

/* Reports s's pending drops that can be reported at level safety.  Returns
 * 0 if one that must come first cannot (its registration only has
 * callbacks below the level): then later events of s must wait. */
static int flush_drops(struct source *s, int safety)
{
    if (0 == __atomic_load_n(&s->num_drops, __ATOMIC_RELAXED)) {
        return 1;
    }
    pthread_mutex_lock(&s->lock);
    struct drop *taken = s->drops;
    int n = s->num_drops;
    s->drops = NULL;
    s->drops_capacity = 0;
    __atomic_store_n(&s->num_drops, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->lock);

    int kept = 0, blocked = 0;
    for (int i = 0; i < n; ++i) {
        spc_ev_registration *r = taken[i].registration;
        const struct callbacks *c = LOAD(&r->callbacks);
        int level = chosen(c, safety);
        if (LOAD(&r->freed)) {
            unref(r);
        } else if (level >= 0 && NULL != c->dropped) {
            ++my_callbacks;
            c->dropped(taken[i].count, r, s->index, safety, c->user_data[level]);
            --my_callbacks;
            unref(r);
        } else {
            blocked |= has_low(c, safety);  /* no callback at all never blocks */
            taken[kept++] = taken[i];
        }
    }
    /* what could not be reported goes back, merged with drops noted meanwhile */
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < kept; ++i) {
        int j = 0;
        while (j < s->num_drops && s->drops[j].registration != taken[i].registration) {
            ++j;
        }
        if (j < s->num_drops) {
            s->drops[j].count += taken[i].count;
            unref(taken[i].registration);
        } else if (s->num_drops < s->drops_capacity) {
            s->drops[s->num_drops] = taken[i];
            __atomic_store_n(&s->num_drops, s->num_drops + 1, __ATOMIC_RELAXED);
        } else {
            /* the array taken out is larger than what was noted meanwhile */
            struct drop *d = realloc(s->drops, (size_t)(s->num_drops + kept) * sizeof *d);
            if (NULL == d) {
                unref(taken[i].registration);
                continue;
            }
            s->drops = d;
            s->drops_capacity = s->num_drops + kept;
            s->drops[s->num_drops] = taken[i];
            __atomic_store_n(&s->num_drops, s->num_drops + 1, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&s->lock);
    free(taken);
    return !blocked;
}

static struct entry *entry_at(struct source *s, int i)
{
    return (struct entry *)(s->entries + (size_t)((s->head + i) % capacity) * entry_size);
}

static int push(struct source *s, spc_ev_registration *r, int type, uint64_t ticks,
                const void *data)
{
    pthread_mutex_lock(&s->lock);
    int ok = s->count < capacity;
    if (ok) {
        struct entry *e = entry_at(s, s->count);
        __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
        *e = (struct entry){r, ticks, type};
        memcpy(e + 1, data, types[type].extent);
        __atomic_store_n(&s->count, s->count + 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

static void dispatch(struct source *s, spc_ev_registration *r, int type, uint64_t ticks,
                     const void *data, int safety)
{
    const struct callbacks *c = LOAD(&r->callbacks);
    int level = chosen(c, safety);
    if (level < 0 && !has_low(c, safety)) {
        note_drop(s, r, c);  /* no callback at all: nothing may take it */
    } else if (level >= 0 && 0 == __atomic_load_n(&s->count, __ATOMIC_RELAXED) &&
               flush_drops(s, safety)) {
        invoke(c, level, r, type, s->index, ticks, data, safety);
    } else if (!push(s, r, type, ticks, data)) {
        note_drop(s, r, c);
    }
}

void spc_ev_raise(int type, const void *object, const void *data)
{
    uint64_t ticks = spc_ticks();
    struct source *s = NULL != my_source ? my_source : claim_source();
    if (NULL == s) {
        return;  /* more threads than sources */
    }
    int safety = __atomic_load_n(&raise_safety, __ATOMIC_RELAXED);
    enter();
    const struct registrations *list = __atomic_load_n(&lists[type], __ATOMIC_SEQ_CST);
    for (int i = 0; NULL != list && i < list->n; ++i) {
        spc_ev_registration *r = list->items[i];
        if (r->object == object && !__atomic_load_n(&r->freed, __ATOMIC_ACQUIRE) &&
            !__atomic_load_n(&r->object_gone, __ATOMIC_RELAXED)) {
            dispatch(s, r, type, ticks, data, safety);
        }
    }
    leave(safety);
}

/* Delivers what s holds at level NONE; the calling thread is inside. */
static void deliver(struct source *s)
{
    unsigned char *copy = malloc(entry_size);
    if (NULL == copy) {
        return;  /* they wait for the next safe point */
    }
    struct entry *e = (struct entry *)copy;
    for (;;) {
        flush_drops(s, SPC_EV_NONE);
        pthread_mutex_lock(&s->lock);
        int have = s->count > 0;
        if (have) {
            memcpy(copy, entry_at(s, 0), entry_size);
            s->head = (s->head + 1) % capacity;
            __atomic_store_n(&s->count, s->count - 1, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&s->lock);
        if (!have) {
            break;
        }
        spc_ev_registration *r = e->registration;
        if (!LOAD(&r->freed) && !LOAD(&r->object_gone)) {
            const struct callbacks *c = LOAD(&r->callbacks);
            int level = chosen(c, SPC_EV_NONE);
            if (level >= 0) {
                invoke(c, level, r, e->type, s->index, e->ticks, e + 1, SPC_EV_NONE);
            } else {
                note_drop(s, r, c);  /* its callbacks were removed meanwhile */
            }
        }
        unref(r);
    }
    free(copy);
}

static int has_work(const struct source *s)
{
    return __atomic_load_n(&s->count, __ATOMIC_RELAXED) > 0 ||
           __atomic_load_n(&s->num_drops, __ATOMIC_RELAXED) > 0;
}

void spc_ev_safe_point(void)
{
    struct source *s = my_source;
    if (NULL == s || !has_work(s) || 0 != pthread_mutex_trylock(&delivery_lock)) {
        return;
    }
    enter();
    deliver(s);
    leave(SPC_EV_NONE);
    pthread_mutex_unlock(&delivery_lock);
}

void spc_ev_deliver_all(void)
{
    if (my_callbacks > 0 || (NULL == my_source && NULL == claim_source())) {
        return;
    }
    pthread_mutex_lock(&delivery_lock);
    enter();
    for (int i = 0; i < __atomic_load_n(&num_sources, __ATOMIC_ACQUIRE); ++i) {
        struct source *s = LOAD(&sources[i]);
        if (NULL != s && has_work(s)) {
            deliver(s);
        }
    }
    leave(SPC_EV_NONE);
    pthread_mutex_unlock(&delivery_lock);
}

int spc_ev_in_callback(void) { return my_callbacks > 0; }

int spc_ev_buffered_here(void)
{
    return NULL != my_source ? __atomic_load_n(&my_source->count, __ATOMIC_RELAXED) : 0;
}

/* ---- instances and sources ---------------------------------------------------- */

static int valid_instance(const spc_ev_instance *instance)
{
    return NULL != instance && instance == my_instance;
}

int spc_ev_read(const spc_ev_instance *instance, int element, void *buffer)
{
    if (!valid_instance(instance)) {
        return SPC_EV_ERR_HANDLE;
    }
    const struct spc_ev_type *t = &types[instance->type];
    if (element < 0 || element >= t->num_elements) {
        return SPC_EV_ERR_INDEX;
    }
    if (NULL == buffer) {
        return SPC_EV_ERR_ARG;
    }
    memcpy(buffer, instance->data + t->displacements[element], t->sizes[element]);
    return SPC_EV_OK;
}

int spc_ev_copy(const spc_ev_instance *instance, void *buffer)
{
    if (!valid_instance(instance)) {
        return SPC_EV_ERR_HANDLE;
    }
    if (NULL == buffer) {
        return SPC_EV_ERR_ARG;
    }
    memcpy(buffer, instance->data, types[instance->type].extent);
    return SPC_EV_OK;
}

int spc_ev_timestamp(const spc_ev_instance *instance, uint64_t *ticks)
{
    if (!valid_instance(instance)) {
        return SPC_EV_ERR_HANDLE;
    }
    if (NULL == ticks) {
        return SPC_EV_ERR_ARG;
    }
    *ticks = instance->ticks;
    return SPC_EV_OK;
}

int spc_ev_source_of(const spc_ev_instance *instance, int *source)
{
    if (!valid_instance(instance)) {
        return SPC_EV_ERR_HANDLE;
    }
    if (NULL == source) {
        return SPC_EV_ERR_ARG;
    }
    *source = instance->source;
    return SPC_EV_OK;
}

int spc_ev_num_sources(void) { return __atomic_load_n(&num_sources, __ATOMIC_ACQUIRE); }

void drop_waiting(void)
{
    for (int i = 0; i < spc_ev_num_sources(); ++i) {
        struct source *s = LOAD(&sources[i]);
        pthread_mutex_lock(&s->lock);
        for (; s->count > 0; __atomic_store_n(&s->count, s->count - 1, __ATOMIC_RELAXED)) {
            unref(entry_at(s, 0)->registration);
            s->head = (s->head + 1) % capacity;
        }
        for (int d = 0; d < s->num_drops; ++d) {
            unref(s->drops[d].registration);
        }
        __atomic_store_n(&s->num_drops, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&s->lock);
    }
}
