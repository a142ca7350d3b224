/*
 * Live counters: the shared-memory segment in which a process publishes its
 * counters while it runs (mpi_spc_live), its format, and the writer's calls.
 *
 * With live on, the storage the fast path already writes lives in one file
 * per process (a tmpfs file under /dev/shm by default): the per-thread
 * blocks are allocated from the segment and the level/watermark lines
 * (spc_shared) are the segment's pages, mapped over the array.  The job
 * does no extra work per update; a reader maps the file read-only and sums
 * the blocks itself (tools/live/reader.hpp).
 *
 * Why a reader's sums are safe without any lock the job takes:
 *  - a block is zero when first handed out and only its thread writes it,
 *    with relaxed atomic stores of whole 8-byte words, so every load sees a
 *    value the thread stored, and a counter's values only grow;
 *  - the list of blocks only grows: blocks [0, blocks_used) are in use or
 *    were, and blocks_used is stored with release after the block is ready;
 *  - a block whose thread exited keeps its counts and goes to the next new
 *    thread, which adds to them (counts are sums): nothing is folded or
 *    moved, so no count is ever seen twice or not at all, and a sum never
 *    goes backwards;
 *  - state moves STARTING -> RUNNING -> FINALIZED with release stores;
 *    FINALIZED is stored after the final values.
 * Layout, from offset 0: the header; the catalogue (one spc_live_counter per
 * counter); the string pool (names, descriptions, units, NUL-terminated);
 * the final values (num_counters raw uint64); then, page-aligned, the level
 * lines (struct spc_shared_line per counter, whole pages); then,
 * page-aligned, max_blocks blocks of block_bytes each.
 */
#ifndef SPC_LIVE_H
#define SPC_LIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPC_LIVE_MAGIC "SPC-LIVE"       /* 8 bytes, no NUL */
#define SPC_LIVE_VERSION 3   /* 2: the batch system's job, step and the local rank; 3: a counter's flags */
/* Segment files are named <prefix><uid>.<jobid>.<rank> (a rank started by
 * mpirun from load time on, any other process from MPI_Init on), else
 * <prefix><uid>.pid<pid>; readers take every file of the folder that starts
 * with the prefix, and the identity from the header. */
#define SPC_LIVE_FILE_PREFIX "ompi-spc."
#define SPC_LIVE_DEFAULT_DIR "/dev/shm"
/* Thread blocks a segment holds: how many of a rank's threads the readers
 * see at once (an exited thread's block goes to the next new one).  A
 * thread beyond them counts in a private block that readers do not see
 * (blocks_overflow says how many; MPI_T and the report still see it).  32
 * keep a segment within 128 KiB (243 counters: a block is 2,304 bytes);
 * mpi_spc_live_threads asks for another number, up to SPC_LIVE_MAX_THREADS. */
#define SPC_LIVE_DEFAULT_THREADS 32
#define SPC_LIVE_MAX_THREADS 65536

/* The MCA parameters, and the environment variables through which mpirun
 * hands them to the ranks (read by libspc's constructor, before any thread
 * counts). */
#define SPC_LIVE_PARAM "mpi_spc_live"
#define SPC_LIVE_DIR_PARAM "mpi_spc_live_dir"
#define SPC_LIVE_GROUP_PARAM "mpi_spc_live_group"
#define SPC_LIVE_THREADS_PARAM "mpi_spc_live_threads"
#define SPC_LIVE_ENV_PREFIX "OMPI_MCA_"

enum spc_live_state {
    SPC_LIVE_STARTING = 0,   /* created at load time, MPI_Init not reached yet */
    SPC_LIVE_RUNNING = 1,    /* named at MPI_Init */
    SPC_LIVE_FINALIZED = 2   /* MPI_Finalize ran: the final values are set */
};

/* A counter's flags: this job does not count it (its PML does not; set at
 * MPI_Init), so a reader shows no value for it, as MPI_T offers none. */
#define SPC_LIVE_NOT_COUNTED 1u

struct spc_live_counter {
    uint32_t name;         /* offsets into the string pool */
    uint32_t description;
    uint32_t unit_name;
    uint8_t kind;          /* enum spc_kind */
    uint8_t unit;          /* enum spc_unit */
    int16_t level;         /* HIGHWATERMARK: the LEVEL it watches; else -1 */
    uint32_t flags;        /* SPC_LIVE_NOT_COUNTED; an atomic word, set once */
};

