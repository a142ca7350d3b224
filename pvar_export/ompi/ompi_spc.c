/*
 * ompi-spc's replacement for Open MPI 4.1.4's ompi/runtime/ompi_spc.c
 * (ompi_patches/build_ompi.sh copies it over upstream's): every counter of
 * the SPC catalogue becomes an MPI_T performance variable.
 *
 * Open MPI's MPI_T layer already keeps per-handle state for variables that
 * are not CONTINUOUS (opal/mca/base/mca_base_pvar.c:483-531 allocates it,
 * :560-667 computes it): for sum classes (COUNTER, AGGREGATE, TIMER) a handle
 * holds the value at its start and accumulates deltas, so two sessions read
 * their own deltas and MPI_T_pvar_reset/readreset work (:786-799); a stopped
 * handle is frozen.  Upstream registered every counter CONTINUOUS and of
 * class SIZE (upstream ompi_spc.c:320-324), which switched all of that off.
 * Here each counter gets the class of its kind and no CONTINUOUS flag, and
 * the notify callback turns a counter on at MPI_T_pvar_start and off at
 * MPI_T_pvar_stop through the core's reference counts.
 *
 * Only levels are read-only: MPI_T's read-only means "cannot be written or
 * reset", and a handle of any other class can be reset.  Writes are refused.
 *
 * Categories are the catalogue's, registered as Open MPI variable groups
 * ("spc" and its leaves "spc_<leaf>").  The variables are registered under
 * their full upstream name with no project, framework or component, so that
 * no automatic group ("ompi_runtime_spc") holds them too, and each is added
 * to its one leaf.
 */
#include "ompi_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/runtime/ompi_spc.h"
#include "ompi/runtime/params.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var_group.h"
#include "opal/mca/base/mca_base_vari.h"
#include "opal/util/output.h"
#include "ompi/mca/coll/coll.h"
#if SPC_ENABLE
#include "spc/spc_papi.h"
#endif

/* Counters turned on by mpi_spc_attach, released at finalize. */
static bool attached[OMPI_SPC_NUM_COUNTERS];
/* Between MPI_Init and MPI_Finalize.  MPI_T outlives MPI_Finalize, and with
 * it the handles a tool still holds: reads then fail cleanly. */
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
 * such a variable's callbacks the handle itself as obj_handle (patch 0009,
 * MCA_BASE_PVAR_FLAG_PER_HANDLE); MPI_T calls them under its lock. */
struct watermark_handle {
    const void *handle;  /* NULL: the entry is free */
    int slot;
};
static struct watermark_handle watermark_handles[2 * SPC_WATERMARK_SLOTS];

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
    return SPC_KIND_HIGHWATERMARK == spc_counters[id].kind;
}

static int spc_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj_handle)
{
    int id = (int)(intptr_t)pvar->ctx;
    if (!spc_running) {
        return OPAL_ERR_NOT_AVAILABLE;  /* MPI_T_ERR_INVALID (mpit_common.c:75-91) */
    }
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

/* Group index of each catalogue category; the root first, so that it is
 * created with its description before the leaves create it as their parent
 * (mca_base_var_group.c:280-285). */
static void register_categories(int *group)
{
    for (int category = 0; category < SPC_NUM_CATEGORIES; ++category) {
        const spc_category_info *info = &spc_categories[category];
        const char *leaf = SPC_CATEGORY_spc == category ? NULL : info->name + strlen("spc_");
        group[category] = mca_base_var_group_register(NULL, "spc", leaf, info->description);
    }
}

static void register_pvars(void)
{
    int group[SPC_NUM_CATEGORIES];
    register_categories(group);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        const spc_counter_info *counter = &spc_counters[id];
        char name[128];
        snprintf(name, sizeof name, "runtime_spc_%s", counter->name);
        /* MPI_T's verbosity levels map one to one onto OPAL_INFO_LVL_1..9. */
        int verbosity = OPAL_INFO_LVL_1 + (int)counter->verbosity;
        int flags = SPC_KIND_LEVEL == counter->kind       ? MCA_BASE_PVAR_FLAG_READONLY
                    : SPC_KIND_HIGHWATERMARK == counter->kind ? MCA_BASE_PVAR_FLAG_PER_HANDLE
                                                              : 0;
        int index = mca_base_pvar_register(
            NULL, NULL, NULL, name, counter->description, verbosity, pvar_class(counter->kind),
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MPI_T_BIND_NO_OBJECT, flags,
            spc_pvar_read, spc_pvar_write, spc_pvar_notify, (void *)(intptr_t)id);
        /* add_pvar returns the variable's position in the group */
        if (index < 0 || group[counter->category] < 0 ||
            mca_base_var_group_add_pvar(group[counter->category], index) < 0) {
            opal_output(0, "spc: could not register %s as an MPI_T performance variable (%d)",
                        name, index);
        }
    }
}

static void apply_attach_list(void)
{
    char message[4096];
    unsigned char chosen[OMPI_SPC_NUM_COUNTERS];
    if (spc_attach_parse(ompi_mpi_spc_attach_string, chosen, message, sizeof message) > 0 &&
        0 == ompi_comm_rank(&ompi_mpi_comm_world.comm)) {
        opal_output(0, "spc: %s", message);
    }
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        attached[id] = chosen[id] && SPC_SUCCESS == spc_counter_enable(id);
    }
}

/* ---- The finalize report (mpi_spc_dump_enabled, mpi_spc_dump_file) ------ */

static const char *unit_name(spc_unit unit)
{
    switch (unit) {
    case SPC_UNIT_CALLS: return "calls";
    case SPC_UNIT_BYTES: return "bytes";
    case SPC_UNIT_MESSAGES: return "messages";
    case SPC_UNIT_MICROSECONDS: return "microseconds";
    }
    return "";
}

