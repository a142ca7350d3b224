/*
 * ompi-spc's replacement for Open MPI 4.1.4's ompi/runtime/ompi_spc.c: every
 * counter of the SPC catalogue as an MPI_T performance variable, with the
 * standard's handle semantics, and mpi_spc_attach applied at MPI_Init.
 *
 * Open MPI's MPI_T layer keeps per-handle state for variables that are not
 * CONTINUOUS (opal/mca/base/mca_base_pvar.c:483-531 allocates it, :560-667
 * computes it): a sum-class handle holds its start value, so sessions read
 * their own deltas, reset and readreset work (:786-799) and a stopped handle
 * is frozen.  Upstream registered every counter CONTINUOUS and of class SIZE
 * (upstream ompi_spc.c:320-324), which switched all of that off.  Here each
 * counter has its kind's class, and MPI_T_pvar_start/stop take and drop a
 * reference in the core.  Only levels are read-only (MPI_T's read-only means
 * "cannot be written or reset"); writes are refused.
 */
#include "ompi_config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/runtime/ompi_spc_ompi.h"
#include OMPI_SPC_RTE_HEADER
#include "ompi/mca/pml/base/base.h" /* mca_pml_base_selected_component */
#include "ompi/mpi/tool/mpit-internal.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/runtime/ompi_spc.h"
#include "ompi/runtime/ompi_spc_events.h"
#include "ompi/runtime/ompi_spc_hooks.h"
#include "ompi/runtime/ompi_spc_pml_comm.h"
#include "ompi/runtime/ompi_spc_pmls.h"
#include OMPI_SPC_MUTEX_HEADER /* opal_using_threads */
#include "ompi/runtime/params.h"
#include "ompi/win/win.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var_group.h"
#include "opal/mca/base/mca_base_vari.h"
#include "opal/util/output.h"
#include "spc/live.h"
#if SPC_ENABLE
#include "spc/spc_papi.h"
#endif

/* The core keeps a flag per hook for SPC_MAX_HOOKS of them. */
_Static_assert(OMPI_SPC_NUM_HOOKS <= SPC_MAX_HOOKS, "ompi_spc_hooks.def has more hooks than spc.h's SPC_MAX_HOOKS");

void ompi_spc_hooks_define(void)
{
    static const struct {
        int hook;
        int consumer;
    } rows[] = {
#define OMPI_SPC_HOOK_CONSUMER(name, consumer) {OMPI_SPC_HOOK_##name, consumer},
#include "ompi/runtime/ompi_spc_hooks.def"
    };
    static const char *const names[] = {
#define OMPI_SPC_HOOK_POINT(name, where) #name,
#include "ompi/runtime/ompi_spc_hooks.def"
    };
    for (int hook = 0; hook < OMPI_SPC_NUM_HOOKS; ++hook) {
        /* one too many is kept, so that spc_hook_define refuses the hook */
        int consumers[SPC_MAX_HOOK_CONSUMERS + 1], count = 0;
        for (size_t row = 0; row < sizeof rows / sizeof rows[0]; ++row) {
            if (rows[row].hook == hook && count <= SPC_MAX_HOOK_CONSUMERS) {
                consumers[count++] = rows[row].consumer;
            }
        }
        if (SPC_SUCCESS != spc_hook_define(hook, consumers, count)) {
            /* opal_output is not up yet: libmpi is still loading */
            fprintf(stderr, "spc: hook %s: its consumers (ompi_spc_hooks.def) were refused; "
                    "it stays off\n", names[hook]);
        }
    }
}

/* Before anything (MPI_T, mpi_spc_attach, PAPI) can turn a consumer on. */
__attribute__((constructor)) static void define_hooks_at_load(void) { ompi_spc_hooks_define(); }

/* What mpi_spc_attach chose (the core parsed it): its counters are on
 * until finalize. */
static spc_attach_list attached;
/* mpi_spc_attach named the category "traffic": its switch is on for the
 * job, so the process-wide histograms count for the finalize report, and
 * every communicator has storage (ompi_spc_comm_all), recorded when it is
 * freed or MPI_Finalize begins. */
static bool traffic_attached;
bool ompi_spc_comm_all;
static struct ompi_spc_comm_record *comm_records;
static int num_comm_records, comm_records_capacity;
static struct ompi_spc_matrix matrix;
/* Between MPI_Init and MPI_Finalize.  MPI_T outlives MPI_Finalize, and with
 * it the handles a tool still holds: the process-wide variables then read
 * their final values (the core's, which MPI_Finalize leaves as they are),
 * the tool's usual last reads (issue 37); nothing starts counting any more,
 * and variables bound to a communicator, whose communicators are gone, fail
 * cleanly. */
static bool spc_running;

static int pvar_class(spc_kind kind)
{
    switch (kind) {
    case SPC_KIND_COUNTER: return MCA_BASE_PVAR_CLASS_COUNTER;
    case SPC_KIND_AGGREGATE: return MCA_BASE_PVAR_CLASS_AGGREGATE;
    case SPC_KIND_TIMER: return MCA_BASE_PVAR_CLASS_TIMER;
    case SPC_KIND_LEVEL: return MCA_BASE_PVAR_CLASS_LEVEL;
    case SPC_KIND_HIGHWATERMARK: return MCA_BASE_PVAR_CLASS_HIGHWATERMARK;
    }
    return MCA_BASE_PVAR_CLASS_GENERIC;
}

/* Watermark handles: each holds one of the core's watermark slots, which
 * holds the highest level since the handle's start or reset.  Open MPI gives
 * such a variable's callbacks the handle itself as obj_handle
 * (MCA_BASE_PVAR_FLAG_PER_HANDLE, of patch
 * "mpit: performance variables with the standard's semantics"); MPI_T calls them under
 * its lock. */
