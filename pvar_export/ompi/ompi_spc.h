/*
 * ompi-spc's replacement for Open MPI 4.1.4's ompi/runtime/ompi_spc.h: the
 * names Open MPI's call sites and MPI_Init/Finalize use, on top of the SPC
 * core's spc/spc.h (catalogue and update macros).
 */
#ifndef OMPI_SPC
#define OMPI_SPC

#include "ompi_config.h"

/* Upstream's header pulled these in; call sites may rely on them. */
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/runtime/params.h"
#include "ompi/runtime/ompi_spc_ompi.h"

#include "spc/spc.h"

typedef spc_counter_id ompi_spc_counters_t;
typedef uint64_t ompi_spc_value_t;

/* The tag a message's bytes are counted under, user (>= 0) or MPI: tag, but
 * -1 on a communicator that carries only Open MPI's own traffic
 * (OMPI_COMM_LIBRARY_TRAFFIC: osc pt2pt's and ompio's send with tags >= 0).
 * Sites call it only while counting: off, the flag is never loaded. */
static inline int ompi_spc_traffic_tag(const struct ompi_communicator_t *comm, int tag)
{
    return comm->c_flags & OMPI_COMM_LIBRARY_TRAFFIC ? -1 : tag;
}

/* Registers every counter as an MPI_T performance variable and applies
 * mpi_spc_attach (MPI_Init).  ompi_spc_fini writes the mpi_spc_dump_enabled
 * report and retires the variables (MPI_Finalize). */
void ompi_spc_init(void);
void ompi_spc_fini(void);
/* One communicator's SPC_PER_COMM values when it was freed or MPI_Finalize
 * began, in its catalogue counters' units (mpi_spc_attach "traffic"). */
struct ompi_spc_comm_record {
    uint32_t id;  /* its context id, the same on every rank */
    int32_t ranks;
    char name[MPI_MAX_OBJECT_NAME];
    unsigned long long value[SPC_NUM_COMM_COUNTERS];
};
/* This process's rows of the job's communication matrix (mpi_spc_attach
 * "traffic"): every recorded communicator's per-peer arrays added up by
 * the peers' MPI_COMM_WORLD ranks, value[id * ranks + rank] for each
 * SPC_PER_PEER row id.  NULL value: no communicator had traffic. */
struct ompi_spc_matrix {
    int ranks;        /* the job's processes */
    uint64_t *value;
    uint64_t other_jobs;  /* messages with processes of other jobs (MPI_Comm_spawn), left out */
};
/* The mpi_spc_dump_enabled table and mpi_spc_dump_file CSV (ompi_spc_report.c),
 * with the message-size histograms if they counted, and the communicators'
 * records, if any, in a second CSV and the job's matrix in a third
 * (mpi_spc_attach "traffic"). */
void ompi_spc_report(bool histograms, const struct ompi_spc_comm_record *comms, int num_comms,
                     const struct ompi_spc_matrix *matrix);

/* Counters bound to communicators (catalogue rows SPC_PER_COMM).  The PML
 * keeps each communicator's storage (ob1: in its mca_pml_ob1_comm_t) and
 * lends it out through ompi_spc_comm_storage, which it sets when enabled:
 * comm's storage, created first if create is true; NULL if comm has none
 * (or no PML keeps any). */
struct spc_comm;
typedef struct spc_comm *(*ompi_spc_comm_storage_fn)(struct ompi_communicator_t *comm, bool create);
extern ompi_spc_comm_storage_fn ompi_spc_comm_storage;
/* A LEVEL row's value on comm is not in that storage: a level must see
 * every insert and remove, also those before a handle asked for storage, so
 * the PML keeps it for every communicator from its creation (as the
 * process-wide levels are kept always) and lends it through
 * ompi_spc_comm_level: false if it keeps no such level (counter is a
 * catalogue id). */
typedef bool (*ompi_spc_comm_level_fn)(struct ompi_communicator_t *comm, int counter, int64_t *value);
extern ompi_spc_comm_level_fn ompi_spc_comm_level;
/* mpi_spc_attach named "traffic": every communicator keeps its counters
 * from its creation (the PML creates the storage when it adds one) and the
 * finalize report writes them. */
extern bool ompi_spc_comm_all;
/* The PML calls this before it destroys comm's storage: MPI_T handles bound
 * to comm fail from then on instead of reading freed memory. */
void ompi_spc_comm_freed(struct ompi_communicator_t *comm);
/* For sites outside the PML, behind SPC_SWITCHED(SPC_SWITCH_COMM_COUNTERS,
 * ...): adds n to comm's counter id (an spc_comm_counter_id) if watched. */
void ompi_spc_comm_record(struct ompi_communicator_t *comm, int id, uint64_t n);
/* The same for one call counted on comm's counter calls and its bytes on
 * counter bytes_id, with one look-up of comm's storage. */
void ompi_spc_comm_record_call(struct ompi_communicator_t *comm, int calls, int bytes_id, uint64_t bytes);

/* One-sided traffic by target (catalogue rows SPC_PER_WIN_PEER).  A
 * window's storage is a pointer in it (w_spc), made when the window is
 * (mpi_spc_attach "traffic") or when the first MPI_T handle is bound to it,
 * and freed with it. */
struct ompi_win_t;
void ompi_spc_win_created(struct ompi_win_t *win);
/* In the window's destructor: its arrays go to the job's matrix, handles
 * bound to it fail from then on, and its storage is freed. */
void ompi_spc_win_destroyed(struct ompi_win_t *win);
/* For the one-sided bindings, behind SPC_SWITCHED(SPC_SWITCH_COMM_COUNTERS,
 * ...): one operation on target that carried sent bytes there and, if it
 * brings data back (replies), received bytes from there. */
void ompi_spc_one_sided(struct ompi_win_t *win, int target, size_t sent, bool replies, size_t received);
/* count elements of type, in bytes */
static inline size_t ompi_spc_data_bytes(size_t count, const struct ompi_datatype_t *type)
{
    size_t size;
    ompi_datatype_type_size(type, &size);
    return count * size;
}

#if SPC_ENABLE == 1
#define SPC_INIT() ompi_spc_init()
#define SPC_FINI() ompi_spc_fini()
#else
#define SPC_INIT() ((void)0)
#define SPC_FINI() ((void)0)
#endif

#endif
