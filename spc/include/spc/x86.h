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

/* The site: a 5-byte jmp to the update code's flag test (flag kind), which
 * sites.cc patches into a 5-byte no-op while the site is off and into a jmp
 * past the test (to `on`) while it is on: a patched site that jumps is on,
 * so its code need not test the flag again.  ".p2align 6,,4" pads only a
 * site that would straddle a cache line, so that no patch ever spans two
 * lines.  Its entry in the spc_sites section: the site and its two targets
 * relative to the entry, then its ids (struct spc_site). */
#define SPC_SITE_(id, id2, test, on)                                                        \
    __asm__ goto(".p2align 6,,4\n"                                                          \
                 "1: .byte 0xe9\n .long %l[" #test "] - 2f\n2:\n"                          \
                 ".pushsection spc_sites,\"a\"\n .balign 4\n"                               \
                 " .long 1b - ., %l[" #test "] - ., %l[" #on "] - ., %c0, %c1\n .popsection" \
                 : : "i"(id), "i"(id2) : : test, on)

#endif

#endif
