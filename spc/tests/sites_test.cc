// Patched sites under fire: sites of two counters side by side run in 4
// threads while a fifth turns one of them on and off 100,000 times.  Run
// twice by meson: patched, and with SPC_SITES=flag (sites never change).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "entry_probe.h"
#include "spc/spc.h"

namespace {

constexpr int kA = OMPI_SPC_SEND, kB = OMPI_SPC_RECV;

// The only sites of this program: A's, then B's right behind it, across a
// cache line (bytes 62 to 66 of one: the jump skips the padding), since
// sites are not aligned.
__attribute__((noinline)) uint64_t run_sites(const std::atomic<bool> &stop)
{
    uint64_t rounds = 0;
    while (!stop.load(std::memory_order_relaxed)) {
        __asm__ volatile(".p2align 6\n jmp 1f\n .skip 55, 0xcc\n1:");
        SPC_RECORD(kA, 1);
        SPC_RECORD(kB, 1);
        ++rounds;
    }
    return rounds;
}

#if SPC_SITES_PATCHED
// A site's 5 bytes, read in assembly (ThreadSanitizer has no shadow for code).
std::array<unsigned char, 5> bytes_at(const unsigned char *at)
{
    std::array<unsigned char, 5> bytes;
    for (size_t i = 0; i < bytes.size(); ++i) {
        __asm__ volatile("movb %1, %0" : "=q"(bytes[i]) : "m"(at[i]));
    }
    return bytes;
}

const unsigned char *site_of(int id)
{
    for (const spc_site *site = __start_spc_sites; site < __stop_spc_sites; ++site) {
        if (site->id == id) {
            return reinterpret_cast<const unsigned char *>(&site->at) + site->at;
        }
    }
    return nullptr;
}
#endif

constexpr int kKey = SPC_SWITCH_COMM_COUNTERS;
std::atomic<int> switched_runs{0};

// The program's one switched site.
__attribute__((noinline)) void run_switched_site() { SPC_SWITCHED(kKey, switched_runs.fetch_add(1)); }

bool patched() { return spc_sites_kind() == SPC_SITES_KIND_PATCHED; }

// A hook of two consumers, a counter and a switch, that counts its runs (and
// those of its code for all counters on) and, as a hook's code does, adds
// to the counter only while it is on.
constexpr int kHook = 7, kHookCounter = OMPI_SPC_ISEND, kHookKey = SPC_SWITCH_FIRST_EVENT + 5;
std::atomic<int> hook_runs{0}, hook_runs_all_counters{0};

__attribute__((noinline)) void run_hook_site()
{
    SPC_HOOK(kHook, {
        hook_runs.fetch_add(1);
        if (SPC_HOOK_MODE == SPC_HOOK_ALL_COUNTERS) {
            hook_runs_all_counters.fetch_add(1);
        }
        spc_hook_record_(SPC_HOOK_MODE, NULL, kHookCounter, 1);
    });
}

int define_hook()
{
    const int consumers[] = {kHookCounter, SPC_SWITCH_SITE_ID(kHookKey)};
    return spc_hook_define(kHook, consumers, 2);
}

// A counter's site and the hook's, for the hook's stress test (not A's:
// A's and B's sites must be the program's only ones, neighbours).
constexpr int kC = OMPI_SPC_BCAST;
__attribute__((noinline)) uint64_t run_counter_and_hook(const std::atomic<bool> &stop)
{
    uint64_t rounds = 0;
    while (!stop.load(std::memory_order_relaxed)) {
        SPC_RECORD(kC, 1);
        run_hook_site();
        ++rounds;
    }
    return rounds;
}

#if SPC_SITES_PATCHED
// Where the jump of a site that holds one leads, or nullptr.
const unsigned char *jump_target(const unsigned char *at)
{
    const std::array<unsigned char, 5> code = bytes_at(at);
    int32_t displacement;
    std::memcpy(&displacement, &code[1], sizeof displacement);
    return code[0] == 0xe9 ? at + 5 + displacement : nullptr;
}

const spc_site *entry_of(int id)
{
    for (const spc_site *site = __start_spc_sites; site < __stop_spc_sites; ++site) {
        if (site->id == id) {
            return site;
        }
    }
    return nullptr;
}

const unsigned char *target(const int32_t *field)
{
    return reinterpret_cast<const unsigned char *>(field) + *field;
}
#endif

TEST(Sites, OffSiteIsANoOpAndOnSiteAJump)
{
#if SPC_SITES_PATCHED
    const unsigned char *a = site_of(kA), *b = site_of(kB);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b - a, 5) << "the two sites must be neighbours for the stress test to mean anything";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) & 63, 62u) << "B's site must straddle a cache line";
    const std::array<unsigned char, 5> nop5 = {0x0f, 0x1f, 0x44, 0x00, 0x00};
    const bool nop_when_off = bytes_at(b) == nop5;
    spc_counter_enable(kB);
    const std::array<unsigned char, 5> on = bytes_at(b);
    int32_t displacement;
    std::memcpy(&displacement, &on[1], sizeof displacement);
    const bool jump_when_on = on[0] == 0xe9 && displacement > 0;  // forward, to the update code
    spc_counter_disable(kB);
    const bool nop_again = bytes_at(b) == nop5;
    if (patched()) {
        EXPECT_TRUE(nop_when_off && jump_when_on && nop_again);
    } else {  // the flag kind: compiled jumps, never rewritten
        EXPECT_FALSE(nop_when_off || nop_again);
        EXPECT_TRUE(jump_when_on);
    }