struct watermark_handle {
    const void *handle;  /* NULL: the entry is free */
    int slot;
};
static struct watermark_handle watermark_handles[SPC_NUM_WATERMARKS * SPC_WATERMARK_SLOTS];

/* The entry of handle (NULL finds a free one), or NULL. */
static struct watermark_handle *entry_of(const void *handle)
{
    for (size_t i = 0; i < sizeof watermark_handles / sizeof watermark_handles[0]; ++i) {
        if (watermark_handles[i].handle == handle) {
            return &watermark_handles[i];
        }
    }
    return NULL;
}

static bool is_watermark(int id)
{
    return SPC_KIND_HIGHWATERMARK == spc_counter_infos[id].kind;
}

static int spc_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj_handle)
{
    int id = (int)(intptr_t)pvar->ctx;
    if (is_watermark(id) && NULL != obj_handle) {
        struct watermark_handle *entry = entry_of(obj_handle);
        if (NULL == entry) {
            return OPAL_ERR_NOT_FOUND;
        }
        *(unsigned long long *)value = spc_watermark_slot_read(id, entry->slot);
    } else {
        *(unsigned long long *)value = spc_read(id);
    }
    return OPAL_SUCCESS;
}

/* BIND takes a slot for the handle, UNBIND gives it back, START and RESET
 * start it over at the current level. */
static int watermark_notify(int id, mca_base_pvar_event_t event, void *handle)
{
    struct watermark_handle *entry = entry_of(handle);
    switch (event) {
    case MCA_BASE_PVAR_HANDLE_BIND:
        entry = entry_of(NULL);
        if (NULL == entry) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        entry->slot = spc_watermark_slot_acquire(id);
        if (entry->slot < 0) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        entry->handle = handle;
        return OPAL_SUCCESS;
    case MCA_BASE_PVAR_HANDLE_UNBIND:
        if (NULL != entry) {
            spc_watermark_slot_release(id, entry->slot);
            entry->handle = NULL;
        }
        return OPAL_SUCCESS;
    case MCA_BASE_PVAR_HANDLE_START:
    case MCA_BASE_PVAR_HANDLE_RESET:
        return NULL != entry && SPC_SUCCESS == spc_watermark_slot_reset(id, entry->slot)
                   ? OPAL_SUCCESS
                   : OPAL_ERROR;
    default:
        return OPAL_SUCCESS;
    }
}

static int spc_pvar_write(struct mca_base_pvar_t *pvar, const void *value, void *obj_handle)
{
    (void)pvar;
    (void)value;
    (void)obj_handle;
    return OPAL_ERR_PERM;
}

static int spc_pvar_notify(struct mca_base_pvar_t *pvar, mca_base_pvar_event_t event,
                           void *obj_handle, int *count)
{
    int id = (int)(intptr_t)pvar->ctx;
    if (is_watermark(id)) {
        if (MCA_BASE_PVAR_HANDLE_START == event && !spc_running) {
            return OPAL_ERR_NOT_AVAILABLE;
        }
        int ret = watermark_notify(id, event, obj_handle);
        if (OPAL_SUCCESS != ret) {
            return ret;
        }
    }
    switch (event) {
    case MCA_BASE_PVAR_HANDLE_BIND:
        *count = 1;
        return OPAL_SUCCESS;
    case MCA_BASE_PVAR_HANDLE_START:
        if (!spc_running) {
            return OPAL_ERR_NOT_AVAILABLE;
        }
        return SPC_SUCCESS == spc_counter_enable(id) ? OPAL_SUCCESS : OPAL_ERROR;
    case MCA_BASE_PVAR_HANDLE_STOP:
        return SPC_SUCCESS == spc_counter_disable(id) ? OPAL_SUCCESS : OPAL_ERROR;
    default:
        return OPAL_SUCCESS;
    }
}

/* ---- Where the traffic goes (category TRAFFIC) ------------------------- */

ompi_spc_comm_storage_fn ompi_spc_comm_storage;
ompi_spc_comm_level_fn ompi_spc_comm_level;

/* The variables, in this order: the SPC_PER_COMM counters, the SPC_PER_PEER
 * arrays, the SPC_HISTOGRAM rows and those rows per peer, all bound to a
 * communicator (the SPC_PER_WIN_PEER arrays to a window), then the
 * histograms again process-wide.  A variable's ctx is its place here. */
enum {
    FIRST_PEER = SPC_NUM_COMM_COUNTERS,
    FIRST_COMM_HISTOGRAM = FIRST_PEER + SPC_NUM_PEER_COUNTERS,
    FIRST_PEER_HISTOGRAM = FIRST_COMM_HISTOGRAM + SPC_NUM_HISTOGRAMS,
    FIRST_HISTOGRAM = FIRST_PEER_HISTOGRAM + SPC_NUM_HISTOGRAMS,
    NUM_TRAFFIC_PVARS = FIRST_HISTOGRAM + SPC_NUM_HISTOGRAMS
};
/* MPI_T index of each, for unbind_handles. */
static int traffic_pvar_index[NUM_TRAFFIC_PVARS];
static bool traffic_pvars_registered;
/* What a handle's object becomes when its communicator or window is freed
 * (its address only); such a handle took no switch reference of its own
 * then. */
static char freed_object;

static bool is_window_pvar(int id)
{
    return id >= FIRST_PEER && id < FIRST_COMM_HISTOGRAM && spc_peer_counter_infos[id - FIRST_PEER].window;
}

/* ---- Per-peer arrays readable live (mpi_spc_live with traffic, spc/live.h) */

/* Writes into storage's live file (if it is one, not yet named) each peer's
 * rank in the job, as add_to_matrix places it: its process name's vpid, -1
 * for a process of another job.  Once per storage, when it is made, off the
 * fast path: readers count a storage only once it is named. */
