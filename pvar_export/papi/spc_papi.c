/*
 * Every SPC counter as a PAPI software-defined event (SDE),
 * sde:::ompi_spc::OMPI_SPC_<NAME>, and every bin of the message-size
 * histograms as one, OMPI_SPC_<HISTOGRAM>_BIN<k>.  Registered when the
 * library is loaded (libmpi of the spc build links it), so the events exist
 * before MPI_Init, but for the counters some PML does not count: those wait
 * for MPI_Init, which registers the ones its PML counts (see
 * spc_papi_register_pml).
 * Values come from read callbacks (spc_read): nothing on the fast path.
 * No counter groups and no papi_sde_shutdown: PAPI 7.0.0 frees grouped
 * counters twice on shutdown.
 */
#include <sde_lib.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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

/* Histogram bins count behind the switch of the communicator sites: the
 * first read of any bin turns it on for good, as read_counter does for a
 * counter. */
static unsigned char histogram_reference;

static long long read_bin(void *param)
{
    int event = (int)(intptr_t)param;
    if (!__atomic_exchange_n(&histogram_reference, 1, __ATOMIC_RELAXED)) {
        spc_switch_on(SPC_SWITCH_COMM_COUNTERS);
    }
    return (long long)__atomic_load_n(
        &spc_histograms[event / SPC_HISTOGRAM_BINS][event % SPC_HISTOGRAM_BINS], __ATOMIC_RELAXED);
}

/* libsde keeps the names and descriptions it is given, so they live here. */
static char bin_names[SPC_NUM_HISTOGRAMS * SPC_HISTOGRAM_BINS][64];
static char bin_descriptions[SPC_NUM_HISTOGRAMS * SPC_HISTOGRAM_BINS][512];

static void register_bins(const papi_sde_fptr_struct_t *sde, papi_handle_t library)
{
    for (int event = 0; event < SPC_NUM_HISTOGRAMS * SPC_HISTOGRAM_BINS; ++event) {
        const int id = event / SPC_HISTOGRAM_BINS, bin = event % SPC_HISTOGRAM_BINS;
        spc_histogram_bin_name(id, bin, bin_names[event], sizeof bin_names[event]);
        spc_histogram_bin_description(id, bin, bin_descriptions[event], sizeof bin_descriptions[event]);
        sde->register_counter_cb(library, bin_names[event], PAPI_SDE_RO | PAPI_SDE_DELTA,
                                 PAPI_SDE_long_long, read_bin, (void *)(intptr_t)event);
        sde->describe_counter(library, bin_names[event], bin_descriptions[event]);
    }
}

/* A level or a watermark is a state, not an amount that grows: PAPI reports
 * it as it is (INSTANT) instead of as a difference since PAPI_start. */
static int sde_mode(spc_kind kind)
{
    return PAPI_SDE_RO |
           (SPC_KIND_LEVEL == kind || SPC_KIND_HIGHWATERMARK == kind ? PAPI_SDE_INSTANT
                                                                      : PAPI_SDE_DELTA);
}

/* The PMLs that count each counter counted below the MPI bindings (NULL:
 * the MPI layer counts it, under any PML). */
static const char *const pmls_counting[OMPI_SPC_NUM_COUNTERS] = {
#define OMPI_SPC_PML_COUNTS(name, pmls) [OMPI_SPC_##name] = pmls,
#include "../ompi/ompi_spc_pmls.def"
};

/* A counter that some PML does not count is registered only once the job's
 * PML is known, and only if it counts it: an event that no library
 * registered reads -1 in PAPI, its convention for "not registered" (PAPI
 * 7.0.0 src/sde_lib/sde_lib_ti.c:67-72), where a registered one would read
 * a 0 that looks like a measurement.  Registering cannot be undone: Debian's
 * libsde crashes looking up a name after papi_sde_unregister_counter. */
static bool waits_for_the_pml(int id)
{
    return NULL != pmls_counting[id] && 0 != strcmp(pmls_counting[id], OMPI_SPC_PMLS_KNOWN);
}

static void register_counter(const papi_sde_fptr_struct_t *sde, papi_handle_t library, int id)
{
    const spc_counter_info *counter = &spc_counter_infos[id];
    sde->register_counter_cb(library, counter->name, sde_mode(counter->kind), PAPI_SDE_long_long,
                             read_counter, (void *)(intptr_t)id);
    sde->describe_counter(library, counter->name, counter->description);
}

static papi_handle_t register_catalogue(const papi_sde_fptr_struct_t *sde, bool with_waiting)
{
    papi_handle_t library = sde->init(SPC_PAPI_LIBRARY);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (with_waiting || !waits_for_the_pml(id)) {
            register_counter(sde, library, id);
        }
    }
    register_bins(sde, library);
    return library;
}

/* papi_native_avail -sde <library> calls this to list our events: all of
 * them, whatever a PML counts. */
papi_handle_t papi_sde_hook_list_events(papi_sde_fptr_struct_t *fptr_struct)
{
    return register_catalogue(fptr_struct, true);
}

__attribute__((constructor)) static void register_at_load(void)
{
    papi_sde_fptr_struct_t sde;
    POPULATE_SDE_FPTR_STRUCT(sde);
    register_catalogue(&sde, false);
}

/* Which of the counters that wait for the PML are registered: a later
 * MPI_Init (MPI sessions start MPI again) finds them registered, not a
 * tool's placeholder, and must not turn them on. */
static unsigned char registered_for_the_pml[OMPI_SPC_NUM_COUNTERS];

void spc_papi_register_pml(bool (*pml_counts)(int id))
{
    papi_sde_fptr_struct_t sde;
    POPULATE_SDE_FPTR_STRUCT(sde);
    papi_handle_t library = sde.init(SPC_PAPI_LIBRARY);  /* the same handle again */
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (!waits_for_the_pml(id) || (NULL != pml_counts && !pml_counts(id)) ||
            __atomic_exchange_n(&registered_for_the_pml[id], 1, __ATOMIC_RELAXED)) {
            continue;
        }
        /* A tool that named the event before (PAPI holds a placeholder for
         * it) may have started its event set already, and PAPI_start read
         * nothing of ours then: the counter counts from here, as it would
         * have from that start. */
        if (NULL != sde.get_counter_handle(library, spc_counter_infos[id].name) &&
            !__atomic_exchange_n(&papi_reference[id], 1, __ATOMIC_RELAXED)) {
            spc_counter_enable(id);
        }
        register_counter(&sde, library, id);
    }
}
