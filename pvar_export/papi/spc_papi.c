/*
 * Every SPC counter as a PAPI software-defined event (SDE),
 * sde:::ompi_spc::OMPI_SPC_<NAME>, registered when the library is loaded
 * (libmpi of the spc build links it), so the events exist before MPI_Init.
 * Values come from read callbacks (spc_read): nothing on the fast path.
 * No counter groups and no papi_sde_shutdown: PAPI 7.0.0 frees grouped
 * counters twice on shutdown.
 */
#include <sde_lib.h>
#include <stdint.h>

#include "spc/spc.h"
#include "spc_papi.h"

static unsigned char papi_reference[OMPI_SPC_NUM_COUNTERS];

/* libsde offers a library read callbacks only.  PAPI_start reads every event
 * of its event set once, through sde_ti_reset_counter (PAPI 7.0.0
 * src/components/sde/sde.c:218 -> sde_lib/sde_lib_ti.c:182), and no read of
 * an event comes before its event set's first start, so an event's first
 * read is its first PAPI_start: it takes one reference on the counter, as an
 * MPI_T handle or mpi_spc_attach does, so MPI_T users cannot turn off what
 * PAPI reads and the other way round.  PAPI_stop reaches no code of ours
 * (sde.c:265-290 touches only the overflow timer), so that reference is held
 * until the process ends. */
static long long read_counter(void *param)
{
    int id = (int)(intptr_t)param;
    if (!__atomic_exchange_n(&papi_reference[id], 1, __ATOMIC_RELAXED)) {
        spc_counter_enable(id);
    }
    return (long long)spc_read(id);
}

/* A level or a watermark is a state, not an amount that grows: PAPI reports
 * it as it is (INSTANT) instead of as a difference since PAPI_start. */
static int sde_mode(spc_kind kind)
{
    return PAPI_SDE_RO |
           (SPC_KIND_LEVEL == kind || SPC_KIND_HIGHWATERMARK == kind ? PAPI_SDE_INSTANT
                                                                      : PAPI_SDE_DELTA);
}

static papi_handle_t register_catalogue(const papi_sde_fptr_struct_t *sde)
{
    papi_handle_t library = sde->init(SPC_PAPI_LIBRARY);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        const spc_counter_info *counter = &spc_counter_infos[id];
        sde->register_counter_cb(library, counter->name, sde_mode(counter->kind),
                                 PAPI_SDE_long_long, read_counter, (void *)(intptr_t)id);
        sde->describe_counter(library, counter->name, counter->description);
    }
    return library;
}

/* papi_native_avail -sde <library> calls this to list our events. */
papi_handle_t papi_sde_hook_list_events(papi_sde_fptr_struct_t *fptr_struct)
{
    return register_catalogue(fptr_struct);
}

__attribute__((constructor)) void spc_papi_register(void)
{
    papi_sde_fptr_struct_t sde;
    POPULATE_SDE_FPTR_STRUCT(sde);
    register_catalogue(&sde);
}