static void live_name(ompi_group_t *peers, struct spc_comm *storage)
{
    if (NULL == storage || !spc_comm_live_unnamed(storage)) {
        return;
    }
    int32_t *ranks = malloc((size_t)(storage->peers > 0 ? storage->peers : 1) * sizeof *ranks);
    if (NULL == ranks) {
        return;  /* named when freed (record_comm), or left out by readers, who say so */
    }
    for (int peer = 0; peer < storage->peers; ++peer) {
        const opal_process_name_t name = ompi_group_get_proc_name(peers, peer);
        ranks[peer] = name.jobid == OMPI_PROC_MY_NAME->jobid && name.vpid < ompi_process_info.num_procs
                          ? (int32_t)name.vpid : -1;
    }
    (void)spc_comm_live_name(storage, ranks);
    free(ranks);
}

/* libspc made storage as a live file inside a PML's add_comm (ob1 makes it
 * there itself, patch "ob1: counters bound to communicators",
 * without telling us which communicator).  The communicator is already in
 * ompi_mpi_communicators (4.1.4 ompi/communicator/comm_cid.c:435 before
 * add_comm at :508; 5.0.7 :802 before :965) with its PML structure attached
 * (ob1 sets c_pml_comm before it makes the storage: 4.1.4
 * ompi/mca/pml/ob1/pml_ob1.c:252, 5.0.7 :304) and no storage yet: the one such communicator of storage's size is it.
 * Two made at once by two threads with the same size cannot be told apart:
 * then neither is named here, and record_comm names it when it is freed. */
/* Set while this file makes a storage itself and names it after (a window's
 * may have the size of a communicator being made by another thread). */
static __thread bool making_own_storage;

static void live_storage_made(struct spc_comm *storage)
{
    if (NULL == ompi_spc_comm_storage || making_own_storage) {
        return;
    }
    ompi_communicator_t *found = NULL;
    int candidates = 0;
    for (int cid = 0; cid < opal_pointer_array_get_size(&ompi_mpi_communicators); ++cid) {
        ompi_communicator_t *comm = opal_pointer_array_get_item(&ompi_mpi_communicators, cid);
        if (NULL == comm || &ompi_mpi_comm_null.comm == comm || OMPI_COMM_IS_FREED(comm) ||
            NULL == comm->c_pml_comm || NULL == comm->c_remote_group ||
            comm->c_remote_group->grp_proc_count != storage->peers ||
            NULL != ompi_spc_comm_storage(comm, false)) {
            continue;
        }
        found = comm;
        ++candidates;
    }
    if (1 == candidates) {
        live_name(found->c_remote_group, storage);
    }
}

/* With traffic attached and live on: every storage made from now on is a
 * file that readers outside the job map (spc-matrix). */
static void live_peers_start(void)
{
    if (!ompi_mpi_spc_live) {
        return;
    }
    char message[1024];
    spc_comm_live_created_callback(live_storage_made);
    if (SPC_SUCCESS != spc_live_peers_start(message, sizeof message)) {
        spc_comm_live_created_callback(NULL);
        opal_output(0, "spc: mpi_spc_live: %s", message);
    }
}

/* Storage made here, named here.  Out of line: the callers' lookups, which
 * every MPI_Send and one-sided call makes (ompi_spc_comm_record), stay the
 * instructions they were (the budget guard saw the thread-local flag's
 * address computed on them when this was inline). */
static __attribute__((noinline, cold, unused)) struct spc_comm *made_storage(ompi_group_t *peers, int size)
{
    making_own_storage = true;
    struct spc_comm *storage = spc_comm_create(size);
    making_own_storage = false;
    live_name(peers, storage);
    return storage;
}

static struct spc_comm *storage_of(void *comm, bool create)
{
    if (&freed_object == comm || NULL == comm || NULL == ompi_spc_comm_storage) {
        return NULL;
    }
    return ompi_spc_comm_storage((ompi_communicator_t *)comm, create);
}

/* storage_of(comm, true), named here: the lookup above stays as it was. */
static __attribute__((noinline, cold)) struct spc_comm *made_storage_of(void *comm)
{
    making_own_storage = true;
    struct spc_comm *storage = storage_of(comm, true);
    making_own_storage = false;
    if (NULL != storage) {
        live_name(((ompi_communicator_t *)comm)->c_remote_group, storage);
    }
    return storage;
}

/* MPI_T calls it under its lock, but a one-sided site may load the pointer
 * at the same time, hence the release store.  Peers: the window's group. */
static struct spc_comm *win_storage(ompi_win_t *win, bool create)
{
#if SPC_ENABLE
    struct spc_comm *storage = __atomic_load_n(&win->w_spc, __ATOMIC_ACQUIRE);
    if (NULL == storage && create) {
        storage = made_storage(win->w_group, ompi_group_size(win->w_group));
        __atomic_store_n(&win->w_spc, storage, __ATOMIC_RELEASE);
    }
    return storage;
#else
    (void)win;
    (void)create;
    return NULL;
#endif
}

/* The storage of the object variable id is bound to. */
static struct spc_comm *pvar_storage(int id, void *object, bool create)
{
    if (!is_window_pvar(id)) {
        return create ? made_storage_of(object) : storage_of(object, false);
    }
    return &freed_object == object || NULL == object ? NULL : win_storage((ompi_win_t *)object, create);
}

void ompi_spc_comm_record(struct ompi_communicator_t *comm, int id, uint64_t n)
{
    spc_comm_add(storage_of(comm, false), id, n);
}

void ompi_spc_comm_record_call(struct ompi_communicator_t *comm, int calls, int bytes_id, uint64_t bytes)
{
    struct spc_comm *storage = storage_of(comm, false);
    spc_comm_add(storage, calls, 1);
    spc_comm_add(storage, bytes_id, bytes);
}

static bool is_comm_level(int id)
{
    return id < FIRST_PEER && SPC_KIND_LEVEL == spc_counter_infos[spc_comm_counter_infos[id].counter].kind;
}

