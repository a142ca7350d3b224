/*
 * Counting in a PML that keeps nothing per communicator (ucx, cm): its
 * c_pml_comm, which it leaves NULL, holds the communicator's SPC storage
 * once a reader asks for it, and its send and receive sites count a user
 * message the same way.  Such a PML calls ompi_spc_pml_comm_enable when it
 * is enabled, ompi_spc_pml_comm_disable in its cleanup, and the added and
 * deleted calls from its add_comm and del_comm.  ob1 keeps its own
 * per-communicator structure there (pml_ob1_comm.h) and does not use this.
 */
#ifndef OMPI_SPC_PML_COMM_H
#define OMPI_SPC_PML_COMM_H

#include "ompi/runtime/ompi_spc_hooks.h"

/* The PML's ompi_spc_comm_storage, set and taken back (no levels are lent:
 * these PMLs keep no queue SPC can see). */
void ompi_spc_pml_comm_enable(void);
void ompi_spc_pml_comm_disable(void);
/* add_comm: with mpi_spc_attach "traffic", comm counts from its start (a
 * failed allocation leaves it without, as a failed bind would).  del_comm:
 * comm's event registrations and storage end (a later communicator may get
 * its address). */
void ompi_spc_pml_comm_added(struct ompi_communicator_t *comm);
void ompi_spc_pml_comm_deleted(struct ompi_communicator_t *comm);

#if SPC_ENABLE
/* comm's storage, NULL until a reader asked for it (acquire: the reader
 * stores it under MPI_T's lock while a site may load it). */
static inline struct spc_comm *ompi_spc_pml_comm_storage(ompi_communicator_t *comm)
{
    return __atomic_load_n((struct spc_comm **)&comm->c_pml_comm, __ATOMIC_ACQUIRE);
}

/* One message of bytes to or from peer on comm under tag (the tag
 * ompi_spc_traffic_tag gave): in comm's per-peer arrays of its kind (user
 * or internal); a user message also in comm's counter and histogram of its
 * direction (and peer's, if kept). */
static inline __attribute__((always_inline)) void
ompi_spc_pml_peer_message(ompi_communicator_t *comm, int peer, int tag, uint64_t bytes, bool sent)
{
    struct spc_comm *storage = ompi_spc_pml_comm_storage(comm);
    spc_comm_add_peer(storage, SPC_PEER_OF_TAG(sent ? SPC_PEER_BYTES_SENT : SPC_PEER_BYTES_RECEIVED, tag), peer,
                      bytes);
    spc_comm_add_peer(storage, SPC_PEER_OF_TAG(sent ? SPC_PEER_MESSAGES_SENT : SPC_PEER_MESSAGES_RECEIVED, tag),
                      peer, 1);
    if (tag >= 0) {
        spc_comm_add(storage, sent ? SPC_COMM_BYTES_SENT_USER : SPC_COMM_BYTES_RECEIVED_USER, bytes);
        spc_histogram_add(storage, sent ? SPC_HISTOGRAM_MESSAGE_SIZES_SENT : SPC_HISTOGRAM_MESSAGE_SIZES_RECEIVED,
                          peer, bytes);
    }
}

/* The code of hook (an OMPI_SPC_HOOK_<NAME> whose consumers are the sent
 * bytes and OMPI_SPC_USES_COMM) in mode: a message of bytes to dst under
 * tag (negative: MPI's own traffic; see ompi_spc_traffic_tag) on comm was
 * handed to the network. */
static inline __attribute__((always_inline)) void
ompi_spc_pml_sent(spc_hook_mode mode, int hook, ompi_communicator_t *comm, int dst, int tag, uint64_t bytes)
{
    tag = ompi_spc_traffic_tag(comm, tag);
    spc_hook_user_or_mpi_(mode, NULL, tag, bytes, OMPI_SPC_BYTES_SENT_USER, OMPI_SPC_BYTES_SENT_MPI);
    if (SPC_HOOK_SWITCHES_ON(mode, hook) && OMPI_SPC_COMM_ON()) {
        ompi_spc_pml_peer_message(comm, dst, tag, bytes, true);
    }
}

/* The same for a message of bytes received from src on comm (NULL: not
 * known, counted process-wide only). */
static inline __attribute__((always_inline)) void
ompi_spc_pml_received(spc_hook_mode mode, int hook, ompi_communicator_t *comm, int src, int tag,
                      uint64_t bytes)
{
    tag = NULL != comm ? ompi_spc_traffic_tag(comm, tag) : tag;
    spc_hook_user_or_mpi_(mode, NULL, tag, bytes, OMPI_SPC_BYTES_RECEIVED_USER, OMPI_SPC_BYTES_RECEIVED_MPI);
    if (SPC_HOOK_SWITCHES_ON(mode, hook) && OMPI_SPC_COMM_ON() && NULL != comm) {
        ompi_spc_pml_peer_message(comm, src, tag, bytes, false);
    }
}
#endif

#endif
