/* Preloaded into PAPI's own tools by check_papi_tools.py: puts a known value
 * into a counter of a process that never runs MPI, so that the tool's read
 * can be checked against it. */
#include "spc/spc.h"

__attribute__((constructor)) static void queue_three_messages(void)
{
    SPC_LEVEL_ADD(OMPI_SPC_UNEXPECTED_IN_QUEUE, 3);
}
