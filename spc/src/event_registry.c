/*
 * The registrations of the MPI_T event machinery (spc/events.h): each event
 * type's registrations as an array raisers read without a lock, replaced
 * (copy on write) when one is added or removed, as is a registration's set
 * of callbacks; what is replaced is freed after a grace period
 * (event_grace.c).  The type's site is on while it has a registration, the
 * safe point's while some registration has a callback its events would have
 * to wait for.
 */
#include <stdlib.h>

#include "event_internal.h"

const struct spc_ev_type *types;
int num_types;
int capacity;
size_t entry_size;
int raise_safety = SPC_EV_MPI_RESTRICTED;

pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
struct registrations *lists[SPC_EV_MAX_TYPES];
static spc_ev_registration *live;                   /* registry lock */
static int low_registrations;                        /* registry lock */
static int safe_point_on;                            /* registry lock */

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
    drop_waiting();
    reclaim(SPC_EV_MPI_RESTRICTED, 1);
}
