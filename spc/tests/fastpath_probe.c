/* Update sites as they land in another shared library (as in libmpi), for
 * check_fast_path.py to disassemble.  probe_control calls a function on
 * purpose: it shows the checker can see a call. */
#include "spc/spc.h"

void probe_record(uint64_t n) { SPC_RECORD(OMPI_SPC_SEND, n); }

void probe_user_or_mpi(int tag, uint64_t n)
{
    SPC_USER_OR_MPI(tag, n, OMPI_SPC_BYTES_SENT_USER, OMPI_SPC_BYTES_SENT_MPI);
}

void probe_timer(void)
{
    spc_timer_t timer;
    SPC_TIMER_START(OMPI_SPC_MATCH_TIME, &timer);
    SPC_TIMER_STOP(&timer);
}

/* A hook's code: one block for two consumers, each tested but where both
 * are on. */
void probe_hook(uint64_t n)
{
    SPC_HOOK(3, {
        spc_hook_record_(SPC_HOOK_MODE, NULL, OMPI_SPC_SEND, n);
        spc_hook_record_(SPC_HOOK_MODE, NULL, OMPI_SPC_RECV, n);
    });
}

void probe_level(int64_t delta) { SPC_LEVEL_ADD(OMPI_SPC_UNEXPECTED_IN_QUEUE, delta); }

void probe_atomic_mode(uint64_t n)
{
    if (spc_enabled_(OMPI_SPC_SEND)) {
        spc_atomic_add_(OMPI_SPC_SEND, n);
    }
}

uint64_t probe_control(void) { return spc_read(OMPI_SPC_SEND); }