/* Min, mean, max and the rank of the max of every counter, from three
 * reductions to rank 0: no rank gathers every value, and all buffers are on
 * the stack, so no rank can fail to allocate and leave the others waiting. */
static void print_table(const unsigned long long *values, ompi_communicator_t *world)
{
    const int rank = ompi_comm_rank(world), size = ompi_comm_size(world);
    struct { long value; int rank; } mine[OMPI_SPC_NUM_COUNTERS], max[OMPI_SPC_NUM_COUNTERS];
    unsigned long long min[OMPI_SPC_NUM_COUNTERS], sum[OMPI_SPC_NUM_COUNTERS];
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        mine[id].value = (long)values[id];
        mine[id].rank = rank;
    }
    world->c_coll->coll_reduce(values, min, OMPI_SPC_NUM_COUNTERS, MPI_UNSIGNED_LONG_LONG, MPI_MIN,
                               0, world, world->c_coll->coll_reduce_module);
    world->c_coll->coll_reduce(values, sum, OMPI_SPC_NUM_COUNTERS, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                               0, world, world->c_coll->coll_reduce_module);
    world->c_coll->coll_reduce(mine, max, OMPI_SPC_NUM_COUNTERS, MPI_LONG_INT, MPI_MAXLOC, 0,
                               world, world->c_coll->coll_reduce_module);
    if (0 != rank) {
        return;
    }
    /* One write to one stream, so no line of it interleaves with another. */
    char text[(OMPI_SPC_NUM_COUNTERS + 6) * 160];
    size_t used = 0;
    int zero = 0;
    used += snprintf(text + used, sizeof text - used,
                     "Open MPI software-based performance counters, %d ranks "
                     "(counters that were 0 on every rank are left out)\n"
                     "%-36s %-12s %16s %18s %16s %8s\n", size, "counter", "unit", "min",
                     "mean", "max", "max rank");
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (0 == max[id].value) {
            ++zero;
            continue;
        }
        used += snprintf(text + used, sizeof text - used, "%-36s %-12s %16llu %18.1f %16ld %8d\n",
                         spc_counters[id].name, unit_name(spc_counters[id].unit), min[id],
                         (double)sum[id] / size, max[id].value, max[id].rank);
    }
    snprintf(text + used, sizeof text - used, "(%d of %d counters were 0 on every rank)\n", zero,
             OMPI_SPC_NUM_COUNTERS);
    fputs(text, stdout);
    fflush(stdout);
}

/* Every rank's values to rank 0, which writes them as CSV.  The ranks first
 * agree that rank 0 could allocate, so a failed allocation skips the file
 * instead of leaving the others in a gather. */
static void write_csv(const char *path, const unsigned long long *values,
                      ompi_communicator_t *world)
{
    const int rank = ompi_comm_rank(world), size = ompi_comm_size(world);
    unsigned long long *all = NULL;
    int ready = 1, all_ready = 0;
    if (0 == rank) {
        all = malloc((size_t)size * OMPI_SPC_NUM_COUNTERS * sizeof *all);
        ready = NULL != all;
    }
    world->c_coll->coll_allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, world,
                                  world->c_coll->coll_allreduce_module);
    if (!all_ready) {
        if (0 == rank) {
            opal_output(0, "spc: no memory for the values of %d ranks: %s not written", size, path);
        }
        return;
    }
    world->c_coll->coll_gather(values, OMPI_SPC_NUM_COUNTERS, MPI_UNSIGNED_LONG_LONG, all,
                               OMPI_SPC_NUM_COUNTERS, MPI_UNSIGNED_LONG_LONG, 0, world,
                               world->c_coll->coll_gather_module);
    if (0 != rank) {
        return;
    }
    FILE *csv = fopen(path, "w");
    if (NULL == csv) {
        opal_output(0, "spc: cannot write mpi_spc_dump_file %s: %s", path, strerror(errno));
    } else {
        fputs("rank,counter,value,unit\n", csv);
        for (int r = 0; r < size; ++r) {
            for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
                fprintf(csv, "%d,%s,%llu,%s\n", r, spc_counters[id].name,
                        all[(size_t)r * OMPI_SPC_NUM_COUNTERS + id], unit_name(spc_counters[id].unit));
            }
        }
        if (0 != fclose(csv)) {
            opal_output(0, "spc: error writing mpi_spc_dump_file %s: %s", path, strerror(errno));
        }
    }
    free(all);
}

static void dump_report(void)
{
    unsigned long long values[OMPI_SPC_NUM_COUNTERS];
    uint64_t snapshot[OMPI_SPC_NUM_COUNTERS];
    /* before the report's own traffic moves the MPI byte counters */
    spc_read_all(snapshot, OMPI_SPC_NUM_COUNTERS);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        values[id] = snapshot[id];
    }
    ompi_communicator_t *world = &ompi_mpi_comm_world.comm;
    print_table(values, world);
    if (NULL != ompi_mpi_spc_dump_file && '\0' != ompi_mpi_spc_dump_file[0]) {
        write_csv(ompi_mpi_spc_dump_file, values, world);
    }
}

void ompi_spc_init(void)
{
    spc_init();
#if SPC_ENABLE
    spc_papi_register();
#endif
    register_pvars();
    spc_running = true;
    apply_attach_list();
}

void ompi_spc_fini(void)
{
    /* MPI_Finalize runs this first thing, even when called twice or before
     * MPI_Init (ompi/mpi/c/finalize.c:44). */
    if (!spc_running) {
        return;
    }
    if (ompi_mpi_spc_dump_enabled) {
        dump_report();
    }
    spc_running = false;
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (attached[id]) {
            spc_counter_disable(id);
            attached[id] = false;
        }
    }
}
