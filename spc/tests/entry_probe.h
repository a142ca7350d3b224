/* entry_probe.c's hook: its id, its counters and the marks of its copies. */
#ifndef ENTRY_PROBE_H
#define ENTRY_PROBE_H

#include "spc/spc.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ENTRY_PROBE_HOOK = 14, ENTRY_PROBE_FIRST = OMPI_SPC_IBSEND, ENTRY_PROBE_SECOND = OMPI_SPC_IRSEND };
#define ENTRY_PROBE_MARK(mode) (1000 * (1 + (int)(mode)))

int entry_probe(int x);

#ifdef __cplusplus
}
#endif

#endif
