/* Preloaded into PAPI's own tools by check_papi_tools.py: puts a known value
 * into a counter of a process that never runs MPI, so that the tool's read
 * can be checked against it.  The counter is one that waits for a PML
 * (ob1's queue level), so the fixture also registers those, as MPI_Init does
 * under a PML that counts everything. */
#include "spc/spc.h"
#include "spc_papi.h"

__attribute__((constructor)) static void queue_three_messages(void)
{
    SPC_LEVEL_ADD(OMPI_SPC_UNEXPECTED_IN_QUEUE, 3);
    spc_papi_register_pml(NULL);
}