#else
    GTEST_FAIL() << "built with -Dsites=flag: run this test in a patched build";
#endif
}

// A switched site runs its code exactly while its switch is on, as counted
// ons and offs say, and is a no-op in the patched kind while off.
TEST(Sites, SwitchedSiteRunsItsCodeOnlyWhileOn)
{
    run_switched_site();
    EXPECT_EQ(switched_runs.load(), 0);
    ASSERT_EQ(spc_switch_on(kKey), SPC_SUCCESS);
    ASSERT_EQ(spc_switch_on(kKey), SPC_SUCCESS);
    run_switched_site();
    ASSERT_EQ(spc_switch_off(kKey), SPC_SUCCESS);
    run_switched_site();  // one on is left
    EXPECT_TRUE(spc_switch_is_on(kKey));
#if SPC_SITES_PATCHED
    const unsigned char *site = site_of(SPC_SWITCH_SITE_ID(kKey));
    ASSERT_NE(site, nullptr);
    EXPECT_EQ(bytes_at(site)[0], 0xe9) << "on: a jump";
#endif
    ASSERT_EQ(spc_switch_off(kKey), SPC_SUCCESS);
    run_switched_site();
    EXPECT_EQ(switched_runs.load(), 2);
    EXPECT_FALSE(spc_switch_is_on(kKey));
#if SPC_SITES_PATCHED
    const std::array<unsigned char, 5> nop5 = {0x0f, 0x1f, 0x44, 0x00, 0x00};
    EXPECT_EQ(bytes_at(site) == nop5, patched()) << "off: a no-op in the patched kind only";
#endif
    EXPECT_EQ(spc_switch_off(kKey), SPC_ERR_NOT_ENABLED);
    EXPECT_EQ(spc_switch_on(SPC_NUM_SWITCHES), SPC_ERR_BAD_ID);
    EXPECT_EQ(spc_switch_on(-1), SPC_ERR_BAD_ID);
    EXPECT_FALSE(spc_switch_is_on(SPC_NUM_SWITCHES));
}

