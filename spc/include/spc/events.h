/*
 * The machinery behind MPI_T events (MPI 4.1 section 16.3.8), free of MPI so
 * that its concurrency can be tested alone under ThreadSanitizer:
 * registrations and their callbacks per safety level, dispatch to the
 * callback of the lowest level valid where an event is raised, one source
 * per raising thread with a bounded buffer for the events that wait for the
 * thread's next safe point, dropped counts, and free callbacks once no more
 * events can arrive.  Open MPI's side (pvar_export/ompi/ompi_spc_events.c)
 * puts MPI_T's names, types and error codes on it.
 */
#ifndef SPC_EVENTS_H
#define SPC_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "spc/spc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_T_cb_safety's levels, in its order: each includes the restrictions of
 * the ones before it. */
enum spc_ev_safety {
    SPC_EV_NONE,
    SPC_EV_MPI_RESTRICTED,
    SPC_EV_THREAD_SAFE,
    SPC_EV_ASYNC_SIGNAL_SAFE,
    SPC_EV_NUM_SAFETY
};

enum spc_ev_result {
    SPC_EV_OK = 0,
    SPC_EV_ERR_INDEX = -1,          /* no such event type or source */
    SPC_EV_ERR_HANDLE = -2,         /* not a live registration or instance */
    SPC_EV_ERR_ARG = -3,            /* an argument out of range */
    SPC_EV_ERR_MEMORY = -4,
    SPC_EV_ERR_NOT_ACCESSIBLE = -5  /* not allowed where the caller is */
};

/* The handles MPI_T hands out: mpi.h names the same structures. */
struct ompi_mpit_event_registration_t;
struct ompi_mpit_event_instance_t;
typedef struct ompi_mpit_event_registration_t spc_ev_registration;
typedef struct ompi_mpit_event_instance_t spc_ev_instance;

/* The callbacks' types, as MPI_T's with int for MPI_T_cb_safety and long
 * long for MPI_Count. */
typedef void spc_ev_callback(spc_ev_instance *instance, spc_ev_registration *registration,
                             int safety, void *user_data);
typedef void spc_ev_free_callback(spc_ev_registration *registration, int safety,
                                  void *user_data);
typedef void spc_ev_dropped_callback(long long count, spc_ev_registration *registration,
                                     int source, int safety, void *user_data);

/* What the core needs to know of an event type: its elements' places and
 * sizes in the data a raise passes, and the data's extent. */
struct spc_ev_type {
    int num_elements;
    const size_t *displacements;
    const size_t *sizes;
    size_t extent;
};

/* Takes the event types (kept by pointer: static data), numbered 0 to
 * num_types - 1, whose sites are switched by SPC_SWITCH_FIRST_EVENT + type;
 * one more switch, SPC_SWITCH_FIRST_EVENT + num_types, is the safe point's
 * (spc_ev_safe_point); so num_types < SPC_EV_MAX_TYPES.
 * buffer_capacity events wait per source at most.  The first call sets up;
 * later ones return SPC_EV_OK and change nothing. */
#define SPC_EV_MAX_TYPES (SPC_NUM_SWITCHES - SPC_SWITCH_FIRST_EVENT)
int spc_ev_init(const struct spc_ev_type *types, int num_types, int buffer_capacity);
/* Frees every registration (no free callbacks: their owner gave up MPI_T)
 * and every buffered event; the sources stay.  Not from inside a callback. */
void spc_ev_fini(void);

/* The safety level of the places events are raised at (ob1: MPI_RESTRICTED,
 * THREAD_SAFE when threads may raise at once); set before events flow. */
void spc_ev_set_raise_safety(int safety);
int spc_ev_raise_safety(void);

/* ---- registrations ------------------------------------------------------ */

int spc_ev_alloc(int type, const void *object, spc_ev_registration **registration);
/* Whether registration is live (allocated and not yet freed). */
int spc_ev_check(const spc_ev_registration *registration);
/* The type of a live registration, or SPC_EV_ERR_HANDLE. */
int spc_ev_type_of(const spc_ev_registration *registration);
/* callback NULL removes the level's callback. */
int spc_ev_register(spc_ev_registration *registration, int safety, spc_ev_callback *callback,
                    void *user_data);
/* NULL: no drops are counted from now on. */
int spc_ev_set_dropped(spc_ev_registration *registration, spc_ev_dropped_callback *dropped);
/* No callback of registration starts after this returns; free_callback (may
 * be NULL) runs once none is running any more and the registration is gone:
 * before this returns, unless called from inside a callback, then when the
 * calling thread leaves its outermost callback. */
int spc_ev_free(spc_ev_registration *registration, void *user_data,
                spc_ev_free_callback *free_callback);
/* The object registrations are bound to is gone (a communicator freed):
 * they receive nothing more, even if a new object gets its address. */
void spc_ev_object_gone(const void *object);

/* ---- raising and delivering ---------------------------------------------- */

/* An event of type observed now on object, with data laid out as the type
 * says (copied if it must wait).  Called from the type's SPC_EVENT site. */
void spc_ev_raise(int type, const void *object, const void *data);
/* The calling thread's safe point (level NONE): delivers what its source
 * holds, unless another thread is delivering (callbacks at level NONE
 * never run at the same time), then it is left for the next one. */
void spc_ev_safe_point(void);
/* Delivers every source's events (MPI_Finalize: no other thread raises). */
void spc_ev_deliver_all(void);
/* Whether the calling thread is inside an event, free or dropped callback. */
int spc_ev_in_callback(void);

/* ---- instances (valid only inside their callback) ------------------------- */

int spc_ev_read(const spc_ev_instance *instance, int element, void *buffer);
int spc_ev_copy(const spc_ev_instance *instance, void *buffer);
int spc_ev_timestamp(const spc_ev_instance *instance, uint64_t *ticks);
int spc_ev_source_of(const spc_ev_instance *instance, int *source);

/* ---- sources: one per thread that raised or delivered, 0 from the start --- */

int spc_ev_num_sources(void);
/* The most sources there will be; a thread beyond it raises nothing. */
#define SPC_EV_MAX_SOURCES 1024

/* ---- for tests ------------------------------------------------------------ */

/* Events waiting in the calling thread's source. */
int spc_ev_buffered_here(void);

#ifdef __cplusplus
}
#endif

#endif
