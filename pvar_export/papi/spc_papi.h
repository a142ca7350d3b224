/*
 * The PAPI export of the SPC counters (libspc_papi).
 */
#ifndef SPC_PAPI_H
#define SPC_PAPI_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Registers, once the job's PML is chosen (MPI_Init), the counters that
 * some PML does not count and that pml_counts(id) says this one does (NULL:
 * all of them); registering again changes nothing.  Every other event is
 * registered when the library loads.  MPI_Init's call is also what keeps
 * libmpi linked to this library under --as-needed, which drops libraries
 * nobody calls. */
void spc_papi_register_pml(bool (*pml_counts)(int id));

#ifdef __cplusplus
}
#endif

#endif