// A hook's one site is on while any of its consumers is (counted ons and
// offs), its code runs exactly then, and a patched site jumps past the flag
// test its code starts with in the flag kind.
TEST(Sites, HookSiteIsOnWhileAnyConsumerIs)
{
    run_hook_site();
    EXPECT_EQ(hook_runs.load(), 0) << "a hook without consumers is off";
    ASSERT_EQ(define_hook(), SPC_SUCCESS);
    run_hook_site();
    EXPECT_EQ(hook_runs.load(), 0);
    EXPECT_FALSE(spc_hook_is_on(kHook));
#if SPC_SITES_PATCHED
    const spc_site *entry = entry_of(SPC_HOOK_SITE_ID(kHook));
    ASSERT_NE(entry, nullptr);
    const unsigned char *site = target(&entry->at);
    const std::array<unsigned char, 5> nop5 = {0x0f, 0x1f, 0x44, 0x00, 0x00};
    EXPECT_EQ(bytes_at(site) == nop5, patched()) << "off: a no-op in the patched kind only";
    EXPECT_NE(target(&entry->target), target(&entry->on)) << "the flag test and the code past it";
    EXPECT_NE(target(&entry->on), target(&entry->all)) << "the code with tests and for all counters";
    EXPECT_EQ(target(&entry->all), target(&entry->all_sampled))
        << "a hook at a point times nothing: no copy for sampled timers";
    EXPECT_EQ(target(&entry->on), target(&entry->counters)) << "nor one for its counters alone";
    EXPECT_EQ(target(&entry->on), target(&entry->timers_sampled)) << "nor for its timers alone";
#endif
    const uint64_t counted = spc_read(kHookCounter);
    ASSERT_EQ(spc_counter_enable(kHookCounter), SPC_SUCCESS);
    EXPECT_TRUE(spc_hook_is_on(kHook));
    EXPECT_TRUE(spc_hook_all_counters(kHook)) << "its one counter is on, its switch off";
#if SPC_SITES_PATCHED
    EXPECT_EQ(jump_target(site), patched() ? target(&entry->all) : target(&entry->target))
        << "patched: to the code for all counters; flag kind: to the flag test";
#endif
    run_hook_site();                          // counter on
    EXPECT_EQ(hook_runs_all_counters.load(), patched() ? 1 : 0) << "the flag kind runs the code with tests";
    EXPECT_FALSE(SPC_HOOK_SWITCHES_ON(SPC_HOOK_TESTS, kHook)) << "only a counter is on";
    ASSERT_EQ(spc_switch_on(kHookKey), SPC_SUCCESS);
    EXPECT_TRUE(SPC_HOOK_SWITCHES_ON(SPC_HOOK_TESTS, kHook));
    EXPECT_FALSE(spc_hook_all_counters(kHook)) << "a switch is on";
#if SPC_SITES_PATCHED
    EXPECT_EQ(jump_target(site), patched() ? target(&entry->on) : target(&entry->target))
        << "patched: past the flag test, to the code with tests; flag kind: to the flag test";
#endif
    run_hook_site();                          // both on
    ASSERT_EQ(spc_counter_disable(kHookCounter), SPC_SUCCESS);
    run_hook_site();                          // switch on, counter off
    EXPECT_TRUE(spc_hook_is_on(kHook));
    EXPECT_TRUE(SPC_HOOK_SWITCHES_ON(SPC_HOOK_TESTS, kHook));
    EXPECT_FALSE(SPC_HOOK_SWITCHES_ON(SPC_HOOK_ALL_COUNTERS, kHook)) << "that mode has no switch on";
    ASSERT_EQ(spc_switch_off(kHookKey), SPC_SUCCESS);
    EXPECT_FALSE(spc_hook_is_on(kHook));
    EXPECT_FALSE(SPC_HOOK_SWITCHES_ON(SPC_HOOK_TESTS, kHook));
    EXPECT_FALSE(spc_hook_all_counters(kHook));
    run_hook_site();                          // both off
    EXPECT_EQ(hook_runs.load(), 3);
    EXPECT_EQ(hook_runs_all_counters.load(), patched() ? 1 : 0);
    EXPECT_EQ(spc_read(kHookCounter) - counted, 2u) << "the code adds only while the counter is on";
#if SPC_SITES_PATCHED
    EXPECT_EQ(bytes_at(site) == nop5, patched());
#endif
    // Defined while a consumer is on: on at once; no consumers: off.
    ASSERT_EQ(spc_switch_on(kHookKey), SPC_SUCCESS);
    ASSERT_EQ(spc_hook_define(kHook, nullptr, 0), SPC_SUCCESS);
    EXPECT_FALSE(spc_hook_is_on(kHook));
    ASSERT_EQ(define_hook(), SPC_SUCCESS);
    EXPECT_TRUE(spc_hook_is_on(kHook));
    run_hook_site();
    EXPECT_EQ(hook_runs.load(), 4);
    ASSERT_EQ(spc_switch_off(kHookKey), SPC_SUCCESS);
    EXPECT_FALSE(spc_hook_is_on(kHook));
}

// A hook around a call, as ob1's match search has: of a counter and a
// switch, its code does the call's work too and marks which copy ran.
constexpr int kAround = 9, kAroundCounter = OMPI_SPC_IRECV, kAroundKey = SPC_SWITCH_FIRST_EVENT + 6;
constexpr int kTestsMark = 1000, kAllCountersMark = 2000;
std::atomic<int> around_calls{0};

__attribute__((noinline)) int around_call(int x)
{
    around_calls.fetch_add(1);
    return 3 * x;
}

__attribute__((noinline)) int run_around_site(int x)
{
    int result;
    SPC_HOOK_AROUND(kAround, {
        result = around_call(x) + (SPC_HOOK_MODE == SPC_HOOK_ALL_COUNTERS ? kAllCountersMark : kTestsMark);
        spc_hook_record_(SPC_HOOK_MODE, NULL, kAroundCounter, 1);
    }, result = around_call(x));
    return result;
}

