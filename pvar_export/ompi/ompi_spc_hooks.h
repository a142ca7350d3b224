/*
 * Open MPI's hooks, listed with their consumers in ompi_spc_hooks.def: ids
 * for OMPI_SPC_HOOK sites, and the tests a hook's code makes of its
 * consumers (each a flag load: the code runs only while one is on).
 */
#ifndef OMPI_SPC_HOOKS_H
#define OMPI_SPC_HOOKS_H

#include "ompi/runtime/ompi_spc.h"
#include "ompi/runtime/ompi_spc_events.h"

enum ompi_spc_hook_id {
#define OMPI_SPC_HOOK_POINT(name, where) OMPI_SPC_HOOK_##name,
#include "ompi/runtime/ompi_spc_hooks.def"
    OMPI_SPC_NUM_HOOKS
};

/* Consumers that are switches, as ompi_spc_hooks.def names them. */
#define OMPI_SPC_USES_COMM SPC_SWITCH_SITE_ID(SPC_SWITCH_COMM_COUNTERS)
#define OMPI_SPC_USES_EVENT(id) SPC_SWITCH_SITE_ID(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_EVENT_##id)
#define OMPI_SPC_USES_SAFE_POINT SPC_SWITCH_SITE_ID(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_NUM_EVENTS)

/* code behind hook OMPI_SPC_HOOK_<name>'s one site, compiled in each mode
 * (spc.h's spc_hook_mode): it hands SPC_HOOK_MODE to the functions that do
 * the work. */
#define OMPI_SPC_HOOK(name, code) SPC_HOOK(OMPI_SPC_HOOK_##name, code)
/* code instead of plain, a statement it does the work of, while the hook is
 * on (SPC_HOOK_AROUND): the hook that times plain. */
#define OMPI_SPC_HOOK_AROUND(name, code, plain) SPC_HOOK_AROUND(OMPI_SPC_HOOK_##name, code, plain)

/* Inside a hook's code in mode: whether one of hook NAME's consumers that
 * is a switch is on (one test for them all), and whether one of them is. */
#define OMPI_SPC_HOOK_SWITCHES_ON(mode, name) SPC_HOOK_SWITCHES_ON(mode, OMPI_SPC_HOOK_##name)
#define OMPI_SPC_SWITCH_ON_(key) (0 != __atomic_load_n(&spc_flags_.switches[key], __ATOMIC_RELAXED))
#define OMPI_SPC_COMM_ON() OMPI_SPC_SWITCH_ON_(SPC_SWITCH_COMM_COUNTERS)
#define OMPI_SPC_EVENT_ON(id) OMPI_SPC_SWITCH_ON_(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_EVENT_##id)
#define OMPI_SPC_SAFE_POINT_ON() OMPI_SPC_SWITCH_ON_(SPC_SWITCH_FIRST_EVENT + OMPI_SPC_NUM_EVENTS)

/* Gives every hook its consumers (from a constructor of libmpi's, before
 * anything can turn a consumer on). */
void ompi_spc_hooks_define(void);

#if SPC_ENABLE
/* The code of an MPI function's entry hook in mode: its call counter,
 * comm's counter comm_id (if comm is a communicator: the call's checks
 * come after), and the events' safe point. */
static inline __attribute__((always_inline)) void
ompi_spc_mpi_entry(spc_hook_mode mode, int hook, ompi_communicator_t *comm, int counter, int comm_id)
{
    spc_hook_record_(mode, NULL, counter, 1);
    if (SPC_HOOK_SWITCHES_ON(mode, hook)) {
        if (OMPI_SPC_COMM_ON() && !ompi_comm_invalid(comm)) {
            ompi_spc_comm_record(comm, comm_id, 1);
        }
        if (OMPI_SPC_SAFE_POINT_ON()) {
            spc_ev_safe_point();
        }
    }
}
#endif

#endif
