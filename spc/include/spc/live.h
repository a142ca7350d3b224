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
#include <stdio.h>
#include <string.h>

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

/* ---- Per-peer arrays in shared files (mpi_spc_live with traffic) ---------
 *
 * The live segment holds the process-wide counters only.  A communicator's
 * or window's per-peer arrays (struct spc_comm, spc.h) live, while the
 * rank's peer files are on (spc_live_peers_start), in a file of their own
 * in the segment's folder: the storage the fast path adds into *is* the
 * file's mapping, so a job killed at any point leaves its counts there.
 * Files, named <prefix><uid>.<jobid>.<rank>.<what> (never taken for
 * segments: the prefix differs):
 *  - what = a number (the storage's serial, from 1): one communicator's or
 *    window's storage; header, then its peers' ranks in the job (int32, -1:
 *    a process of another job), then, 64-byte aligned, struct spc_comm
 *    with its arrays;
 *  - what = "matrix": the rank's folded matrix, the arrays of storage
 *    already freed, added by each peer's rank in the job (peers = the job's
 *    size).
 * A freed storage is folded into the matrix file, marked FOLDED, then
 * removed.  The fold journals the cell it is adding (fold_serial,
 * fold_cell, fold_old in the matrix's header) so that a reader of a job
 * killed in the middle of a fold counts each cell once: the storage's cells
 * before fold_cell are in the matrix, those after it are not, and fold_cell
 * itself is in once its matrix cell differs from fold_old (a fold adds only
 * cells > 0).  A reader racing a fold of a running job reads again.  Readers: tools/live/matrix.hpp. */
#define SPC_PEERS_MAGIC "SPC-PEER"     /* 8 bytes, no NUL */
#define SPC_PEERS_VERSION 1
#define SPC_PEERS_FILE_PREFIX "ompi-spc-peers."
#define SPC_PEERS_MATRIX_NAME "matrix"
/* The matrix's kinds, in the order of the catalogue's SPC_PER_PEER rows
 * (4 arrays each): the names of NAME.matrix.csv's and spc-matrix's kind
 * column. */
#define SPC_MATRIX_KIND_NAMES {"user", "internal", "one-sided"}

/* Writes the column of a value of NAME.matrix.csv (the finalize report's)
 * and spc-matrix's CSV: the name of its catalogue row, with or without
 * OMPI_SPC_, after PEER_ and in lower case (PEER_MESSAGES_SENT ->
 * messages_sent). */
static inline void spc_matrix_csv_column(FILE *out, const char *row_name)
{
    const char *peer = strstr(row_name, "PEER_");
    for (const char *c = peer != NULL ? peer + strlen("PEER_") : row_name; *c != '\0'; ++c) {
        fputc(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c, out);
    }
}

enum spc_peers_kind {
    SPC_PEERS_STORAGE = 1,   /* one communicator's or window's arrays */
    SPC_PEERS_MATRIX = 2     /* the rank's folded matrix */
};
enum spc_peers_state {
    SPC_PEERS_UNNAMED = 0,   /* its peers' ranks in the job are not written yet */
    SPC_PEERS_NAMED = 1,     /* they are: a reader counts it */
    SPC_PEERS_FOLDED = 2     /* folded into the matrix: a reader skips it */
};

struct spc_live_peers_header {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;        /* sizeof(struct spc_live_peers_header) */
    uint64_t file_bytes;
    uint32_t kind;                /* enum spc_peers_kind */
    uint32_t num_peer_counters;   /* arrays, in the catalogue's SPC_PER_PEER order */
    int32_t peers;                /* length of each array */
    int32_t rank, size;           /* the writer's rank in the job, the job's size */
    uint32_t serial;              /* a storage's number (its name); 0 for the matrix */
    char jobid[32];
    int64_t pid;
    uint64_t ranks_offset;        /* storage: int32 per peer, its rank in the job */
    uint64_t arrays_offset;       /* num_peer_counters arrays of peers uint64 */
    /* changed while the job runs: atomic words */
    uint64_t state;               /* enum spc_peers_state (storage) */
    uint64_t fold_serial;         /* matrix: the storage being folded, 0 if none */
    uint64_t fold_cell;           /* its cell (array id x peers + peer) being added; with
                                   * SPC_PEERS_FOLD_PREPARING: cells before it are in, it is not */
    uint64_t fold_old;            /* the matrix cell's value before that add */
    uint64_t folds;               /* matrix: folds done (a reader that saw it change reads again) */
};
#define SPC_PEERS_FOLD_PREPARING (1ull << 63)

/* Turns the rank's peer files on (the segment must be named, spc_live_publish):
 * the rank's matrix file is made now, and every storage spc_comm_create makes
 * from now on is a file.  SPC_SUCCESS, or SPC_LIVE_ERR with the reason in
 * message (storage then stays private, as without). */
int spc_live_peers_start(char *message, size_t message_size);

/* Writes comm's peers' ranks in the job (ranks[peer], -1: another job) into
 * its file and marks it counted by readers.  0, or -1 if comm is no file. */
int spc_comm_live_name(struct spc_comm *comm, const int32_t *ranks);
/* 1 if comm is a file whose ranks are not written yet, else 0. */
int spc_comm_live_unnamed(const struct spc_comm *comm);
/* Called with each storage spc_comm_create made as a file, after it is
 * made (NULL: none): Open MPI names it when it can tell whose it is. */
void spc_comm_live_created_callback(void (*callback)(struct spc_comm *comm));
/* For tests: the process ends (_exit) before the next fold's store number
 * stores + 1, as a kill -9 would stop it there; -1: never. */
void spc_live_peers_test_stop_fold(long stores);

/* The segment's file ("" when live is off). */
const char *spc_live_path(void);

#ifdef __cplusplus
}
#endif

#endif