// The call runs once either way; the hook's code instead of the plain call
// exactly while a consumer is on, in the copy its consumers say.
TEST(Sites, HookAroundRunsItsCodeInsteadWhileOn)
{
    EXPECT_EQ(run_around_site(5), 15) << "a hook without consumers runs the plain call";
    const int consumers[] = {kAroundCounter, SPC_SWITCH_SITE_ID(kAroundKey)};
    ASSERT_EQ(spc_hook_define(kAround, consumers, 2), SPC_SUCCESS);
    EXPECT_EQ(run_around_site(5), 15);
#if SPC_SITES_PATCHED
    const spc_site *entry = entry_of(SPC_HOOK_SITE_ID(kAround));
    ASSERT_NE(entry, nullptr);
    const unsigned char *site = target(&entry->at);
    const std::array<unsigned char, 5> nop5 = {0x0f, 0x1f, 0x44, 0x00, 0x00};
    EXPECT_EQ(bytes_at(site) == nop5, patched());
    EXPECT_NE(target(&entry->all), target(&entry->all_sampled)) << "a hook around a call can time it";
    EXPECT_EQ(target(&entry->counters), target(&entry->timers_sampled))
        << "its copy for counters alone serves for sampled timers alone";
#endif
    const uint64_t counted = spc_read(kAroundCounter);
    ASSERT_EQ(spc_counter_enable(kAroundCounter), SPC_SUCCESS);
#if SPC_SITES_PATCHED
    EXPECT_EQ(jump_target(site), patched() ? target(&entry->all) : target(&entry->target));
#endif
    EXPECT_EQ(run_around_site(6), 18 + (patched() ? kAllCountersMark : kTestsMark))
        << "counter on, switch off: the copy for all counters where sites are patched";
    ASSERT_EQ(spc_switch_on(kAroundKey), SPC_SUCCESS);
    EXPECT_EQ(run_around_site(7), 21 + kTestsMark) << "a switch on: the copy with tests";
    ASSERT_EQ(spc_counter_disable(kAroundCounter), SPC_SUCCESS);
    EXPECT_EQ(run_around_site(8), 24 + kTestsMark) << "only the switch on";
    ASSERT_EQ(spc_switch_off(kAroundKey), SPC_SUCCESS);
    EXPECT_EQ(run_around_site(9), 27) << "both off: the plain call again";
#if SPC_SITES_PATCHED
    EXPECT_EQ(bytes_at(site) == nop5, patched());
#endif
    EXPECT_EQ(around_calls.load(), 6) << "one call a run";
    EXPECT_EQ(spc_read(kAroundCounter) - counted, 2u) << "added while its counter was on";
    ASSERT_EQ(spc_hook_define(kAround, nullptr, 0), SPC_SUCCESS);
}

// A hook's code that adds on both sides of a call, as ob1's eager match
// does, keeps the thread's block in a local: it is the thread's own (made by
// the thread's first add, in a thread that has none), in either copy.
constexpr int kAcross = 10, kBefore = OMPI_SPC_BSEND, kAfter = OMPI_SPC_RSEND;

__attribute__((noinline)) int across_call(int x) { return x + 1; }

struct AcrossRun {
    int result;
    const uint64_t *start;     // the hook code's block local before its adds
    const uint64_t *block;     // and after them
    const uint64_t *thread;    // the thread's block after the run
};

__attribute__((noinline)) AcrossRun run_across_site(int x)
{
    AcrossRun run = {0, nullptr, nullptr, nullptr};
    SPC_HOOK_AROUND(kAcross, {
        uint64_t *block = spc_hook_block_start_(SPC_HOOK_MODE);
        run.start = block;
        spc_hook_record_(SPC_HOOK_MODE, &block, kBefore, 1);
        run.result = across_call(x);
        spc_hook_record_(SPC_HOOK_MODE, &block, kAfter, 2);
        run.block = block;
    }, run.result = across_call(x));
    run.thread = spc_thread_shard;
    return run;
}

AcrossRun run_across_site_in_new_thread(int x)
{
    AcrossRun run;
    std::thread([&] { run = run_across_site(x); }).join();
    return run;
}

// A hook around a call with two counters and a switch: with no switch on
// but not both counters, a patched site runs the copy that tests the
// counters alone.
constexpr int kTwo = 12, kFirst = OMPI_SPC_SSEND, kSecond = OMPI_SPC_ISSEND,
              kTwoKey = SPC_SWITCH_FIRST_EVENT + 7;

__attribute__((noinline)) spc_hook_mode run_two_counter_site()
{
    spc_hook_mode ran = SPC_HOOK_TESTS;
    SPC_HOOK_AROUND(kTwo, {
        ran = SPC_HOOK_MODE;
        spc_hook_record_(SPC_HOOK_MODE, NULL, kFirst, 1);
        (void)across_call(0);
        spc_hook_record_(SPC_HOOK_MODE, NULL, kSecond, 1);
    }, (void)across_call(0));
    return ran;
}

