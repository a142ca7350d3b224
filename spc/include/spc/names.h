/* The names a counter goes by outside C, written once: its catalogue name,
 * its MPI_T performance variable and its PAPI event; and ob1's MPI_T events.  Standalone (no other
 * include), so that programs built against any Open MPI can use it. */
#ifndef SPC_NAMES_H
#define SPC_NAMES_H

/* A counter's name: OMPI_SPC_SEND, as upstream Open MPI spells it. */
#define SPC_COUNTER_PREFIX "OMPI_SPC_"
/* Its MPI_T performance variable: runtime_spc_OMPI_SPC_SEND. */
#define SPC_PVAR_PREFIX "runtime_spc_"
/* Its MPI_T variable bound to a communicator, for the counters also kept per
 * communicator: runtime_spc_comm_OMPI_SPC_SEND. */
#define SPC_COMM_PVAR_PREFIX "runtime_spc_comm_"
/* Its MPI_T variable bound to a window, for the one-sided arrays:
 * runtime_spc_win_OMPI_SPC_PEER_ONE_SIDED_BYTES_SENT. */
#define SPC_WIN_PVAR_PREFIX "runtime_spc_win_"
/* A process-wide message-size histogram's MPI_T variable:
 * runtime_spc_histogram_OMPI_SPC_MESSAGE_SIZES_SENT. */
#define SPC_HISTOGRAM_PVAR_PREFIX "runtime_spc_histogram_"
/* Its PAPI software-defined event: sde:::ompi_spc::OMPI_SPC_SEND. */
#define SPC_PAPI_LIBRARY "ompi_spc"
#define SPC_PAPI_EVENT_PREFIX "sde:::" SPC_PAPI_LIBRARY "::"
/* ob1's MPI_T events: ompi_pml_ob1_unexpected_insert. */
#define SPC_EVENT_PREFIX "ompi_pml_ob1_"

#endif
