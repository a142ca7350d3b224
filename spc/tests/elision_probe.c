/* Compiled twice: with SPC_ENABLE 0 (the macros must vanish, arguments
 * unevaluated, no SPC symbol referenced) and with SPC_ENABLE 1 (the control:
 * with the counters on, every argument is evaluated exactly once).  PROBE
 * names the function.  Counter ids are constants, as the macros require. */
#include "spc/spc.h"

static int evaluations;

/* An argument with a side effect: it counts its own evaluation. */
__attribute__((unused)) static int seen(int value)
{
    ++evaluations;
    return value;
}

int PROBE(void)
{
    spc_timer_t timer = {0, 0};
    (void)timer;
    evaluations = 0;
    SPC_RECORD(OMPI_SPC_SEND, seen(1));
    SPC_USER_OR_MPI(seen(0), seen(64), OMPI_SPC_BYTES_SENT_USER, OMPI_SPC_BYTES_SENT_MPI);
    SPC_TIMER_START(OMPI_SPC_MATCH_TIME, &timer);
    SPC_TIMER_STOP(&timer);
    SPC_LEVEL_ADD(OMPI_SPC_OOS_IN_QUEUE, seen(1));
    SPC_LEVEL_ADD(OMPI_SPC_OOS_IN_QUEUE, -1);
    return evaluations;
}

#define NAME_(probe, suffix) probe##suffix
#define NAME(probe, suffix) NAME_(probe, suffix)

/* A hook around a statement: compiled out, the statement alone stays (5);
 * compiled in, the hook's code runs instead while hook 5 is on (6). */
int NAME(PROBE, _around)(void)
{
    int ran;
    SPC_HOOK_AROUND(5, ran = 6, ran = 5);
    return ran;
}
