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

/* In 64-bit mode rdtsc clears the upper halves of rax and rdx, so taking
 * them whole spares a zero extension per reading. */
static inline __attribute__((always_inline)) uint64_t spc_rdtsc_(void)
{
#if defined(__x86_64__)
    uint64_t low, high;
#else
    uint32_t low, high;
#endif
    __asm__ __volatile__("rdtsc" : "=a"(low), "=d"(high));
    return ((uint64_t)high << 32) | low;
}

#if SPC_SITES_PATCHED

/* The site: a 5-byte jmp to the update code's flag test (flag kind), which
 * sites.cc patches into a 5-byte no-op while the site is off and into a jmp
 * past the test while it is on: to `on`, or for a hook whose every counter
 * is on and no switch, to `all` (its code made for that case, spc.h's
 * SPC_HOOK) or, with timers sampled, `sampled`, and for a hook around a
 * statement with no switch on but not every counter, to `counters`, and
 * for a hook at a function's entry with sampled timers alone on, to
 * `timers`; a patched site that jumps is on, so its code need not test the
 * flag again.  No alignment: as the kernel's jump labels, a site may
 * straddle a cache line, since the int3 protocol (sites.cc) never lets a
 * thread run the bytes of a patch while they change.  Its entry in the
 * spc_sites section: the site and its six targets relative to the entry,
 * then its ids, then 0: off, a no-op (struct spc_site). */
#define SPC_SITE_TEXT_(test, on, counters, all, sampled, timers)                     \
    "1: .byte 0xe9\n .long %l[" #test "] - 2f\n2:\n"                                   \
    ".pushsection spc_sites,\"a\"\n .balign 4\n"                                        \
    " .long 1b - ., %l[" #test "] - ., %l[" #on "] - ., %l[" #counters "] - .,"          \
    " %l[" #all "] - ., %l[" #sampled "] - ., %l[" #timers "] - ., %c0, %c1, 0\n .popsection"
#define SPC_SITE_(id, id2, test, on) \
    __asm__ goto(SPC_SITE_TEXT_(test, on, on, on, on, on) : : "i"(id), "i"(id2) : : test, on)
/* A hook around a statement: a copy of its code for each case; its copy
 * for counters alone serves for sampled timers alone too. */
#define SPC_HOOK_SITE_(id, test, on, counters, all, sampled)                         \
    __asm__ goto(SPC_SITE_TEXT_(test, on, counters, all, sampled, counters)          \
                 : : "i"(id), "i"(id) : : test, on, counters, all, sampled)
/* A hook at a point: its copy with tests serves for counters alone, and
 * its copy for all counters for sampled timers too. */
#define SPC_HOOK_SITE_POINT_(id, test, on, all) \
    __asm__ goto(SPC_SITE_TEXT_(test, on, on, all, all, on) : : "i"(id), "i"(id) : : test, on, all)

/* A site at a function's entry (spc.h's SPC_HOOK_ENTRY): the jump, in the
 * naked function's basic asm, and its entry in the spc_sites section,
 * from a function with operands (the hook's id); the targets are the
 * prefix_* functions, which the entry names, so they must keep their
 * names (static, used). */
#define SPC_HOOK_ENTRY_SITE_TEXT_(prefix) \
    ".Lspc_entry_" #prefix ":\n .byte 0xe9\n .long " #prefix "_flag - 1f\n1:\n"
#define SPC_HOOK_ENTRY_RECORD_TEXT_(prefix)                                                    \
    ".pushsection spc_sites,\"a\"\n .balign 4\n"                                              \
    " .long .Lspc_entry_" #prefix " - ., " #prefix "_flag - ., " #prefix "_tests - .,"          \
    " " #prefix "_counters - ., " #prefix "_all - ., " #prefix "_sampled - .,"                   \
    " " #prefix "_timers - ., %c0, %c0, " #prefix "_plain - .\n .popsection"

#endif

#endif
