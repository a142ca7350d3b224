/*
 * ompi-spc's one version header: what differs between Open MPI 4.1.4 and
 * 5.0.7 for the sources of pvar_export/ompi/, behind macros, so that one
 * set of sources builds into either (build_ompi.sh copies it into
 * ompi/runtime/ with them).  What differs inside Open MPI itself (error
 * codes, where SPC starts, the safe point of events) is in each version's
 * patches, not here.  The version is mpi.h's, known when these sources are
 * compiled into that Open MPI.
 */
#ifndef OMPI_SPC_OMPI_H
#define OMPI_SPC_OMPI_H

#include "ompi_config.h"

#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"

#if OMPI_MAJOR_VERSION >= 5

/* The runtime's header (OMPI_PROC_MY_NAME, ompi_process_info), for
 * #include OMPI_SPC_RTE_HEADER: rte.h became ompi_rte.h in 5.0. */
#define OMPI_SPC_RTE_HEADER "ompi/runtime/ompi_rte.h"
/* opal_mutex_t, for #include OMPI_SPC_MUTEX_HEADER: threads became an MCA
 * framework in 5.0. */
#define OMPI_SPC_MUTEX_HEADER "opal/mca/threads/mutex.h"

/* A communicator's index on this rank: ob1's hdr_ctx, its place in
 * ompi_mpi_communicators.  In 5.0 c_contextid is an extended id (a struct)
 * and the index may differ between ranks (communicators from PMIx groups). */
#define OMPI_SPC_COMM_LOCAL_CID(comm) ompi_comm_get_local_cid(comm)

/* What the report and MPI_T events show as the communicator's id, the same
 * on every rank: the context id where the communicator was made the
 * MPI_Init way (cid_base 0, cid_sub the id, communicator/comm_cid.c), else
 * a digest of the extended id with the top bit set, so the two never meet. */
static inline uint32_t ompi_spc_comm_id(const ompi_communicator_t *comm)
{
    const ompi_comm_extended_cid_t id = comm->c_contextid;
    if (0 == id.cid_base && id.cid_sub.u64 < 0x80000000u) {
        return (uint32_t)id.cid_sub.u64;
    }
    uint64_t h = id.cid_base * UINT64_C(0x9e3779b97f4a7c15) ^ id.cid_sub.u64;
    h ^= h >> 29;
    return 0x80000000u | (uint32_t)(h & 0x7fffffffu);
}

/* MPI sessions (MPI_Session_init) start MPI without MPI_COMM_WORLD. */
#define OMPI_SPC_HAVE_SESSIONS 1

/* A barrier of the job's processes outside the PML, so that no MPI counter
 * sees it (#include OMPI_SPC_PMIX_HEADER): true if it completed. */
#define OMPI_SPC_PMIX_HEADER "opal/mca/pmix/pmix-internal.h"
#define OMPI_SPC_FENCE() (PMIX_SUCCESS == PMIx_Fence(NULL, 0, NULL, 0))

/* A new, empty MPI_Info for MPI_Info_free to free (#include
 * "ompi/info/info.h" where it is used).  In 5.0 each info object holds a
 * reference on MPI's basic instance: ompi_info_allocate takes it
 * (ompi_mpi_instance_retain, info/info.c:405) and ompi_info_free gives it
 * back (ompi_mpi_instance_release, info.c:436).  An object made by a bare
 * OBJ_NEW gives back one it never took, and the last release then runs
 * opal_finalize_util under MPI_Finalize (instance.c:224-244). */
#define OMPI_SPC_INFO_NEW() ompi_info_allocate()
/* Whether info objects exist now: while any MPI instance does (MPI_Init's or
 * a session's; the info table is set up with the first, instance.c:839). */
#define OMPI_SPC_INFO_ACCESSIBLE() (ompi_instance_count > 0)

#else /* Open MPI 4.1 */

#define OMPI_SPC_RTE_HEADER "ompi/mca/rte/rte.h"
#define OMPI_SPC_MUTEX_HEADER "opal/threads/mutex.h"
#define OMPI_SPC_COMM_LOCAL_CID(comm) ((uint32_t)(comm)->c_contextid)
static inline uint32_t ompi_spc_comm_id(const ompi_communicator_t *comm)
{
    return (uint32_t)comm->c_contextid;
}
#define OMPI_SPC_HAVE_SESSIONS 0
#define OMPI_SPC_PMIX_HEADER "opal/mca/pmix/pmix.h"
#define OMPI_SPC_FENCE() (OPAL_SUCCESS == opal_pmix.fence(NULL, 0))
/* 4.1's MPI_Info_create makes its object so; ompi_info_free only releases it. */
#define OMPI_SPC_INFO_NEW() OBJ_NEW(ompi_info_t)
/* between MPI_Init and MPI_Finalize (ompi_mpiinfo_init sets the table up) */
#define OMPI_SPC_INFO_ACCESSIBLE()                                                                 \
    (ompi_mpi_state >= OMPI_MPI_STATE_INIT_COMPLETED && ompi_mpi_state < OMPI_MPI_STATE_FINALIZE_STARTED)

#endif

#endif
