/* entry_probe.c's hook: its id, its counters and the marks of its copies. */
#ifndef ENTRY_PROBE_H
#define ENTRY_PROBE_H

#include "spc/spc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The probe is a timed call too (SPC_CALL_TIME's code): its timer and its
 * family's, and what each run takes on the probe's synthetic clock. */
enum {
    ENTRY_PROBE_HOOK = 14,
    ENTRY_PROBE_FIRST = OMPI_SPC_IBSEND,
    ENTRY_PROBE_SECOND = OMPI_SPC_IRSEND,
    ENTRY_PROBE_TIMER = OMPI_SPC_WIN_FLUSH_TIME,
    ENTRY_PROBE_FAMILY = OMPI_SPC_ONE_SIDED_TIME,
    ENTRY_PROBE_TICKS = 7
};
#define ENTRY_PROBE_MARK(mode) (1000 * (1 + (int)(mode)))

int entry_probe(int x);

#ifdef __cplusplus
}
#endif

#endif
