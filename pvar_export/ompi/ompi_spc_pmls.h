/*
 * Which counters the job's PML counts (ompi_spc_pmls.def), for the driver
 * and the finalize report; kept out of ompi_spc.h, which every MPI binding
 * includes.
 */
#ifndef OMPI_SPC_PMLS_H
#define OMPI_SPC_PMLS_H

#include <stdbool.h>

/* Whether the job's PML counts counter id: true for a counter of the MPI
 * layer, and for every counter before a PML is selected. */
bool ompi_spc_pml_counts(int id);
/* The job's PML ("" before one is selected). */
const char *ompi_spc_pml(void);

#endif