struct spc_live_header {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;       /* sizeof(struct spc_live_header) */
    uint64_t file_bytes;         /* the whole segment */
    /* layout */
    uint32_t num_counters;
    uint32_t block_slots;        /* uint64 slots of a thread block; counter id = slot */
    uint32_t block_bytes;
    uint32_t max_blocks;
    uint32_t level_line_bytes;   /* sizeof(struct spc_shared_line) */
    uint32_t levels_live;        /* 1: the level lines are the process's own; 0: not published */
    uint64_t catalogue_offset;
    uint64_t strings_offset, strings_bytes;
    uint64_t final_offset;
    uint64_t levels_offset, levels_bytes;
    uint64_t blocks_offset;
    /* who wrote it */
    int64_t pid;
    uint64_t start_time;         /* field 22 of /proc/PID/stat: tells a reused pid apart */
    uint32_t uid;
    int32_t rank, size;          /* -1 until MPI_Init */
    char jobid[32];
    char node[64];
    char program[32];
    /* Under a batch system (Slurm): its job id and step, else "" (set with
     * the job and rank; see spc_batch_identity).  jobid above stays Open
     * MPI's, unique per MPI job, which names the file. */
    char batch_job[32];
    char step[16];
    int32_t local_rank;          /* among the job's ranks on this node; -1 if not known */
    uint32_t reserved;
    uint64_t ticks_per_second;   /* of the cycle counter, set at MPI_Init */
    uint64_t timer_sampling;     /* timers are summed over 1 in this many intervals */
    uint64_t created_unix_ns, created_ticks;
    /* When MPI_Init named the segment (stored before the state's release
     * store of RUNNING) and when MPI_Finalize ran, by CLOCK_REALTIME: a
     * reader's time since MPI_Init is its own CLOCK_REALTIME minus
     * running_unix_ns (the share of time in MPI).  Realtime rather than
     * CLOCK_MONOTONIC because it is the same on every node and in every
     * time namespace (a shared folder, a container), it is what Prometheus
     * compares with (time()), and the readers' rates use it already; the
     * cost: a step of the node's clock while the job runs (NTP slews, it
     * steps only at boot or far off) moves the time since MPI_Init by the
     * step. */
    uint64_t running_unix_ns, finalized_unix_ns;
    /* changed while the job runs: atomic words */
    uint64_t state;              /* enum spc_live_state */
    uint64_t blocks_used;        /* only grows */
    uint64_t blocks_overflow;
};

enum {
    SPC_LIVE_ERR = -10   /* the message says why */
};

/* Creates this process's segment in dir (group: NULL or "", else the file
 * is opened to that group, read-only), with as many thread blocks as the
 * environment's mpi_spc_live_threads asks (SPC_LIVE_DEFAULT_THREADS if it
 * does not), moves the level lines into it and takes thread blocks from it
 * from now on.  Called by libspc's constructor
 * when mpi_spc_live is set in the environment; a program may call it
 * itself.  Returns SPC_SUCCESS (also when already live) or SPC_LIVE_ERR. */
int spc_live_start(const char *dir, const char *group, char *message, size_t message_size);

/* At MPI_Init: starts live mode if it is not on yet (mpi_spc_live set some
 * other way than the environment), names the segment after the job and
 * rank, moving it into dir if it was made elsewhere, and marks it running. */
struct spc_live_identity {
    const char *dir, *group;
    const char *jobid, *node;  /* node NULL: this host's name */
    int rank, size;
    /* the thread blocks of a segment made now; 0: the environment's
     * mpi_spc_live_threads, else SPC_LIVE_DEFAULT_THREADS */
    unsigned threads;
};
int spc_live_publish(const struct spc_live_identity *who, char *message, size_t message_size);

/* At MPI_Init, for each counter this job does not count: readers leave it
 * out (SPC_LIVE_NOT_COUNTED), also of a segment made later. */
void spc_live_not_counted(int id);

/* At MPI_Finalize: stores the final values, marks the segment finalized and
 * removes its file unless keep. */
void spc_live_finalize(int keep);

/* The batch system's identity of this process, from the environment its
 * launcher gave it: Slurm's job id (SLURM_JOB_ID) and step (SLURM_STEP_ID,
 * "batch" in a batch script, which has none), or "" for both outside
 * Slurm; and the rank's local rank: OMPI_COMM_WORLD_LOCAL_RANK, which
 * mpirun's daemons set from their map, or, for a rank Slurm launched
 * directly (srun --mpi=pmix: PMIX_RANK set, no OMPI_COMM_WORLD_RANK), Slurm's
 * local task id SLURM_LOCALID, the value Slurm's PMIx server hands the rank
 * as PMIX_LOCAL_RANK; else -1.  The rank itself never comes from here
 * (SLURM_PROCID numbers mpirun's daemons, not ranks): it is MPI's. */
void spc_batch_identity(char *job, size_t job_size, char *step, size_t step_size, int *local_rank);

/* The segment's file ("" when live is off). */
const char *spc_live_path(void);

#ifdef __cplusplus
}
#endif

#endif
