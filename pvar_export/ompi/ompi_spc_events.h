/*
 * ob1's MPI_T events (MPI 4.1 section 16.3.8), listed in ompi_spc_events.def:
 * their ids, the data each carries, OMPI_SPC_EVENT for ob1's sites, and what
 * Open MPI's MPI_T functions (ompi_spc_events_mpit.c, built via
 * ompi/runtime/Makefile.am) call in ompi_spc_events.c.
 */
#ifndef OMPI_SPC_EVENTS_H
#define OMPI_SPC_EVENTS_H

#include "ompi_config.h"

#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/runtime/ompi_spc_ompi.h"
#include "spc/events.h"
#include "spc/names.h"
#include "spc/spc.h"

/* An event's data, as its elements are laid out (ompi_spc_events.def). */
struct ompi_spc_event_data {
#define SPC_EVENT_ELEMENT(name, ctype, datatype, description) ctype name;
#include "ompi/runtime/ompi_spc_events.def"
};

enum { OMPI_SPC_EVENT_SEND = 0, OMPI_SPC_EVENT_RECEIVE = 1 };  /* direction */

/* The events of ompi_spc_events.def, numbered in its order. */
enum ompi_spc_event_id {
#define SPC_EVENT_TYPE(id, name, verbosity, description) OMPI_SPC_EVENT_##id,
#include "ompi/runtime/ompi_spc_events.def"
    OMPI_SPC_NUM_EVENTS
};

#define OMPI_SPC_EVENT_PREFIX SPC_EVENT_PREFIX

/* The data of an event, raised inside its site: the communicator's context
 * id, ranks in it (peer: the source of a receive, the destination of a
 * send), and whatever ties an insert to its removal. */
static inline void ompi_spc_event_raise(int type, ompi_communicator_t *comm, int32_t peer,
                                        int32_t tag, uint32_t sequence, int32_t direction,
                                        int64_t size, const void *request)
{
    const int32_t me = comm->c_my_rank;
    const bool send = OMPI_SPC_EVENT_SEND == direction;
    struct ompi_spc_event_data data = {ompi_spc_comm_id(comm), send ? me : peer, send ? peer : me, tag,
                                       sequence, direction, size, (uint64_t)(uintptr_t)request};
    spc_ev_raise(type, comm, &data);
}
#define OMPI_SPC_EVENT_RAISE(id, ...) OMPI_SPC_EVENT(id, ompi_spc_event_raise(OMPI_SPC_EVENT_##id, __VA_ARGS__))

/* A site of event OMPI_SPC_EVENT_<id>: one 5-byte no-op while no handle
 * exists for the event; then code (an expression that ends in spc_ev_raise,
 * evaluated only then) runs. */
#define OMPI_SPC_EVENT(id, code) SPC_SWITCHED(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_EVENT_##id, code)

/* A thread enters or leaves an MPI function (ompi/mpi/c/bindings.h): the safe point,
 * at level NONE, where the events its source holds are delivered; one
 * 5-byte no-op while no registration has a callback its events must wait
 * for (spc_ev_init gives the safe point the switch after the events'). */
#define OMPI_SPC_EVENTS_SAFE_POINT() \
    SPC_SWITCHED(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_NUM_EVENTS, spc_ev_safe_point())

/* MPI_Init, with the thread level known: events raised by threads that may
 * run at once require thread-safe callbacks. */
void ompi_spc_events_mpi_init(bool thread_multiple);
/* The start of MPI_Finalize: every thread's waiting events are delivered. */
void ompi_spc_events_mpi_finalize(void);
/* A communicator is destroyed: its registrations receive nothing more. */
void ompi_spc_events_object_gone(const void *object);
/* The last MPI_T_finalize frees the registrations (no free callbacks). */
void ompi_spc_events_mpit_finalize(void);
/* Inside an event, free or dropped callback: MPI_T_finalize answers
 * MPI_T_ERR_NOT_ACCESSIBLE there (it would free what the callback runs on). */
int ompi_spc_events_in_callback(void);

/* The MPI_T functions' work (ompi_spc_events_mpit.c checks that MPI_T is
 * initialized first). */
int ompi_mpit_event_get_num(int *num_events);
int ompi_mpit_event_get_info(int event_index, char *name, int *name_len, int *verbosity,
                             MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[],
                             int *num_elements, MPI_T_enum *enumtype, MPI_Info *info, char *desc,
                             int *desc_len, int *bind);
int ompi_mpit_event_get_index(const char *name, int *event_index);
int ompi_mpit_event_handle_alloc(int event_index, void *obj_handle, MPI_Info info,
                                 MPI_T_event_registration *event_registration);
int ompi_mpit_event_handle_set_info(MPI_T_event_registration event_registration, MPI_Info info);
int ompi_mpit_event_handle_get_info(MPI_T_event_registration event_registration, MPI_Info *info_used);
int ompi_mpit_event_register_callback(MPI_T_event_registration event_registration,
                                      MPI_T_cb_safety cb_safety, MPI_Info info, void *user_data,
                                      MPI_T_event_cb_function *event_cb_function);
int ompi_mpit_event_callback_set_info(MPI_T_event_registration event_registration,
                                      MPI_T_cb_safety cb_safety, MPI_Info info);
int ompi_mpit_event_callback_get_info(MPI_T_event_registration event_registration,
                                      MPI_T_cb_safety cb_safety, MPI_Info *info_used);
int ompi_mpit_event_handle_free(MPI_T_event_registration event_registration, void *user_data,
                                MPI_T_event_free_cb_function *free_cb_function);
int ompi_mpit_event_set_dropped_handler(MPI_T_event_registration event_registration,
                                        MPI_T_event_dropped_cb_function *dropped_cb_function);
int ompi_mpit_event_read(MPI_T_event_instance event_instance, int element_index, void *buffer);
int ompi_mpit_event_copy(MPI_T_event_instance event_instance, void *buffer);
int ompi_mpit_event_get_timestamp(MPI_T_event_instance event_instance, MPI_Count *event_timestamp);
int ompi_mpit_event_get_source(MPI_T_event_instance event_instance, int *source_index);
int ompi_mpit_source_get_num(int *num_sources);
int ompi_mpit_source_get_info(int source_index, char *name, int *name_len, char *desc,
                              int *desc_len, MPI_T_source_order *ordering,
                              MPI_Count *ticks_per_second, MPI_Count *max_ticks, MPI_Info *info);
int ompi_mpit_source_get_timestamp(int source_index, MPI_Count *timestamp);

#endif
