/*
 * MPI_T events in Open MPI 4.1.4 (MPI 4.1 section 16.3.8): ob1's events of
 * ompi_spc_events.h described to MPI_T, and the work of the MPI_T_event_*
 * and MPI_T_source_* functions on top of the core's event machinery
 * (spc/events.h), with the standard's error codes.
 *
 * Where callbacks run: at the event's place in ob1 (often under ob1's
 * matching lock), with required level MPI_RESTRICTED, or THREAD_SAFE when
 * MPI_THREAD_MULTIPLE lets threads raise at once; the lowest registered
 * level at or above that is called.  Events for registrations whose
 * callbacks are all below it (only NONE) wait in the raising thread's
 * source and are delivered, at level NONE, at the start of MPI_Finalize:
 * Open MPI 4.1.4 has no place where a thread leaves the library that the
 * series hooks yet.  Built with SPC compiled out there are no events.
 */
#include "ompi_config.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/info/info.h"
#include "ompi/mpi/tool/mpit-internal.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/runtime/ompi_spc_events.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include OMPI_SPC_MUTEX_HEADER

#if SPC_ENABLE
#define NUM_EVENTS OMPI_SPC_NUM_EVENTS
#else
#define NUM_EVENTS 0
#endif

/* ---- the event types, from the one list ------------------------------------- */

struct event_info {
    const char *name, *description;
    int verbosity;
};

