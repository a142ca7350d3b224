/*
 * The machinery behind MPI_T events (ompi_spc_event_core.h says what it
 * offers).  How it stays correct while threads raise events and tools
 * change registrations at the same time:
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
 *  - Each thread is its own source, so a source's events come in order: an
 *    event is called back at once only when its source has nothing waiting;
 *    otherwise it waits in the source's buffer (bounded; beyond it, dropped
 *    and counted), delivered in order at the thread's next safe point.
 *    Pending drop counts are reported before any later event of the source.
 *  - At a safe point (level NONE) one thread delivers at a time: callbacks of
 *    level NONE need not be thread-safe.  A thread that finds another one
 *    delivering leaves its events for its next safe point.
 */
#include "ompi_spc_event_core.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "spc/spc.h"

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

struct ompi_mpit_event_instance_t {
    int type, source;
    uint64_t ticks;
    const unsigned char *data;
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

/* Memory and registrations that wait for a grace period. */
struct retired {
    struct retired *next;
    void *memory;
    spc_ev_registration *registration;  /* its free callback, then its owner's reference */
};

static const struct spc_ev_type *types;
static int num_types;
static int capacity;
static size_t entry_size;
static int raise_safety = SPC_EV_MPI_RESTRICTED;  /* atomic */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct registrations *lists[SPC_EV_MAX_TYPES];  /* atomic pointers */
static spc_ev_registration *live;                   /* registry lock */
static int low_registrations;                        /* registry lock */
static int safe_point_on;                            /* registry lock */
static struct retired *retired_list;                 /* registry lock */
static int retired_pending;                          /* atomic */
static pthread_mutex_t reclaim_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t sources_lock = PTHREAD_MUTEX_INITIALIZER;
static struct source *sources[SPC_EV_MAX_SOURCES];  /* atomic pointers */
static int num_sources;                              /* atomic */
static int next_claim;                               /* sources lock */
static pthread_mutex_t delivery_lock = PTHREAD_MUTEX_INITIALIZER;

/* Initial-exec, as the counters' thread blocks (spc.h): a raise reads them
 * without a call to __tls_get_addr, which libmpi's default model needs. */
#define THREAD_LOCAL __thread __attribute__((tls_model("initial-exec")))
static THREAD_LOCAL struct source *my_source;
static THREAD_LOCAL int my_depth;                 /* raises and deliveries we are inside */
static THREAD_LOCAL int my_callbacks;             /* user callbacks we are inside */
static THREAD_LOCAL const spc_ev_instance *my_instance;

/* ---- sources and grace periods --------------------------------------------- */

static struct source *new_source(int index)
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

/* The calling thread's source: source 0 for the first thread that needs one,
 * then a new one per thread. */
static struct source *claim_source(void)
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

static void reclaim(int safety, int wait);

static void enter(void)
{
    if (0 == my_depth++) {
        __atomic_add_fetch(&my_source->sequence, 1, __ATOMIC_SEQ_CST);
    }
}

static void leave(int safety)
{
    if (0 == --my_depth) {
        __atomic_add_fetch(&my_source->sequence, 1, __ATOMIC_RELEASE);
        if (__atomic_load_n(&retired_pending, __ATOMIC_RELAXED)) {
            reclaim(safety, 0);  /* unless another thread is at it */
        }
    }
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

static void unref(spc_ev_registration *r)
{
    if (0 == __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL)) {
        free(LOAD(&r->callbacks));
        free(r);
    }
}

/* Registry lock held. */
static void retire(void *memory, spc_ev_registration *registration)
{
    struct retired *r = malloc(sizeof *r);
    if (NULL == r) {
        return;  /* memory leaks, a registration keeps its reference: never wrong */
    }
    *r = (struct retired){retired_list, memory, registration};
    retired_list = r;
    __atomic_store_n(&retired_pending, 1, __ATOMIC_RELAXED);
}

/* Frees what was retired, after a grace period; runs free callbacks.  Not
 * from inside a raise, delivery or callback (the thread would wait for
 * itself): then it is left for the thread's way out.  Without wait, it
 * leaves the work to a thread already at it. */
static void reclaim(int safety, int wait)
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

/* ---- registrations ---------------------------------------------------------- */

static int valid_type(int type) { return type >= 0 && type < num_types; }

/* Registry lock held: a live registration? */
static int is_live(const spc_ev_registration *registration)
{
    for (spc_ev_registration *r = live; NULL != r; r = r->next_live) {
        if (r == registration) {
            return 1;
        }
    }
    return 0;
}

/* Registry lock held: type's array with add appended and remove left out. */
static int publish(int type, spc_ev_registration *add, spc_ev_registration *remove)
{
    struct registrations *old = lists[type];
    int n = NULL != old ? old->n : 0;
    struct registrations *now = malloc(sizeof *now + (size_t)(n + 1) * sizeof now->items[0]);
    if (NULL == now) {
        return SPC_EV_ERR_MEMORY;
    }
    now->n = 0;
    for (int i = 0; i < n; ++i) {
        if (old->items[i] != remove) {
            now->items[now->n++] = old->items[i];
        }
    }
    if (NULL != add) {
        now->items[now->n++] = add;
    }
    __atomic_store_n(&lists[type], now, __ATOMIC_SEQ_CST);
    retire(old, NULL);
    return SPC_EV_OK;
}

static int has_low(const struct callbacks *c, int level)
{
    for (int l = 0; l < level; ++l) {
        if (NULL != c->callback[l]) {
            return 1;
        }
    }
    return 0;
}

/* The level of the callback to call where the level is required, or -1. */
static int chosen(const struct callbacks *c, int level)
{
    for (int l = level; l < SPC_EV_NUM_SAFETY; ++l) {
        if (NULL != c->callback[l]) {
            return l;
        }
    }
    return -1;
}

/* Registry lock held: the safe point's site is on while some registration
 * has a callback its events would have to wait for. */
static void update_low(spc_ev_registration *r, int now_low)
{
    if (now_low != r->low) {
        r->low = now_low;
        low_registrations += now_low ? 1 : -1;
    }
    int want = low_registrations > 0;
    if (want != safe_point_on) {
        safe_point_on = want;
        if (want) {
            spc_switch_on(SPC_SWITCH_FIRST_EVENT + num_types);
        } else {
            spc_switch_off(SPC_SWITCH_FIRST_EVENT + num_types);
        }
    }
}

int spc_ev_alloc(int type, const void *object, spc_ev_registration **registration)
{
    if (!valid_type(type)) {
        return SPC_EV_ERR_INDEX;
    }
    if (NULL == registration) {
        return SPC_EV_ERR_ARG;
    }
    spc_ev_registration *r = calloc(1, sizeof *r);
    struct callbacks *c = calloc(1, sizeof *c);
    if (NULL == r || NULL == c) {
        free(r);
        free(c);
        return SPC_EV_ERR_MEMORY;
    }
    r->type = type;
    r->object = object;
    r->callbacks = c;
    r->refs = 1;
    pthread_mutex_lock(&registry_lock);
    int rc = publish(type, r, NULL);
    if (SPC_EV_OK == rc) {
        r->next_live = live;
        live = r;
        /* after publishing: once its site is on, the event reaches r */
        spc_switch_on(SPC_SWITCH_FIRST_EVENT + type);
    }
    pthread_mutex_unlock(&registry_lock);
    if (SPC_EV_OK != rc) {
        free(c);
        free(r);
        return rc;
    }
    *registration = r;
    reclaim(SPC_EV_MPI_RESTRICTED, 1);
    return SPC_EV_OK;
}

int spc_ev_check(const spc_ev_registration *registration)
{
    pthread_mutex_lock(&registry_lock);
    int ok = is_live(registration);
    pthread_mutex_unlock(&registry_lock);
    return ok;
}

int spc_ev_type_of(const spc_ev_registration *registration)
{
    return spc_ev_check(registration) ? registration->type : SPC_EV_ERR_HANDLE;
}

/* Registry lock held: replaces r's callbacks with a changed copy. */
static int change_callbacks(spc_ev_registration *r, int safety, spc_ev_callback *callback,
                            void *user_data, int set_dropped, spc_ev_dropped_callback *dropped)
{
    struct callbacks *old = r->callbacks, *now = malloc(sizeof *now);
    if (NULL == now) {
        return SPC_EV_ERR_MEMORY;
    }
    *now = *old;
    if (set_dropped) {
        now->dropped = dropped;
    } else {
        now->callback[safety] = callback;
        now->user_data[safety] = NULL != callback ? user_data : NULL;
    }
    STORE(&r->callbacks, now);
    retire(old, NULL);
    update_low(r, has_low(now, __atomic_load_n(&raise_safety, __ATOMIC_RELAXED)));
    return SPC_EV_OK;
}

int spc_ev_register(spc_ev_registration *registration, int safety, spc_ev_callback *callback,
                    void *user_data)
{
    if (safety < 0 || safety >= SPC_EV_NUM_SAFETY) {
        return SPC_EV_ERR_ARG;
    }
    pthread_mutex_lock(&registry_lock);
    int rc = is_live(registration)
                 ? change_callbacks(registration, safety, callback, user_data, 0, NULL)
                 : SPC_EV_ERR_HANDLE;
    pthread_mutex_unlock(&registry_lock);
    reclaim(SPC_EV_MPI_RESTRICTED, 1);
    return rc;
}

int spc_ev_set_dropped(spc_ev_registration *registration, spc_ev_dropped_callback *dropped)
{
    pthread_mutex_lock(&registry_lock);
    int rc = is_live(registration) ? change_callbacks(registration, 0, NULL, NULL, 1, dropped)
                                   : SPC_EV_ERR_HANDLE;
    pthread_mutex_unlock(&registry_lock);
    reclaim(SPC_EV_MPI_RESTRICTED, 1);
    return rc;
}

/* Registry lock held, r live: r stops receiving and waits to be reclaimed. */
static void unlink_live(spc_ev_registration *r, spc_ev_free_callback *free_callback,
                        void *user_data)
{
    for (spc_ev_registration **p = &live; NULL != *p; p = &(*p)->next_live) {
        if (*p == r) {
            *p = r->next_live;
            break;
        }
    }
    __atomic_store_n(&r->freed, 1, __ATOMIC_SEQ_CST);
    if (SPC_EV_OK != publish(r->type, NULL, r)) {
        /* no memory for a smaller array: r stays in it, freed, and is never
         * released (raisers skip it) */
        __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
    }
    r->free_callback = free_callback;
    r->free_user_data = user_data;
    update_low(r, 0);
    spc_switch_off(SPC_SWITCH_FIRST_EVENT + r->type);
    retire(NULL, r);
}

int spc_ev_free(spc_ev_registration *registration, void *user_data,
                spc_ev_free_callback *free_callback)
{
    pthread_mutex_lock(&registry_lock);
    int ok = is_live(registration);
    if (ok) {
        unlink_live(registration, free_callback, user_data);
    }
    pthread_mutex_unlock(&registry_lock);
    if (!ok) {
        return SPC_EV_ERR_HANDLE;
    }
    reclaim(SPC_EV_MPI_RESTRICTED, 1);
    return SPC_EV_OK;
}

void spc_ev_object_gone(const void *object)
{
    pthread_mutex_lock(&registry_lock);
    for (spc_ev_registration *r = live; NULL != r; r = r->next_live) {
        if (r->object == object) {
            __atomic_store_n(&r->object_gone, 1, __ATOMIC_SEQ_CST);
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

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

/* ---- set-up --------------------------------------------------------------------- */

int spc_ev_init(const struct spc_ev_type *event_types, int count, int buffer_capacity)
{
    pthread_mutex_lock(&sources_lock);
    int rc = SPC_EV_OK;
    if (NULL == types) {
        if (count < 0 || count >= SPC_EV_MAX_TYPES || buffer_capacity < 1) {
            rc = SPC_EV_ERR_ARG;
        } else {
            size_t largest = 0;
            for (int t = 0; t < count; ++t) {
                largest = event_types[t].extent > largest ? event_types[t].extent : largest;
            }
            entry_size = (sizeof(struct entry) + largest + 7) / 8 * 8;
            capacity = buffer_capacity;
            num_types = count;
            if (NULL == new_source(0)) {
                rc = SPC_EV_ERR_MEMORY;
            } else {
                STORE(&types, event_types);
            }
        }
    }
    pthread_mutex_unlock(&sources_lock);
    return rc;
}

void spc_ev_set_raise_safety(int safety)
{
    pthread_mutex_lock(&registry_lock);
    __atomic_store_n(&raise_safety, safety, __ATOMIC_RELAXED);
    for (spc_ev_registration *r = live; NULL != r; r = r->next_live) {
        update_low(r, has_low(r->callbacks, safety));
    }
    pthread_mutex_unlock(&registry_lock);
}

int spc_ev_raise_safety(void) { return __atomic_load_n(&raise_safety, __ATOMIC_RELAXED); }

void spc_ev_fini(void)
{
    pthread_mutex_lock(&registry_lock);
    while (NULL != live) {
        unlink_live(live, NULL, NULL);
    }
    pthread_mutex_unlock(&registry_lock);
    /* what waits in the sources now belongs to freed registrations */
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
    reclaim(SPC_EV_MPI_RESTRICTED, 1);
}
