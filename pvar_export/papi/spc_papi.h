/*
 * The PAPI export of the SPC counters (libspc_papi).
 */
#ifndef SPC_PAPI_H
#define SPC_PAPI_H

#ifdef __cplusplus
extern "C" {
#endif

/* Registers every catalogue counter with libsde as
 * sde:::ompi_spc::OMPI_SPC_<NAME>; registering again changes nothing.  It
 * runs when the library is loaded, so the events exist before MPI_Init;
 * MPI_Init calls it too, and that call is what keeps libmpi linked to this
 * library under --as-needed, which drops libraries nobody calls. */
void spc_papi_register(void);

#ifdef __cplusplus
}
#endif

#endif