TEST(Sites, HookAroundTakesItsCopyForCountersWhileNoSwitchIsOn)
{
    const int consumers[] = {kFirst, kSecond, SPC_SWITCH_SITE_ID(kTwoKey)};
    ASSERT_EQ(spc_hook_define(kTwo, consumers, 3), SPC_SUCCESS);
#if SPC_SITES_PATCHED
    const spc_site *entry = entry_of(SPC_HOOK_SITE_ID(kTwo));
    ASSERT_NE(entry, nullptr);
    EXPECT_NE(target(&entry->counters), target(&entry->on)) << "a hook around a call has that copy";
    EXPECT_NE(target(&entry->counters), target(&entry->all));
#endif
    const spc_hook_mode counters = patched() ? SPC_HOOK_COUNTERS : SPC_HOOK_TESTS,
                        all = patched() ? SPC_HOOK_ALL_COUNTERS : SPC_HOOK_TESTS;
    const uint64_t first = spc_read(kFirst), second = spc_read(kSecond);

    ASSERT_EQ(spc_counter_enable(kFirst), SPC_SUCCESS);
    EXPECT_FALSE(spc_hook_switches_on(kTwo));
    EXPECT_EQ(run_two_counter_site(), counters) << "one counter of two, no switch";
    ASSERT_EQ(spc_counter_enable(kSecond), SPC_SUCCESS);
    EXPECT_EQ(run_two_counter_site(), all) << "both counters";
    ASSERT_EQ(spc_switch_on(kTwoKey), SPC_SUCCESS);
    EXPECT_TRUE(spc_hook_switches_on(kTwo));
    EXPECT_EQ(run_two_counter_site(), SPC_HOOK_TESTS) << "a switch on";
    ASSERT_EQ(spc_counter_disable(kSecond), SPC_SUCCESS);
    EXPECT_EQ(run_two_counter_site(), SPC_HOOK_TESTS) << "a switch and one counter on";
    ASSERT_EQ(spc_switch_off(kTwoKey), SPC_SUCCESS);
    EXPECT_EQ(run_two_counter_site(), counters) << "the switch off again: the site follows";
    ASSERT_EQ(spc_counter_disable(kFirst), SPC_SUCCESS);
    EXPECT_EQ(run_two_counter_site(), SPC_HOOK_TESTS) << "all off: the plain call";

    EXPECT_EQ(spc_read(kFirst) - first, 5u) << "added in each of the five runs while on";
    EXPECT_EQ(spc_read(kSecond) - second, 2u) << "added in the two runs while on";
    ASSERT_EQ(spc_hook_define(kTwo, nullptr, 0), SPC_SUCCESS);
}

// A hook at a function's entry (entry_probe.c), as the timed MPI functions
// have, with their consumers: two counters, the call's timer, its family's,
// MPI_TIME, and a switch.
constexpr int kKeyOfEntry = SPC_SWITCH_FIRST_EVENT + 8;
constexpr std::array<int, 3> kEntryTimers = {ENTRY_PROBE_TIMER, ENTRY_PROBE_FAMILY, OMPI_SPC_MPI_TIME};

int define_entry_probe()
{
    const int consumers[] = {ENTRY_PROBE_FIRST,  ENTRY_PROBE_SECOND, ENTRY_PROBE_TIMER,
                             ENTRY_PROBE_FAMILY, OMPI_SPC_MPI_TIME,  SPC_SWITCH_SITE_ID(kKeyOfEntry)};
    return spc_hook_define(ENTRY_PROBE_HOOK, consumers, 6);
}

// The mark of the copy a run of entry_probe took in mode where sites are
// patched: the flag kind has the copy with tests alone.
int mark(spc_hook_mode mode) { return patched() ? ENTRY_PROBE_MARK(mode) : ENTRY_PROBE_MARK(SPC_HOOK_TESTS); }

