/*
 * ompi-spc's replacement for Open MPI 4.1.4's ompi/runtime/ompi_spc.h: the
 * names Open MPI's call sites and MPI_Init/Finalize use, on top of the SPC
 * core's spc/spc.h (catalogue and update macros).
 */
#ifndef OMPI_SPC
#define OMPI_SPC

#include "ompi_config.h"

/* Upstream's header pulled these in; call sites may rely on them. */
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/runtime/params.h"

#include "spc/spc.h"

typedef spc_counter_id ompi_spc_counters_t;
typedef uint64_t ompi_spc_value_t;

/* Registers every counter as an MPI_T performance variable and applies
 * mpi_spc_attach (MPI_Init).  ompi_spc_fini writes the mpi_spc_dump_enabled
 * report and retires the variables (MPI_Finalize). */
void ompi_spc_init(void);
void ompi_spc_fini(void);
/* The mpi_spc_dump_enabled table and mpi_spc_dump_file CSV (ompi_spc_report.c). */
void ompi_spc_report(void);

#if SPC_ENABLE == 1
#define SPC_INIT() ompi_spc_init()
#define SPC_FINI() ompi_spc_fini()
#else
#define SPC_INIT() ((void)0)
#define SPC_FINI() ((void)0)
#endif

#endif