/* Communicator counter id (an spc_comm_counter_id) of comm, whose storage
 * is storage, in its catalogue counter's unit; false if the PML keeps no
 * such level. */
static bool comm_value(ompi_communicator_t *comm, const struct spc_comm *storage, int id,
                       unsigned long long *value)
{
    const int counter = spc_comm_counter_infos[id].counter;
    if (is_comm_level(id)) {
        int64_t level;
        if (NULL == ompi_spc_comm_level || !ompi_spc_comm_level(comm, counter, &level)) {
            return false;
        }
        *value = level < 0 ? 0 : (unsigned long long)level;
    } else {
        *value = spc_convert(counter, spc_comm_read(storage, id));
    }
    return true;
}

/* Adds comm's per-peer arrays to the matrix, by each peer's rank in the job
 * (its process name's vpid; ompi_group_get_proc_name allocates nothing).
 * Only peers with traffic are looked up, when the communicator is recorded:
 * the sites count by the communicator's ranks, as they did. */
static void add_to_matrix(ompi_group_t *peers, const struct spc_comm *storage)
{
    if (0 == storage->peers) {
        return;
    }
    if (matrix.ranks < 0) {
        return;  /* no memory for it, said once */
    }
    if (NULL == matrix.value) {
        matrix.ranks = (int)ompi_process_info.num_procs;
        matrix.value = calloc((size_t)SPC_NUM_PEER_COUNTERS * (size_t)matrix.ranks, sizeof *matrix.value);
        if (NULL == matrix.value) {
            opal_output(0, "spc: no memory for the communication matrix of %d ranks: the report leaves it out",
                        matrix.ranks);
            matrix.ranks = -1;  /* said once */
        }
    }
    uint64_t *values = malloc((size_t)storage->peers * sizeof *values);
    if (NULL == values) {
        return;
    }
    for (int id = 0; id < SPC_NUM_PEER_COUNTERS; ++id) {
        spc_comm_read_peers(storage, id, values);
        for (int peer = 0; peer < storage->peers; ++peer) {
            if (0 == values[peer]) {
                continue;
            }
            const opal_process_name_t name = ompi_group_get_proc_name(peers, peer);
            if (name.jobid != OMPI_PROC_MY_NAME->jobid || name.vpid >= (uint32_t)matrix.ranks) {
                matrix.other_jobs += SPC_UNIT_MESSAGES == spc_peer_counter_infos[id].unit ? values[peer] : 0;
                continue;
            }
            matrix.value[(size_t)id * (size_t)matrix.ranks + name.vpid] += values[peer];
        }
    }
    free(values);
}

/* Appends comm's values to comm_records (a communicator with no storage
 * has none) and its arrays to the matrix; a failed allocation loses this
 * record and says so. */
static void record_comm(ompi_communicator_t *comm)
{
    struct spc_comm *storage = storage_of(comm, false);
    if (NULL == storage) {
        return;
    }
    add_to_matrix(comm->c_remote_group, storage);
    live_name(comm->c_remote_group, storage);  /* one live_storage_made could not tell: folded named */
    if (num_comm_records == comm_records_capacity) {
        int capacity = comm_records_capacity ? 2 * comm_records_capacity : 16;
        struct ompi_spc_comm_record *more = realloc(comm_records, (size_t)capacity * sizeof *more);
        if (NULL == more) {
            opal_output(0, "spc: no memory for the record of communicator %u: the report misses it",
                        (unsigned)ompi_spc_comm_id(comm));
            return;
        }
        comm_records = more;
        comm_records_capacity = capacity;
    }
    struct ompi_spc_comm_record *r = &comm_records[num_comm_records++];
    r->id = ompi_spc_comm_id(comm);
    r->ranks = ompi_comm_size(comm);
    snprintf(r->name, sizeof r->name, "%s", comm->c_name);
    for (int id = 0; id < SPC_NUM_COMM_COUNTERS; ++id) {
        r->value[id] = 0;
        (void)comm_value(comm, storage, id, &r->value[id]);
    }
}

/* Every communicator in use, by context id (ompi/communicator/communicator.h:131). */
static void for_each_comm(void (*visit)(ompi_communicator_t *comm))
{
    for (int cid = 0; cid < opal_pointer_array_get_size(&ompi_mpi_communicators); ++cid) {
        ompi_communicator_t *comm = opal_pointer_array_get_item(&ompi_mpi_communicators, cid);
        if (NULL != comm && !ompi_comm_invalid(comm)) {
            visit(comm);
        }
    }
}

static void create_storage(ompi_communicator_t *comm) { (void)made_storage_of(comm); }

/* MPI_T_pvar_read's buffer holds as many values as BIND's count. */
static int traffic_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj_handle)
{
    int id = (int)(intptr_t)pvar->ctx;
    if (id >= FIRST_HISTOGRAM) {
        spc_histogram_read(NULL, id - FIRST_HISTOGRAM, (uint64_t *)value);
        return OPAL_SUCCESS;
    }
    if (!spc_running) {
        return OPAL_ERR_NOT_AVAILABLE;  /* MPI_T_ERR_INVALID (mpit_common.c:75-91) */
    }
    struct spc_comm *storage = pvar_storage(id, obj_handle, false);
    if (NULL == storage) {
        /* MPI_T_ERR_INVALID_HANDLE (patch
         * "mpit: performance variables with the standard's semantics") */
        return OPAL_ERR_NOT_BOUND;
    }
    if (id >= FIRST_PEER_HISTOGRAM) {
        spc_comm_read_peer_histograms(storage, id - FIRST_PEER_HISTOGRAM, (uint64_t *)value);
    } else if (id >= FIRST_COMM_HISTOGRAM) {
        spc_histogram_read(storage, id - FIRST_COMM_HISTOGRAM, (uint64_t *)value);
    } else if (id >= FIRST_PEER) {
        spc_comm_read_peers(storage, id - FIRST_PEER, (uint64_t *)value);
    } else if (!comm_value((ompi_communicator_t *)obj_handle, storage, id, (unsigned long long *)value)) {
        return OPAL_ERR_NOT_FOUND;
    }
    return OPAL_SUCCESS;
}