// The function's first byte is the site, which while off jumps to the plain
// code where sites are patched; on, it goes to the copy its consumers say,
// as a hook around a call does.
TEST(Sites, HookAtAFunctionsEntryJumpsToItsPlainCodeWhileOff)
{
    EXPECT_EQ(entry_probe(5), 15) << "a hook without consumers runs the plain code";
    ASSERT_EQ(define_entry_probe(), SPC_SUCCESS);
    EXPECT_EQ(entry_probe(5), 15);
#if SPC_SITES_PATCHED
    const spc_site *entry = entry_of(SPC_HOOK_SITE_ID(ENTRY_PROBE_HOOK));
    ASSERT_NE(entry, nullptr);
    const unsigned char *site = target(&entry->at);
    EXPECT_EQ(site, reinterpret_cast<const unsigned char *>(&entry_probe)) << "the function's first byte";
    ASSERT_NE(entry->off, 0) << "a site at an entry names its plain code";
    EXPECT_EQ(jump_target(site), patched() ? target(&entry->off) : target(&entry->target))
        << "off: patched, a jump to the plain code; the flag kind, to the flag test";
    const std::array<const int32_t *, 6> copies = {&entry->on,          &entry->counters,       &entry->all,
                                                    &entry->all_sampled, &entry->timers_sampled, &entry->off};
    for (size_t i = 0; i < copies.size(); ++i) {
        for (size_t j = i + 1; j < copies.size(); ++j) {
            EXPECT_NE(target(copies[i]), target(copies[j])) << "six codes: " << i << ", " << j;
        }
    }
#endif
    const uint64_t first = spc_read(ENTRY_PROBE_FIRST), second = spc_read(ENTRY_PROBE_SECOND);
    const uint64_t timed = spc_read_raw(ENTRY_PROBE_TIMER);
    ASSERT_EQ(spc_counter_enable(ENTRY_PROBE_FIRST), SPC_SUCCESS);
    EXPECT_EQ(entry_probe(6), 18 + mark(SPC_HOOK_COUNTERS)) << "one counter of two, no switch, no timer";
    ASSERT_EQ(spc_counter_enable(ENTRY_PROBE_SECOND), SPC_SUCCESS);
    for (int id : kEntryTimers) {
        ASSERT_EQ(spc_counter_enable(id), SPC_SUCCESS);
    }
    EXPECT_EQ(entry_probe(7), 21 + mark(SPC_HOOK_ALL_COUNTERS)) << "every counter and timer";
#if SPC_SITES_PATCHED
    EXPECT_EQ(jump_target(site), patched() ? target(&entry->all) : target(&entry->target));
#endif
    EXPECT_EQ(spc_read_raw(ENTRY_PROBE_TIMER) - timed, uint64_t{ENTRY_PROBE_TICKS}) << "that run, timed";
    ASSERT_EQ(spc_timer_sampling_set(16), SPC_SUCCESS);
    EXPECT_EQ(entry_probe(8), 24 + mark(SPC_HOOK_ALL_SAMPLED)) << "all on, timers sampled";
    ASSERT_EQ(spc_timer_sampling_set(1), SPC_SUCCESS);
    ASSERT_EQ(spc_switch_on(kKeyOfEntry), SPC_SUCCESS);
    EXPECT_EQ(entry_probe(9), 27 + mark(SPC_HOOK_TESTS)) << "a switch on";
    ASSERT_EQ(spc_counter_disable(ENTRY_PROBE_FIRST), SPC_SUCCESS);
    ASSERT_EQ(spc_counter_disable(ENTRY_PROBE_SECOND), SPC_SUCCESS);
    for (int id : kEntryTimers) {
        ASSERT_EQ(spc_counter_disable(id), SPC_SUCCESS);
    }
    EXPECT_EQ(entry_probe(10), 30 + mark(SPC_HOOK_TESTS)) << "only the switch on";
    ASSERT_EQ(spc_switch_off(kKeyOfEntry), SPC_SUCCESS);
    EXPECT_EQ(entry_probe(11), 33) << "all off: the plain code again";
#if SPC_SITES_PATCHED
    EXPECT_EQ(jump_target(site), patched() ? target(&entry->off) : target(&entry->target));
#endif
    EXPECT_EQ(spc_read(ENTRY_PROBE_FIRST) - first, 4u) << "added in the four runs while on";
    EXPECT_EQ(spc_read(ENTRY_PROBE_SECOND) - second, 3u) << "added in the three runs while on";
    ASSERT_EQ(spc_hook_define(ENTRY_PROBE_HOOK, nullptr, 0), SPC_SUCCESS);
}

