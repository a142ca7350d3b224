/* A hook at a function's entry (spc.h's SPC_HOOK_ENTRY) for sites_test.cc,
 * in C: the targets are named in assembly, which C++ would mangle.
 * entry_probe(x) is 3x from its plain code, and 3x plus its mode's mark
 * (entry_probe.h) from a copy of the hook's code, which counts the run on
 * each of the hook's counters that is on and times it as the timed MPI
 * functions do (ompi_spc_hooks.h): a run takes ENTRY_PROBE_TICKS on a
 * synthetic clock, so a timed run adds exactly that.  Where sites are
 * compiled as flag tests the same hook sits around the work in the
 * function's body. */
#include <stdint.h>

static uint64_t probe_clock = 1;
#define SPC_TIMER_CLOCK_() probe_clock

#include "entry_probe.h"

#include "spc/spc.h"

static inline __attribute__((always_inline)) int entry_work(int x)
{
    probe_clock += ENTRY_PROBE_TICKS;
    return 3 * x;
}

#if SPC_ENABLE
static inline __attribute__((always_inline)) int entry_hook_code(spc_hook_mode mode, int x)
{
    uint64_t *block = spc_hook_block_start_(mode);
    spc_hook_record_(mode, &block, ENTRY_PROBE_FIRST, 1);
    spc_hook_record_(mode, &block, ENTRY_PROBE_SECOND, 1);
    if (!spc_call_enter_(mode, &block, ENTRY_PROBE_TIMER, ENTRY_PROBE_FAMILY)) {
        const int result = entry_work(x);
        spc_call_leave_untimed_();
        return result + ENTRY_PROBE_MARK(mode);
    }
    const uint64_t start = SPC_TIMER_CLOCK_();
    const int result = entry_work(x);
    spc_call_leave_timed_(mode, &block, start, ENTRY_PROBE_TIMER, ENTRY_PROBE_FAMILY);
    return result + ENTRY_PROBE_MARK(mode);
}
#endif

#ifdef SPC_HOOK_ENTRY
#define ENTRY_COPY_(suffix, mode, ...) \
    static __attribute__((noinline, used)) int entry_probe_##suffix(int x) { return entry_hook_code(mode, x); }
SPC_HOOK_ENTRY_COPIES(ENTRY_COPY_, )
static __attribute__((noinline, used)) int entry_probe_plain(int x) { return entry_work(x); }
SPC_HOOK_ENTRY_TEST(ENTRY_PROBE_HOOK, entry_probe, int, (int x), (x))

SPC_HOOK_ENTRY_FUNCTION int entry_probe(int x);
int entry_probe(__attribute__((unused)) int x) /* the targets take it */
{
    SPC_HOOK_ENTRY_SITE(entry_probe);
}
#else
int entry_probe(int x)
{
    int result;
    SPC_HOOK_AROUND(ENTRY_PROBE_HOOK, result = entry_hook_code(SPC_HOOK_MODE, x), result = entry_work(x));
    return result;
}
#endif