/* A started bound handle holds the communicator counters' switch, and for
 * a timer (MATCH_TIME) also its process-wide counter: the per-communicator
 * value is the time of the intervals that counter's sites take.  A level
 * needs neither: the PML keeps it always. */
static int comm_reference(int id, bool on)
{
    const int counter = id < FIRST_PEER ? spc_comm_counter_infos[id].counter : -1;
    const bool timer = counter >= 0 && SPC_KIND_TIMER == spc_counter_infos[counter].kind;
    if (is_comm_level(id)) {
        return OPAL_SUCCESS;
    }
    if (SPC_SUCCESS != (on ? spc_switch_on : spc_switch_off)(SPC_SWITCH_COMM_COUNTERS)) {
        return OPAL_ERROR;
    }
    if (timer && SPC_SUCCESS != (on ? spc_counter_enable : spc_counter_disable)(counter)) {
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* A handle is bound to a communicator (or window) for its life: BIND creates the
 * storage (kept until the communicator is freed), and the histograms per
 * peer for a variable of theirs (kept likewise: seed 003's arrays "exist
 * for a remote process only if" asked for), and gives the count
 * (mca_base_pvar_handle_alloc sizes the handle's values by it,
 * opal/mca/base/mca_base_pvar.c:467-476); START and STOP hold the switch
 * that turns every site of these variables on. */
static int traffic_pvar_notify(struct mca_base_pvar_t *pvar, mca_base_pvar_event_t event,
                               void *obj_handle, int *count)
{
    int id = (int)(intptr_t)pvar->ctx;
    struct spc_comm *storage;
    switch (event) {
    case MCA_BASE_PVAR_HANDLE_BIND:
        if (id >= FIRST_HISTOGRAM) {
            *count = SPC_HISTOGRAM_BINS;
            return OPAL_SUCCESS;
        }
        if (&freed_object != obj_handle && (is_window_pvar(id) ? ompi_win_invalid((ompi_win_t *)obj_handle)
                                                               : ompi_comm_invalid((ompi_communicator_t *)obj_handle))) {
            return OPAL_ERR_BAD_PARAM;
        }
        storage = pvar_storage(id, obj_handle, true);
        if (NULL == storage) {
            return &freed_object == obj_handle || (!is_window_pvar(id) && NULL == ompi_spc_comm_storage)
                       ? OPAL_ERR_NOT_BOUND
                       : OPAL_ERR_OUT_OF_RESOURCE;
        }
        if (id >= FIRST_PEER_HISTOGRAM && 0 != spc_comm_keep_peer_histograms(storage)) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        *count = id >= FIRST_PEER_HISTOGRAM   ? storage->peers * SPC_HISTOGRAM_BINS
                 : id >= FIRST_COMM_HISTOGRAM ? SPC_HISTOGRAM_BINS
                 : id >= FIRST_PEER           ? storage->peers
                                              : 1;
        return OPAL_SUCCESS;
    case MCA_BASE_PVAR_HANDLE_START:
        if (!spc_running) {
            return OPAL_ERR_NOT_AVAILABLE;
        }
        if (&freed_object == obj_handle) {
            return OPAL_ERR_NOT_BOUND;
        }
        return comm_reference(id, true);
    case MCA_BASE_PVAR_HANDLE_STOP:
        if (&freed_object == obj_handle) {
            return OPAL_SUCCESS;  /* unbind_handles gave its reference back */
        }
        return comm_reference(id, false);
    default:
        return OPAL_SUCCESS;
    }
}

/* Handles bound to object (a communicator or window about to go) read
 * nothing from now on; a started one gives its switch reference back.
 * Under MPI_T's lock, so no read is between its storage lookup and use. */
static void unbind_handles(void *object)
{
    for (int id = 0; id < FIRST_HISTOGRAM; ++id) {
        const mca_base_pvar_t *pvar;
        if (!traffic_pvars_registered || traffic_pvar_index[id] < 0 ||
            OPAL_SUCCESS != mca_base_pvar_get(traffic_pvar_index[id], &pvar)) {
            continue;
        }
        /* bound_handles links handles by their list2 (opal/mca/base/mca_base_pvar.h:212-214) */
        opal_list_t *bound = (opal_list_t *)&pvar->bound_handles;
        for (opal_list_item_t *item = opal_list_get_first(bound); item != opal_list_get_end(bound);
             item = opal_list_get_next(item)) {
            mca_base_pvar_handle_t *handle =
                (mca_base_pvar_handle_t *)((char *)item - offsetof(mca_base_pvar_handle_t, list2));
            if (handle->obj_handle == object) {
                if (handle->started) {
                    (void)comm_reference(id, false);
                }
                handle->obj_handle = &freed_object;
            }
        }
    }
}

/* Runs inside MPI_Comm_free (the PML's del_comm), before the storage goes. */
void ompi_spc_comm_freed(struct ompi_communicator_t *comm)
{
    ompi_mpit_lock();
    if (ompi_spc_comm_all && spc_running) {
        record_comm(comm);
    }
    unbind_handles(comm);
    ompi_mpit_unlock();
}

/* ---- One-sided traffic by target (SPC_PER_WIN_PEER) ---------------------- */

void ompi_spc_win_created(struct ompi_win_t *win)
{
    if (ompi_spc_comm_all) {
        (void)win_storage(win, true);
    }
}

void ompi_spc_win_destroyed(struct ompi_win_t *win)
{
#if SPC_ENABLE
    ompi_mpit_lock();
    struct spc_comm *storage = win_storage(win, false);
    if (NULL != storage && ompi_spc_comm_all && spc_running) {
        add_to_matrix(win->w_group, storage);
    }
    unbind_handles(win);
    win->w_spc = NULL;
    ompi_mpit_unlock();
    spc_comm_destroy(storage);
#else
    (void)win;
#endif
}

void ompi_spc_one_sided(struct ompi_win_t *win, int target, size_t sent, bool replies, size_t received)
{
    struct spc_comm *storage = win_storage(win, false);
    spc_comm_add_peer(storage, SPC_PEER_ONE_SIDED_MESSAGES_SENT, target, 1);
    spc_comm_add_peer(storage, SPC_PEER_ONE_SIDED_BYTES_SENT, target, sent);
    if (replies) {
        spc_comm_add_peer(storage, SPC_PEER_ONE_SIDED_MESSAGES_RECEIVED, target, 1);
        spc_comm_add_peer(storage, SPC_PEER_ONE_SIDED_BYTES_RECEIVED, target, received);
    }
}

/* Windows still in use at MPI_Finalize (by their Fortran index): recorded
 * and their storage gone, as if freed. */
static void record_windows(void)
{
    for (int i = 0; i < opal_pointer_array_get_size(&ompi_mpi_windows); ++i) {
        ompi_win_t *win = opal_pointer_array_get_item(&ompi_mpi_windows, i);
        if (NULL != win && !ompi_win_invalid(win)) {
            ompi_spc_win_destroyed(win);
        }
    }
}

/* ---- Storage in c_pml_comm, for PMLs that keep nothing there (ompi_spc_pml_comm.h) */

#if SPC_ENABLE
/* MPI_T calls it under its lock, but a site may load the pointer at the
 * same time, hence the release store.  Peers are the ranks a send and a
 * receive name: the remote group's. */
static struct spc_comm *pml_comm_storage(struct ompi_communicator_t *comm, bool create)
{
    struct spc_comm *storage = ompi_spc_pml_comm_storage(comm);
    if (NULL == storage && create) {
        storage = made_storage(comm->c_remote_group, comm->c_remote_group->grp_proc_count);
        __atomic_store_n((struct spc_comm **)&comm->c_pml_comm, storage, __ATOMIC_RELEASE);
    }
    return storage;
}
#endif

void ompi_spc_pml_comm_enable(void)
{
#if SPC_ENABLE
    ompi_spc_comm_storage = pml_comm_storage;
#endif
}

void ompi_spc_pml_comm_disable(void)
{
#if SPC_ENABLE
    if (ompi_spc_comm_storage == pml_comm_storage) {
        ompi_spc_comm_storage = NULL;
    }
#endif
}

void ompi_spc_pml_comm_added(struct ompi_communicator_t *comm)
{
#if SPC_ENABLE
    if (ompi_spc_comm_all) {
        (void)pml_comm_storage(comm, true);
    }
#else
    (void)comm;
#endif
}

void ompi_spc_pml_comm_deleted(struct ompi_communicator_t *comm)
{
    ompi_spc_events_object_gone(comm);
#if SPC_ENABLE
    struct spc_comm *storage = ompi_spc_pml_comm_storage(comm);
    if (NULL != storage) {
        ompi_spc_comm_freed(comm);
        spc_comm_destroy(storage);
        comm->c_pml_comm = NULL;
    }
#endif
}

/* The PMLs that count each counter counted below the MPI bindings;
 * NULL: the MPI layer counts it, under any PML. */
static const char *const pmls_counting[OMPI_SPC_NUM_COUNTERS] = {
#define OMPI_SPC_PML_COUNTS(name, pmls) [OMPI_SPC_##name] = pmls,
#include "ompi/runtime/ompi_spc_pmls.def"
};

const char *ompi_spc_pml(void)
{
    return mca_pml_base_selected_component.pmlm_version.mca_component_name;
}

/* Whether word is one of list's words (separated by spaces). */
static bool is_word_of(const char *word, const char *list)
{
    const size_t length = strlen(word);
    for (const char *at = strstr(list, word); 0 != length && NULL != at; at = strstr(at + length, word)) {
        if ((at == list || ' ' == at[-1]) && ('\0' == at[length] || ' ' == at[length])) {
            return true;
        }
    }
    return false;
}

bool ompi_spc_pml_counts(int id)
{
    return NULL == pmls_counting[id] || !is_word_of(ompi_spc_pml(), OMPI_SPC_PMLS_KNOWN) ||
           is_word_of(ompi_spc_pml(), pmls_counting[id]);
}

/* Whether the job's PML counts traffic variable id: a communicator's
 * counter if it counts the counter and keeps communicators' storage (a
 * level also needs its levels), a per-peer array or a histogram if it
 * keeps the storage. */
static bool pml_counts_traffic(int id)
{
    if (is_window_pvar(id)) {
        return true;  /* counted at the MPI bindings, under any PML */
    }
    if (NULL == ompi_spc_comm_storage) {
        return false;
    }
    if (id >= FIRST_PEER) {
        return true;
    }
    return ompi_spc_pml_counts(spc_comm_counter_infos[id].counter) &&
           (!is_comm_level(id) || NULL != ompi_spc_comm_level);
}

/* Name (after its prefix), description, kind and verbosity of variable id. */
static void traffic_pvar_info(int id, char *name, size_t name_size, char *description, size_t size,
                              spc_kind *kind, int *verbosity)
{
    *verbosity = OPAL_INFO_LVL_4;  /* MPI_T_VERBOSITY_TUNER_BASIC */
    if (id >= FIRST_PEER_HISTOGRAM && id < FIRST_HISTOGRAM) {
        const spc_histogram_info *histogram = &spc_histogram_infos[id - FIRST_PEER_HISTOGRAM];
        snprintf(name, name_size, SPC_COUNTER_PREFIX "PEER_%s", histogram->name + strlen(SPC_COUNTER_PREFIX));
        snprintf(description, size, "%s Per rank of the communicator the handle is bound to: its count is "
                 "the ranks x %d bins, rank 0's bins first; kept from the first such handle's allocation on "
                 "(%zu bytes a rank).", histogram->description, SPC_HISTOGRAM_BINS,
                 sizeof(uint64_t) * SPC_NUM_HISTOGRAMS * SPC_HISTOGRAM_BINS);
        *kind = SPC_KIND_COUNTER;
    } else if (id >= FIRST_COMM_HISTOGRAM) {
        const spc_histogram_info *histogram =
            &spc_histogram_infos[(id - FIRST_COMM_HISTOGRAM) % SPC_NUM_HISTOGRAMS];
        snprintf(name, name_size, "%s", histogram->name);
        snprintf(description, size, "%s %s", histogram->description,
                 id >= FIRST_HISTOGRAM ? "All communicators." : "On the communicator the handle is bound to.");
        *kind = SPC_KIND_COUNTER;
    } else if (id >= FIRST_PEER) {
        const spc_peer_counter_info *peer = &spc_peer_counter_infos[id - FIRST_PEER];
        snprintf(name, name_size, "%s", peer->name);
        snprintf(description, size, "%s %s", peer->description,
                 peer->window ? "An array indexed by the ranks of the window the handle is bound to."
                              : "An array indexed by the ranks of the communicator the handle is bound to.");
        *kind = peer->kind;
    } else {
        const spc_counter_info *counter = &spc_counter_infos[spc_comm_counter_infos[id].counter];
        snprintf(name, name_size, "%s", counter->name);
        snprintf(description, size, "%s %s", spc_comm_counter_infos[id].where, counter->description);
        *kind = counter->kind;
        *verbosity = OPAL_INFO_LVL_1 + (int)counter->verbosity;
    }
}

static void register_traffic_pvars(const int *group)
{
    for (int id = 0; id < NUM_TRAFFIC_PVARS; ++id) {
        traffic_pvar_index[id] = -1;
        if (!pml_counts_traffic(id)) {
            continue;
        }
        char counter_name[96], name[128], description[1024];
        spc_kind kind;
        int verbosity;
        traffic_pvar_info(id, counter_name, sizeof counter_name, description, sizeof description, &kind,
                          &verbosity);
        const bool bound = id < FIRST_HISTOGRAM;
        snprintf(name, sizeof name, "%s%s",
                 is_window_pvar(id) ? SPC_WIN_PVAR_PREFIX
                 : bound            ? SPC_COMM_PVAR_PREFIX
                                    : SPC_HISTOGRAM_PVAR_PREFIX,
                 counter_name);
        traffic_pvar_index[id] = mca_base_pvar_register(
            NULL, NULL, NULL, name, description, verbosity, pvar_class(kind),
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
            is_window_pvar(id) ? MPI_T_BIND_MPI_WIN : bound ? MPI_T_BIND_MPI_COMM : MPI_T_BIND_NO_OBJECT,
            is_comm_level(id) ? MCA_BASE_PVAR_FLAG_READONLY : 0, traffic_pvar_read,
            spc_pvar_write, traffic_pvar_notify, (void *)(intptr_t)id);
        if (traffic_pvar_index[id] < 0 || group[SPC_CATEGORY_TRAFFIC] < 0 ||
            mca_base_var_group_add_pvar(group[SPC_CATEGORY_TRAFFIC], traffic_pvar_index[id]) < 0) {
            opal_output(0, "spc: could not register %s as an MPI_T performance variable (%d)",
                        name, traffic_pvar_index[id]);
        }
    }
    traffic_pvars_registered = true;
}

/* Group index of each catalogue category; the root first, so that it is
 * created with its description before the leaves create it as their parent
 * (mca_base_var_group.c:280-285). */
static void register_categories(int *group)
{
    for (int category = 0; category < SPC_NUM_CATEGORIES; ++category) {
        const spc_category_info *info = &spc_category_infos[category];
        const char *leaf = SPC_CATEGORY_SPC == category ? NULL : info->name + strlen("spc_");
        group[category] = mca_base_var_group_register(NULL, "spc", leaf, info->description);
    }
}

static void register_pvars(void)
{
    int group[SPC_NUM_CATEGORIES];
    register_categories(group);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        /* not counted by this job's PML: no variable.  Its PAPI event
         * stays: PAPI 7.0.0's libsde crashes in sde_ti_name_to_code on a
         * name looked up after papi_sde_unregister_counter took it away. */
        if (!ompi_spc_pml_counts(id)) {
            continue;
        }
        const spc_counter_info *counter = &spc_counter_infos[id];
        char name[128];
        snprintf(name, sizeof name, SPC_PVAR_PREFIX "%s", counter->name);
        /* MPI_T's verbosity levels map one to one onto OPAL_INFO_LVL_1..9. */
        int verbosity = OPAL_INFO_LVL_1 + (int)counter->verbosity;
        int flags = SPC_KIND_LEVEL == counter->kind       ? MCA_BASE_PVAR_FLAG_READONLY
                    : SPC_KIND_HIGHWATERMARK == counter->kind ? MCA_BASE_PVAR_FLAG_PER_HANDLE
                                                              : 0;
        char description[1024];
        if (SPC_KIND_TIMER == counter->kind && spc_timer_sampling() > 1) {
            snprintf(description, sizeof description,
                     "%s Sampled (mpi_spc_timer_sampling %u): one interval in %u is timed and "
                     "the sum scaled by %u, an estimate.", counter->description,
                     spc_timer_sampling(), spc_timer_sampling(), spc_timer_sampling());
        } else {
            snprintf(description, sizeof description, "%s", counter->description);
        }
        int index = mca_base_pvar_register(
            NULL, NULL, NULL, name, description, verbosity, pvar_class(counter->kind),
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MPI_T_BIND_NO_OBJECT, flags,
            spc_pvar_read, spc_pvar_write, spc_pvar_notify, (void *)(intptr_t)id);
        /* add_pvar returns the variable's position in the group */
        if (index < 0 || group[counter->category] < 0 ||
            mca_base_var_group_add_pvar(group[counter->category], index) < 0) {
            opal_output(0, "spc: could not register %s as an MPI_T performance variable (%d)",
                        name, index);
        }
    }
    register_traffic_pvars(group);
}

/* The rank in the job from the runtime, not MPI_COMM_WORLD: a process started
 * by MPI_Session_init alone has no world. */
static bool is_rank_zero(void) { return 0 == OMPI_PROC_MY_NAME->vpid; }


static void apply_attach_list(void)
{
    char message[4096];
    if (spc_attach(ompi_mpi_spc_attach_string, &attached, message, sizeof message) > 0 &&
        is_rank_zero()) {
        opal_output(0, "spc: %s", message);
    }
    /* what it asked for that this PML does not count: named, and not kept on */
    size_t used = 0;
    message[0] = '\0';
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (attached.counters[id] && !ompi_spc_pml_counts(id)) {
            spc_counter_disable(id);
            attached.counters[id] = 0;
            used += (size_t)snprintf(message + used, used < sizeof message ? sizeof message - used : 0,
                                     "%s%s", 0 == used ? "" : ", ", spc_counter_infos[id].name);
        }
    }
    if (used > 0 && is_rank_zero()) {
        opal_output(0, "spc: mpi_spc_attach: pml %s does not count %s; they are not MPI_T variables "
                    "in this job, and the report names them", ompi_spc_pml(), message);
    }
    /* "all" means the counters; the histograms are asked for by name */
    traffic_attached = attached.categories[SPC_CATEGORY_TRAFFIC] &&
                       SPC_SUCCESS == spc_switch_on(SPC_SWITCH_COMM_COUNTERS);
    if (traffic_attached) {
        /* the PML makes the storage of communicators added from now on;
         * MPI_COMM_WORLD and MPI_COMM_SELF were added before MPI_Init got here */
        ompi_spc_comm_all = true;
        live_peers_start();
        for_each_comm(create_storage);
    }
}

static void apply_timer_sampling(void)
{
    if (ompi_mpi_spc_timer_sampling < 1) {
        if (is_rank_zero()) {
            opal_output(0, "spc: mpi_spc_timer_sampling must be 1 or more, not %d; the timers "
                        "stay exact", ompi_mpi_spc_timer_sampling);
        }
        return;
    }
    spc_timer_sampling_set((unsigned)ompi_mpi_spc_timer_sampling);
}

/* mpi_spc_live: names this rank's live segment after the job and rank
 * (libspc made it when it loaded, or makes it now). */
static void apply_live(void)
{
    if (!ompi_mpi_spc_live) {
        return;
    }
    char jobid[32], message[1024];
    snprintf(jobid, sizeof jobid, "%u", (unsigned)OMPI_PROC_MY_NAME->jobid);
    struct spc_live_identity who = {ompi_mpi_spc_live_dir, ompi_mpi_spc_live_group, jobid, NULL,
                                    (int)OMPI_PROC_MY_NAME->vpid,
                                    (int)ompi_process_info.num_procs,
                                    /* 0 would mean "the environment's": named as out of range instead */
                                    ompi_mpi_spc_live_threads > 0 ? (unsigned)ompi_mpi_spc_live_threads
                                                                  : SPC_LIVE_MAX_THREADS + 1u};
    /* a failure libspc already reported (at load) comes back without a message */
    (void)spc_live_publish(&who, message, sizeof message);
    if ('\0' != message[0]) {
        opal_output(0, "spc: mpi_spc_live: %s", message);
    }
}

void ompi_spc_init(void)
{
    /* The first of MPI_Init, MPI_Init_thread and MPI_Session_init starts
     * the counters; the others find them running. */
    if (spc_running) {
        return;
    }
    spc_init();
#if SPC_ENABLE
    /* the PML is chosen: PAPI gets the counters that wait for it */
    spc_papi_register_pml(ompi_spc_pml_counts);
#endif
    apply_timer_sampling();
    /* a session asks for threads through its info, not MPI_Init_thread */
    ompi_spc_events_mpi_init(ompi_mpi_thread_multiple || opal_using_threads());
    register_pvars();
    spc_running = true;
    /* the live readers leave out what the PML does not count, as MPI_T does */
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (!ompi_spc_pml_counts(id)) {
            spc_live_not_counted(id);
        }
    }
    apply_live();
    apply_attach_list();
}

void ompi_spc_fini(void)
{
    /* MPI_Finalize runs this first thing, even when called twice or before
     * MPI_Init (ompi/mpi/c/finalize.c:44); with MPI sessions the last
     * instance's finalize runs it too. */
    if (!spc_running) {
        return;
    }
    ompi_spc_events_mpi_finalize();
    /* the live segment's final values are the report's: taken before its traffic */
    spc_live_finalize(ompi_mpi_spc_live_keep);
    if (ompi_spc_comm_all) {
        for_each_comm(record_comm);  /* those still in use */
        record_windows();
    }
    if (ompi_mpi_spc_dump_enabled) {
        ompi_spc_report(traffic_attached, comm_records, num_comm_records, &matrix);
    }
    free(comm_records);
    comm_records = NULL;
    free(matrix.value);
    matrix = (struct ompi_spc_matrix){0};
    num_comm_records = comm_records_capacity = 0;
    ompi_spc_comm_all = false;
    spc_running = false;
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (attached.counters[id]) {
            spc_counter_disable(id);
        }
    }
    memset(&attached, 0, sizeof attached);
    if (traffic_attached) {
        spc_switch_off(SPC_SWITCH_COMM_COUNTERS);
        traffic_attached = false;
    }
}
