/*
 * ob1's MPI_T events (MPI 4.1 section 16.3.8): the one list of them, the data
 * each carries, OMPI_SPC_EVENT for ob1's sites, and what Open MPI's MPI_T
 * functions (ompi_spc_events_mpit.c, built by patch 0036) call in
 * ompi_spc_events.c.
 */
#ifndef OMPI_SPC_EVENTS_H
#define OMPI_SPC_EVENTS_H

#include "ompi_config.h"

#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "spc/events.h"
#include "spc/names.h"
#include "spc/spc.h"

/* The elements every event carries, in order (a tool reads their names,
 * types and places through MPI_T_event_get_info and the element-name
 * enumeration it returns): X(name, C type, MPI datatype, description). */
#define OMPI_SPC_EVENT_ELEMENTS(X)                                                           \
    X(comm_id, uint32_t, MPI_UNSIGNED, "the communicator's context id, the same on every rank") \
    X(source, int32_t, MPI_INT, "the sending rank in the communicator (-1: any source)")    \
    X(dest, int32_t, MPI_INT, "the receiving rank in the communicator")                      \
    X(tag, int32_t, MPI_INT, "the tag (-1: any tag)")                                        \
    X(sequence, uint32_t, MPI_UNSIGNED, "ob1's sequence number of the message or receive")   \
    X(direction, int32_t, MPI_INT, "0 for a send, 1 for a receive")                          \
    X(size, int64_t, MPI_COUNT, "bytes of the message, or that the receive can hold")        \
    X(request, uint64_t, MPI_UNSIGNED_LONG_LONG,                                             \
      "the queue entry or request, the same from insert to remove (0: none)")

struct ompi_spc_event_data {
#define OMPI_SPC_EVENT_FIELD_(name, ctype, datatype, description) ctype name;
    OMPI_SPC_EVENT_ELEMENTS(OMPI_SPC_EVENT_FIELD_)
#undef OMPI_SPC_EVENT_FIELD_
};

enum { OMPI_SPC_EVENT_SEND = 0, OMPI_SPC_EVENT_RECEIVE = 1 };  /* direction */

/* The events, all bound to a communicator, named ompi_pml_ob1_<name>:
 * X(ID, name, MPI_T verbosity, description). */
#define OMPI_SPC_EVENT_LIST(X)                                                                 \
    X(MESSAGE_ARRIVED, message_arrived, MPI_T_VERBOSITY_TUNER_BASIC,                           \
      "A message's first fragment reached ob1, before its sequence number is checked: source " \
      "is the sender, sequence the sender's sequence number, size the message's bytes, "       \
      "request 0.")                                                                             \
    X(OOS_HOLD, oos_hold, MPI_T_VERBOSITY_TUNER_DETAIL,                                         \
      "The message arrived out of sequence and waits in the out-of-sequence queue; request "   \
      "identifies it until oos_release.")                                                       \
    X(OOS_RELEASE, oos_release, MPI_T_VERBOSITY_TUNER_DETAIL,                                   \
      "The message's turn came: it leaves the out-of-sequence queue (fields as in oos_hold).")  \
    X(POSTED_INSERT, posted_insert, MPI_T_VERBOSITY_TUNER_DETAIL,                               \
      "A receive or probe found no queued message and waits in the posted-receive queue: "     \
      "source and tag as posted, sequence its posting order, size the bytes it can hold, "     \
      "request the receive.")                                                                   \
    X(POSTED_REMOVE, posted_remove, MPI_T_VERBOSITY_TUNER_DETAIL,                               \
      "A receive or probe left the posted-receive queue, matched or cancelled (fields as in "  \
      "posted_insert).")                                                                        \
    X(UNEXPECTED_INSERT, unexpected_insert, MPI_T_VERBOSITY_TUNER_DETAIL,                       \
      "An arrived message matched no posted receive and waits in the unexpected-message "     \
      "queue: request identifies it until unexpected_remove.")                                 \
    X(UNEXPECTED_REMOVE, unexpected_remove, MPI_T_VERBOSITY_TUNER_DETAIL,                       \
      "A receive or matched probe took the message out of the unexpected-message queue "       \
      "(fields as in unexpected_insert).")                                                                             \
    X(SEARCH_POSTED_BEGIN, search_posted_begin, MPI_T_VERBOSITY_TUNER_DETAIL,                   \
      "Matching an arrived message against the posted receives begins (fields as in "          \
      "message_arrived).")                                                                      \
    X(SEARCH_POSTED_END, search_posted_end, MPI_T_VERBOSITY_TUNER_DETAIL,                       \
      "Matching an arrived message against the posted receives ended: request is the receive " \
      "it matched, 0 if none (then it becomes unexpected).")                                   \
    X(SEARCH_UNEXPECTED_BEGIN, search_unexpected_begin, MPI_T_VERBOSITY_TUNER_DETAIL,           \
      "A receive or probe begins searching the unexpected-message queue (fields as in "        \
      "posted_insert).")                                                                        \
    X(SEARCH_UNEXPECTED_END, search_unexpected_end, MPI_T_VERBOSITY_TUNER_DETAIL,               \
      "The search of the unexpected-message queue ended (fields as in posted_insert; an "      \
      "unexpected_remove follows when it found a message for a receive).")                     \
    X(TRANSFER_BEGIN, transfer_begin, MPI_T_VERBOSITY_TUNER_DETAIL,                             \
      "A request starts moving its message's data: a send request when ob1 starts it (a send " \
      "ob1 completes inline, with no request, raises neither transfer event), a receive when " \
      "it is matched; direction says which, source and dest are the message's ranks, tag its " \
      "tag, sequence the send's sequence number or the receive's posting order, size the "     \
      "bytes the send carries or the receive can hold, request the request until "             \
      "transfer_end.")                                         \
    X(TRANSFER_END, transfer_end, MPI_T_VERBOSITY_TUNER_DETAIL,                                 \
      "The request's data moved completely, in ob1 (before MPI completes the request): fields " \
      "as in transfer_begin, size the bytes sent or received.")

enum ompi_spc_event_id {
#define OMPI_SPC_EVENT_ID_(id, name, verbosity, description) OMPI_SPC_EVENT_##id,
    OMPI_SPC_EVENT_LIST(OMPI_SPC_EVENT_ID_)
#undef OMPI_SPC_EVENT_ID_
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
    struct ompi_spc_event_data data = {comm->c_contextid, send ? me : peer, send ? peer : me, tag,
                                       sequence, direction, size, (uint64_t)(uintptr_t)request};
    spc_ev_raise(type, comm, &data);
}
#define OMPI_SPC_EVENT_RAISE(id, ...) OMPI_SPC_EVENT(id, ompi_spc_event_raise(OMPI_SPC_EVENT_##id, __VA_ARGS__))

/* A site of event OMPI_SPC_EVENT_<id>: one 5-byte no-op while no handle
 * exists for the event; then code (an expression that ends in spc_ev_raise,
 * evaluated only then) runs. */
#define OMPI_SPC_EVENT(id, code) SPC_SWITCHED(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_EVENT_##id, code)

/* A thread enters or leaves an MPI function (patch 0050): the safe point,
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
