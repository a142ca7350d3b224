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

#include <string.h>

#include "ompi/runtime/ompi_spc.h"
#include "ompi/runtime/params.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var_group.h"
#include "opal/mca/base/mca_base_vari.h"
#include "opal/util/output.h"

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

static int spc_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj_handle)
{
    (void)obj_handle;
    if (!spc_running) {
        return OPAL_ERR_NOT_AVAILABLE;  /* MPI_T_ERR_INVALID (mpit_common.c:75-91) */
    }
    *(unsigned long long *)value = spc_read((int)(intptr_t)pvar->ctx);
    return OPAL_SUCCESS;
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
    (void)obj_handle;
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
        int flags = SPC_KIND_LEVEL == counter->kind ? MCA_BASE_PVAR_FLAG_READONLY : 0;
        int index = mca_base_pvar_register(
            NULL, NULL, NULL, name, counter->description, verbosity, pvar_class(counter->kind),
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MPI_T_BIND_NO_OBJECT, flags,
            spc_pvar_read, spc_pvar_write, spc_pvar_notify, (void *)(intptr_t)id);
        if (index < 0 || group[counter->category] < 0 ||
            OPAL_SUCCESS != mca_base_var_group_add_pvar(group[counter->category], index)) {
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

void ompi_spc_init(void)
{
    spc_init();
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
    spc_running = false;
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (attached[id]) {
            spc_counter_disable(id);
            attached[id] = false;
        }
    }
}
