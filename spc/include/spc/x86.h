/*
 * The x86 instructions of the fast path, kept apart from the contract in
 * spc.h, which includes this file on x86 only: the cycle counter the timers
 * read, and the 5-byte update site that sites.cc patches between a jump and
 * a no-op (x86-64, SPC_SITES_PATCHED).
 */
#ifndef SPC_X86_H
#define SPC_X86_H

#include <stdint.h>

#include "spc/spc_config.h"

static inline uint64_t spc_rdtsc_(void)
{
    uint32_t low, high;
    __asm__ __volatile__("rdtsc" : "=a"(low), "=d"(high));
    return ((uint64_t)high << 32) | low;
}

#if SPC_SITES_PATCHED

/* The site: a 5-byte jmp to the update code (flag kind), which sites.cc
 * patches into a 5-byte no-op while the counters are off.  ".p2align 6,,4"
 * pads only a site that would straddle a cache line, so that no patch ever
 * spans two lines.  Its entry in the spc_sites section: the site and its
 * target relative to the entry, then the counters (struct spc_site). */
#define SPC_SITE_(id, id2, on)                                                              \
    __asm__ goto(".p2align 6,,4\n"                                                          \
                 "1: .byte 0xe9\n .long %l[" #on "] - 2f\n2:\n"                            \
                 ".pushsection spc_sites,\"a\"\n .balign 4\n"                               \
                 " .long 1b - ., %l[" #on "] - ., %c0, %c1\n .popsection"                  \
                 : : "i"(id), "i"(id2) : : on)

#endif

#endif