static const struct event_info events[OMPI_SPC_NUM_EVENTS] = {
#define SPC_EVENT_TYPE(id, name, verbosity, description) \
    {OMPI_SPC_EVENT_PREFIX #name, description, verbosity},
#include "ompi/runtime/ompi_spc_events.def"
};

static const size_t displacements[] = {
#define SPC_EVENT_ELEMENT(name, ctype, datatype, description) offsetof(struct ompi_spc_event_data, name),
#include "ompi/runtime/ompi_spc_events.def"
};
static const size_t sizes[] = {
#define SPC_EVENT_ELEMENT(name, ctype, datatype, description) sizeof(ctype),
#include "ompi/runtime/ompi_spc_events.def"
};
#define NUM_ELEMENTS ((int)(sizeof sizes / sizeof sizes[0]))

/* The core's view: every event has the same elements. */
static struct spc_ev_type types[OMPI_SPC_NUM_EVENTS];

/* mpi_spc_events_buffer: how many events a source holds for its next safe
 * point; read once, when the first MPI_T event function runs. */
static int buffer_capacity = 1024;
static opal_mutex_t setup_lock = OPAL_MUTEX_STATIC_INIT;
static bool set_up;
static mca_base_var_enum_t *element_names;

static int setup(void)
{
    int rc = MPI_SUCCESS;
    opal_mutex_lock(&setup_lock);
    if (!set_up) {
        (void)mca_base_var_register("ompi", "mpi", NULL, "spc_events_buffer",
                                    "Events each source (a thread that raises MPI_T events) keeps "
                                    "for its next delivery point when no registered callback may "
                                    "run where they are raised; beyond it they are dropped and "
                                    "counted for the dropped handlers. Read when a tool first "
                                    "uses an MPI_T event function.",
                                    MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_4,
                                    MCA_BASE_VAR_SCOPE_READONLY, &buffer_capacity);
        if (buffer_capacity < 1) {
            opal_output(0, "spc: mpi_spc_events_buffer must be 1 or more, not %d; using 1",
                        buffer_capacity);
            buffer_capacity = 1;
        }
        for (int t = 0; t < OMPI_SPC_NUM_EVENTS; ++t) {
            types[t] = (struct spc_ev_type){NUM_ELEMENTS, displacements, sizes,
                                            sizeof(struct ompi_spc_event_data)};
        }
        if (SPC_EV_OK != spc_ev_init(types, NUM_EVENTS, buffer_capacity)) {
            rc = MPI_T_ERR_MEMORY;
        } else {
            __atomic_store_n(&set_up, true, __ATOMIC_RELEASE);
        }
    }
    opal_mutex_unlock(&setup_lock);
    return rc;
}

static bool is_set_up(void) { return __atomic_load_n(&set_up, __ATOMIC_ACQUIRE); }

static int mpit_error(int rc)
{
    switch (rc) {
    case SPC_EV_OK: return MPI_SUCCESS;
    case SPC_EV_ERR_INDEX: return MPI_T_ERR_INVALID_INDEX;
    case SPC_EV_ERR_HANDLE: return MPI_T_ERR_INVALID_HANDLE;
    case SPC_EV_ERR_MEMORY: return MPI_T_ERR_MEMORY;
    case SPC_EV_ERR_NOT_ACCESSIBLE: return MPI_T_ERR_NOT_ACCESSIBLE;
    default: return MPI_T_ERR_INVALID;
    }
}

/* Info objects exist between MPI_Init and MPI_Finalize, or while a session
 * is open (OMPI_SPC_INFO_ACCESSIBLE): elsewhere a call that returns one is refused
 * with MPI_T_ERR_NOT_ACCESSIBLE, as MPI 4.1 section 16.3.8.2 allows.
 * Hints: none are supported, so the object is empty.  It is made as
 * MPI_Info_create makes one (OMPI_SPC_INFO_NEW), for MPI_Info_free undoes
 * what that did: on 5.0 it releases a reference on MPI's instance. */
static int new_info(MPI_Info *info)
{
    if (!OMPI_SPC_INFO_ACCESSIBLE()) {
        return MPI_T_ERR_NOT_ACCESSIBLE;
    }
    *info = OMPI_SPC_INFO_NEW();
    return NULL == *info ? MPI_T_ERR_MEMORY : MPI_SUCCESS;
}

/* ---- event types ----------------------------------------------------------------- */

int ompi_mpit_event_get_num(int *num_events)
{
    if (NULL == num_events) {
        return MPI_T_ERR_INVALID;
    }
    *num_events = NUM_EVENTS;
    return MPI_SUCCESS;
}

/* The enumeration MPI_T_event_get_info returns: item i names element i. */
static void element_enum(MPI_T_enum *enumtype)
{
    static const char *const names[] = {
#define SPC_EVENT_ELEMENT(name, ctype, datatype, description) #name,
#include "ompi/runtime/ompi_spc_events.def"
    };
    static mca_base_var_enum_value_t items[NUM_ELEMENTS + 1];  /* ends with {0, NULL} */
    opal_mutex_lock(&setup_lock);
    if (NULL == element_names) {
        for (int i = 0; i < NUM_ELEMENTS; ++i) {
            items[i] = (mca_base_var_enum_value_t){i, names[i]};
        }
        (void)mca_base_var_enum_create("ompi_pml_ob1_event_elements", items, &element_names);
    }
    opal_mutex_unlock(&setup_lock);
    *enumtype = NULL != element_names ? element_names : MPI_T_ENUM_NULL;
}

int ompi_mpit_event_get_info(int event_index, char *name, int *name_len, int *verbosity,
                             MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[],
                             int *num_elements, MPI_T_enum *enumtype, MPI_Info *info, char *desc,
                             int *desc_len, int *bind)
{
    static const MPI_Datatype datatypes[] = {
#define SPC_EVENT_ELEMENT(name, ctype, datatype, description) datatype,
#include "ompi/runtime/ompi_spc_events.def"
    };
    if (event_index < 0 || event_index >= NUM_EVENTS) {
        return MPI_T_ERR_INVALID_INDEX;
    }
    const struct event_info *e = &events[event_index];
    if (NULL != info) {
        int rc = new_info(info);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
    }
    mpit_copy_string(name, name_len, e->name);
    mpit_copy_string(desc, desc_len, e->description);
    if (NULL != verbosity) {
        *verbosity = e->verbosity;
    }
    if (NULL != num_elements) {
        /* truncated to the caller's arrays; the count needed comes back */
        for (int i = 0; i < NUM_ELEMENTS && i < *num_elements; ++i) {
            if (NULL != array_of_datatypes) {
                array_of_datatypes[i] = datatypes[i];
            }
            if (NULL != array_of_displacements) {
                array_of_displacements[i] = (MPI_Aint)displacements[i];
            }
        }
        *num_elements = NUM_ELEMENTS;
    }
    if (NULL != enumtype) {
        element_enum(enumtype);
    }
    if (NULL != bind) {
        *bind = MPI_T_BIND_MPI_COMM;
    }
    return MPI_SUCCESS;
}

int ompi_mpit_event_get_index(const char *name, int *event_index)
{
    if (NULL == name || NULL == event_index) {
        return MPI_T_ERR_INVALID;
    }
    for (int t = 0; t < NUM_EVENTS; ++t) {
        if (0 == strcmp(name, events[t].name)) {
            *event_index = t;
            return MPI_SUCCESS;
        }
    }
    return MPI_T_ERR_INVALID_NAME;
}

/* ---- registrations ------------------------------------------------------------------ */

int ompi_mpit_event_handle_alloc(int event_index, void *obj_handle, MPI_Info info,
                                 MPI_T_event_registration *event_registration)
{
    (void)info;  /* no hints are supported */
    if (event_index < 0 || event_index >= NUM_EVENTS) {
        return MPI_T_ERR_INVALID_INDEX;
    }
    if (NULL == obj_handle || NULL == event_registration) {
        return MPI_T_ERR_INVALID;
    }
    /* every event is bound to a communicator: obj_handle points to it */
    ompi_communicator_t *comm = *(MPI_Comm *)obj_handle;
    if (ompi_comm_invalid(comm)) {
        return MPI_T_ERR_INVALID_HANDLE;
    }
    int rc = setup();
    if (MPI_SUCCESS != rc) {
        return rc;
    }
    return mpit_error(spc_ev_alloc(event_index, comm, event_registration));
}

int ompi_mpit_event_handle_set_info(MPI_T_event_registration event_registration, MPI_Info info)
{
    (void)info;  /* hints an implementation does not support are ignored */
    return spc_ev_check(event_registration) ? MPI_SUCCESS : MPI_T_ERR_INVALID_HANDLE;
}

int ompi_mpit_event_handle_get_info(MPI_T_event_registration event_registration, MPI_Info *info_used)
{
    if (!spc_ev_check(event_registration)) {
        return MPI_T_ERR_INVALID_HANDLE;
    }
    return NULL == info_used ? MPI_T_ERR_INVALID : new_info(info_used);
}

static bool valid_safety(MPI_T_cb_safety cb_safety)
{
    return cb_safety >= MPI_T_CB_REQUIRE_NONE && cb_safety <= MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE;
}

int ompi_mpit_event_register_callback(MPI_T_event_registration event_registration,
                                      MPI_T_cb_safety cb_safety, MPI_Info info, void *user_data,
                                      MPI_T_event_cb_function *event_cb_function)
{
    (void)info;
    if (!valid_safety(cb_safety)) {
        return MPI_T_ERR_INVALID;
    }
    /* MPI_T's callback type differs from the core's only in naming
     * MPI_T_cb_safety for int; through void (*)(void) without a warning */
    return mpit_error(spc_ev_register(event_registration, (int)cb_safety,
                                      (spc_ev_callback *)(void (*)(void))event_cb_function,
                                      user_data));
}

int ompi_mpit_event_callback_set_info(MPI_T_event_registration event_registration,
                                      MPI_T_cb_safety cb_safety, MPI_Info info)
{
    (void)info;
    if (!valid_safety(cb_safety)) {
        return MPI_T_ERR_INVALID;
    }
    return spc_ev_check(event_registration) ? MPI_SUCCESS : MPI_T_ERR_INVALID_HANDLE;
}

int ompi_mpit_event_callback_get_info(MPI_T_event_registration event_registration,
                                      MPI_T_cb_safety cb_safety, MPI_Info *info_used)
{
    if (!valid_safety(cb_safety) || NULL == info_used) {
        return MPI_T_ERR_INVALID;
    }
    return spc_ev_check(event_registration) ? new_info(info_used) : MPI_T_ERR_INVALID_HANDLE;
}

int ompi_mpit_event_handle_free(MPI_T_event_registration event_registration, void *user_data,
                                MPI_T_event_free_cb_function *free_cb_function)
{
    return mpit_error(spc_ev_free(event_registration, user_data,
                                  (spc_ev_free_callback *)(void (*)(void))free_cb_function));
}

int ompi_mpit_event_set_dropped_handler(MPI_T_event_registration event_registration,
                                        MPI_T_event_dropped_cb_function *dropped_cb_function)
{
    return mpit_error(spc_ev_set_dropped(event_registration,
                                         (spc_ev_dropped_callback *)(void (*)(void))dropped_cb_function));
}

/* ---- instances --------------------------------------------------------------------- */

int ompi_mpit_event_read(MPI_T_event_instance event_instance, int element_index, void *buffer)
{
    return mpit_error(spc_ev_read(event_instance, element_index, buffer));
}

int ompi_mpit_event_copy(MPI_T_event_instance event_instance, void *buffer)
{
    return mpit_error(spc_ev_copy(event_instance, buffer));
}

/* Ticks of the cycle counter, as MPI_Count (the sources' max_ticks). */
static MPI_Count as_count(uint64_t ticks) { return (MPI_Count)(ticks & (uint64_t)LLONG_MAX); }

int ompi_mpit_event_get_timestamp(MPI_T_event_instance event_instance, MPI_Count *event_timestamp)
{
    uint64_t ticks;
    int rc = spc_ev_timestamp(event_instance, NULL != event_timestamp ? &ticks : NULL);
    if (SPC_EV_OK == rc) {
        *event_timestamp = as_count(ticks);
    }
    return mpit_error(rc);
}

int ompi_mpit_event_get_source(MPI_T_event_instance event_instance, int *source_index)
{
    return mpit_error(spc_ev_source_of(event_instance, source_index));
}

/* ---- sources ---------------------------------------------------------------------- */

static int num_sources(void) { return NUM_EVENTS > 0 && MPI_SUCCESS == setup() ? spc_ev_num_sources() : 0; }

int ompi_mpit_source_get_num(int *num)
{
    if (NULL == num) {
        return MPI_T_ERR_INVALID;
    }
    *num = num_sources();
    return MPI_SUCCESS;
}

int ompi_mpit_source_get_info(int source_index, char *name, int *name_len, char *desc,
                              int *desc_len, MPI_T_source_order *ordering,
                              MPI_Count *ticks_per_second, MPI_Count *max_ticks, MPI_Info *info)
{
    if (source_index < 0 || source_index >= num_sources()) {
        return MPI_T_ERR_INVALID_INDEX;
    }
    if (NULL != info) {
        int rc = new_info(info);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
    }
    char text[64];
    snprintf(text, sizeof text, "ompi_pml_ob1_thread_%d", source_index);
    mpit_copy_string(name, name_len, text);
    mpit_copy_string(desc, desc_len,
                     "The events ob1 raised in one thread (source 0: the first thread that "
                     "raised or delivered any, then one per thread), called back in the order "
                     "they happened; timestamps are the CPU's cycle counter.");
    if (NULL != ordering) {
        *ordering = MPI_T_SOURCE_ORDERED;
    }
    if (NULL != ticks_per_second) {
        *ticks_per_second = (MPI_Count)llround(spc_ticks_per_second());
    }
    if (NULL != max_ticks) {
        *max_ticks = LLONG_MAX;
    }
    return MPI_SUCCESS;
}

int ompi_mpit_source_get_timestamp(int source_index, MPI_Count *timestamp)
{
    if (source_index < 0 || source_index >= num_sources()) {
        return MPI_T_ERR_INVALID_INDEX;
    }
    if (NULL == timestamp) {
        return MPI_T_ERR_INVALID;
    }
    *timestamp = as_count(spc_ticks());
    return MPI_SUCCESS;
}

/* ---- life cycle ----------------------------------------------------------------------- */

void ompi_spc_events_mpi_init(bool thread_multiple)
{
    spc_ev_set_raise_safety(thread_multiple ? SPC_EV_THREAD_SAFE : SPC_EV_MPI_RESTRICTED);
}

void ompi_spc_events_mpi_finalize(void)
{
    if (is_set_up()) {
        spc_ev_deliver_all();
    }
}

void ompi_spc_events_object_gone(const void *object)
{
    if (is_set_up()) {
        spc_ev_object_gone(object);
    }
}

int ompi_spc_events_in_callback(void) { return spc_ev_in_callback(); }

void ompi_spc_events_mpit_finalize(void)
{
    if (is_set_up()) {
        spc_ev_fini();
    }
}