// With timers alone on and sampled, the site runs the copy for that case,
// which times a drawn run on each timer that is on and no other; any other
// consumer on, or exact timers, and the copy for counters alone runs again.
TEST(Sites, SampledTimersAloneRunTheirOwnCopyAtAFunctionsEntry)
{
    ASSERT_EQ(define_entry_probe(), SPC_SUCCESS);
    ASSERT_EQ(spc_counter_enable(ENTRY_PROBE_TIMER), SPC_SUCCESS);
    EXPECT_TRUE(spc_hook_timers_alone(ENTRY_PROBE_HOOK));
    uint64_t timed = spc_read_raw(ENTRY_PROBE_TIMER);
    EXPECT_EQ(entry_probe(1), 3 + mark(SPC_HOOK_COUNTERS)) << "timers exact: the copy for counters";
    EXPECT_EQ(spc_read_raw(ENTRY_PROBE_TIMER) - timed, uint64_t{ENTRY_PROBE_TICKS}) << "exact: every run timed";

    ASSERT_EQ(spc_timer_sampling_set(16), SPC_SUCCESS);
#if SPC_SITES_PATCHED
    const spc_site *entry = entry_of(SPC_HOOK_SITE_ID(ENTRY_PROBE_HOOK));
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(jump_target(target(&entry->at)), patched() ? target(&entry->timers_sampled) : target(&entry->target))
        << "the sites follow the sampling";
#endif
    constexpr int kRuns = 1600;
    const uint64_t family = spc_read_raw(ENTRY_PROBE_FAMILY), mpi = spc_read_raw(OMPI_SPC_MPI_TIME);
    const uint64_t intervals = spc_timer_intervals(ENTRY_PROBE_TIMER);
    const uint64_t first = spc_read(ENTRY_PROBE_FIRST);
    timed = spc_read_raw(ENTRY_PROBE_TIMER);
    for (int i = 0; i < kRuns; ++i) {
        ASSERT_EQ(entry_probe(2), 6 + mark(SPC_HOOK_TIMERS_SAMPLED)) << "run " << i;
    }
    const uint64_t drawn = spc_timer_intervals(ENTRY_PROBE_TIMER) - intervals;
    EXPECT_NEAR(static_cast<double>(drawn), kRuns / 16.0, kRuns / 16.0 / 2) << "1 in 16 drawn";
    EXPECT_EQ(spc_read_raw(ENTRY_PROBE_TIMER) - timed, drawn * ENTRY_PROBE_TICKS) << "each drawn run, whole";
    EXPECT_EQ(spc_read_raw(ENTRY_PROBE_FAMILY), family) << "a timer that is off adds nothing";
    EXPECT_EQ(spc_read_raw(OMPI_SPC_MPI_TIME), mpi) << "a timer that is off adds nothing";
    EXPECT_EQ(spc_read(ENTRY_PROBE_FIRST), first);

    ASSERT_EQ(spc_counter_enable(ENTRY_PROBE_FIRST), SPC_SUCCESS);
    EXPECT_FALSE(spc_hook_timers_alone(ENTRY_PROBE_HOOK));
    EXPECT_EQ(entry_probe(3), 9 + mark(SPC_HOOK_COUNTERS)) << "a counter on besides";
    ASSERT_EQ(spc_counter_disable(ENTRY_PROBE_FIRST), SPC_SUCCESS);
    ASSERT_EQ(spc_switch_on(kKeyOfEntry), SPC_SUCCESS);
    EXPECT_FALSE(spc_hook_timers_alone(ENTRY_PROBE_HOOK));
    EXPECT_EQ(entry_probe(4), 12 + mark(SPC_HOOK_TESTS)) << "a switch on besides";
    ASSERT_EQ(spc_switch_off(kKeyOfEntry), SPC_SUCCESS);
    EXPECT_EQ(entry_probe(5), 15 + mark(SPC_HOOK_TIMERS_SAMPLED)) << "timers alone again";
    ASSERT_EQ(spc_timer_sampling_set(1), SPC_SUCCESS);
    EXPECT_EQ(entry_probe(6), 18 + mark(SPC_HOOK_COUNTERS)) << "exact again";
    EXPECT_EQ(spc_read(ENTRY_PROBE_FIRST), first + 1) << "counted in the one run while on";
    ASSERT_EQ(spc_counter_disable(ENTRY_PROBE_TIMER), SPC_SUCCESS);
    EXPECT_FALSE(spc_hook_timers_alone(ENTRY_PROBE_HOOK)) << "nothing on";
    EXPECT_EQ(entry_probe(7), 21);
    ASSERT_EQ(spc_hook_define(ENTRY_PROBE_HOOK, nullptr, 0), SPC_SUCCESS);
}

TEST(Sites, HookCodeKeepsItsThreadsBlockAcrossACall)
{
    const int consumers[] = {kBefore, kAfter};
    ASSERT_EQ(spc_hook_define(kAcross, consumers, 2), SPC_SUCCESS);
    const uint64_t before = spc_read(kBefore), after = spc_read(kAfter);

    AcrossRun off = run_across_site_in_new_thread(1);
    EXPECT_EQ(off.result, 2);
    EXPECT_EQ(off.block, nullptr) << "off: the plain call, no hook code";
    EXPECT_EQ(off.thread, nullptr) << "off: no add, so no block for the thread";

    ASSERT_EQ(spc_counter_enable(kBefore), SPC_SUCCESS);
    ASSERT_EQ(spc_counter_enable(kAfter), SPC_SUCCESS);
    AcrossRun all = run_across_site_in_new_thread(2);
    EXPECT_EQ(all.result, 3);
    EXPECT_NE(all.block, nullptr);
    EXPECT_EQ(all.block, all.thread) << "every counter on: the thread's block";
    EXPECT_EQ(all.start, patched() ? all.thread : nullptr)
        << "the copy for all counters (patched sites) reaches it at the start";

    ASSERT_EQ(spc_counter_disable(kBefore), SPC_SUCCESS);
    AcrossRun tests = run_across_site_in_new_thread(3);
    EXPECT_EQ(tests.result, 4);
    EXPECT_NE(tests.block, nullptr);
    EXPECT_EQ(tests.block, tests.thread) << "one counter on: the thread's block";
    EXPECT_EQ(tests.start, nullptr) << "the copy with tests reaches it at its first add";

    ASSERT_EQ(spc_counter_disable(kAfter), SPC_SUCCESS);
    EXPECT_EQ(spc_read(kBefore) - before, 1u) << "added while on: the run with every counter on";
    EXPECT_EQ(spc_read(kAfter) - after, 4u) << "2 in each of the two runs while on";
    ASSERT_EQ(spc_hook_define(kAcross, nullptr, 0), SPC_SUCCESS);
}

TEST(Sites, HookDefinitionRefusesWhatIsNotAConsumer)
{
    const int counter = OMPI_SPC_SEND;
    EXPECT_EQ(spc_hook_define(-1, &counter, 1), SPC_ERR_BAD_ID);
    EXPECT_EQ(spc_hook_define(SPC_MAX_HOOKS, &counter, 1), SPC_ERR_BAD_ID);
    const int not_consumers[] = {OMPI_SPC_NUM_COUNTERS, SPC_ANY_TIMER,
                                 SPC_SWITCH_SITE_ID(SPC_NUM_SWITCHES), SPC_HOOK_SITE_ID(0)};
    for (int id : not_consumers) {
        EXPECT_EQ(spc_hook_define(0, &id, 1), SPC_ERR_BAD_ID) << id;
    }
    std::vector<int> too_many(SPC_MAX_HOOK_CONSUMERS + 1, OMPI_SPC_SEND);
    EXPECT_EQ(spc_hook_define(0, too_many.data(), static_cast<int>(too_many.size())), SPC_ERR_BAD_ID);
    EXPECT_EQ(spc_hook_define(0, nullptr, 1), SPC_ERR_BAD_ID);
    EXPECT_FALSE(spc_hook_is_on(-1));
    EXPECT_FALSE(spc_hook_is_on(SPC_MAX_HOOKS));
}

// Tens of thousands of site rewrites (under the patcher's lock, with
// mprotect) while 4 threads run the sites: 10,000 toggles of the hook's
// consumers and 20,000 of the neighbour counter.  Five times as many took 70 s
// of both cores in ./test.sh (sanitizer runs always had these counts).
constexpr int kHookToggles = 10000, kCounterToggles = 20000;

// 4 threads run counter C's site and a hook's; a fifth turns the hook's two
// consumers on and off in turn, so its site is rewritten every step: to the
// code for all counters, to the code with tests, still on, then off.
TEST(Sites, PatchingAHookNeverDisturbsItsNeighbour)
{
    constexpr int kWorkers = 4, kToggles = kHookToggles;
    ASSERT_EQ(define_hook(), SPC_SUCCESS);
    const uint64_t c_before = spc_read(kC), counted_before = spc_read(kHookCounter);
    const int runs_before = hook_runs.load(), all_before = hook_runs_all_counters.load();
    spc_counter_enable(kC);
    std::atomic<bool> stop{false};
    std::vector<uint64_t> rounds(kWorkers);
    std::vector<std::thread> workers;
    for (int w = 0; w < kWorkers; ++w) {
        workers.emplace_back([&, w] { rounds[w] = run_counter_and_hook(stop); });
    }
    for (int toggle = 0; toggle < kToggles; ++toggle) {
        spc_counter_enable(kHookCounter);   // on
        spc_switch_on(kHookKey);            // on, two consumers
        spc_counter_disable(kHookCounter);  // on, one
        spc_switch_off(kHookKey);           // off
    }
    stop = true;
    uint64_t total = 0;
    for (int w = 0; w < kWorkers; ++w) {
        workers[w].join();
        total += rounds[w];
    }
    spc_counter_disable(kC);
    EXPECT_EQ(spc_read(kC) - c_before, total) << "C's count must be exact";
    EXPECT_LE(static_cast<uint64_t>(hook_runs.load() - runs_before), total);
    EXPECT_LE(spc_read(kHookCounter) - counted_before, total);
    EXPECT_FALSE(spc_hook_is_on(kHook));
    const int all_runs = hook_runs_all_counters.load() - all_before;
    if (patched()) {
        EXPECT_GT(all_runs, 0) << "the code for all counters must have run for the test to mean anything";
    } else {
        EXPECT_EQ(all_runs, 0);
    }
    std::printf("%s sites: %llu rounds, the hook ran %d times (%d for all counters) during %d toggles "
                "of its consumers\n", patched() ? "patched" : "flag", static_cast<unsigned long long>(total),
                hook_runs.load() - runs_before, all_runs, kToggles);
}

TEST(Sites, PatchingOneCounterNeverDisturbsItsNeighbour)
{
    constexpr int kWorkers = 4, kToggles = kCounterToggles;
    const uint64_t a_before = spc_read(kA), b_before = spc_read(kB);
    spc_counter_enable(kA);
    std::atomic<bool> stop{false};
    std::vector<uint64_t> rounds(kWorkers);
    std::vector<std::thread> workers;
    for (int w = 0; w < kWorkers; ++w) {
        workers.emplace_back([&, w] { rounds[w] = run_sites(stop); });
    }
    for (int toggle = 0; toggle < kToggles; ++toggle) {
        spc_counter_enable(kB);
        spc_counter_disable(kB);
    }
    stop = true;
    uint64_t total = 0;
    for (int w = 0; w < kWorkers; ++w) {
        workers[w].join();
        total += rounds[w];
    }
    spc_counter_disable(kA);
    EXPECT_EQ(spc_read(kA) - a_before, total) << "A's count must be exact";
    EXPECT_LE(spc_read(kB) - b_before, total);
    std::printf("%s sites: %llu rounds of A and B, B counted %llu during %d toggles\n",
                patched() ? "patched" : "flag", static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(spc_read(kB) - b_before), kToggles);
}

}  // namespace
