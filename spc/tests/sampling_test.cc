// Sampled timers on intervals of known length: a synthetic clock that the
// test advances stands in for the cycle counter, so every interval's length
// is exact and the estimate can be compared with the truth.
#include <gtest/gtest.h>

#include <cstdint>

static uint64_t synthetic_clock = 1;  // never 0: a timer at 0 is "not running"
#define SPC_TIMER_CLOCK_() synthetic_clock
#include "spc/spc.h"

namespace {

constexpr int kTimer = OMPI_SPC_OOS_MATCH_TIME;
constexpr uint64_t kIntervals = 100000;

// One interval of the given length through the real start and stop.
void interval(uint64_t length)
{
    spc_timer_t timer;
    SPC_TIMER_START(OMPI_SPC_OOS_MATCH_TIME, &timer);
    synthetic_clock += length;
    SPC_TIMER_STOP(&timer);
    synthetic_clock += 7;  // time between intervals is not timed
}

// The same through a hook whose one consumer is the timer, around what it
// times, as ob1's match times its search: with the timer on, a patched
// site runs the hook's copy for all counters, the exact one or the sampled
// one as sampling says.
constexpr int kHook = 11;
spc_hook_mode hook_mode_ran = SPC_HOOK_TESTS;

void hooked_interval(uint64_t length)
{
    SPC_HOOK_AROUND(kHook, {
        hook_mode_ran = SPC_HOOK_MODE;
        uint64_t *block = spc_hook_block_start_(SPC_HOOK_MODE);
        if (spc_hook_times_(SPC_HOOK_MODE, &block, kTimer)) {
            const uint64_t start = SPC_TIMER_CLOCK_();
            synthetic_clock += length;
            spc_hook_add_(&block, kTimer, SPC_TIMER_CLOCK_() - start);
        } else {
            synthetic_clock += length;
        }
    }, synthetic_clock += length);
    synthetic_clock += 7;
}

struct Outcome {
    uint64_t exact;      // the sum of the lengths
    uint64_t estimate;   // what the timer reports, in ticks
    uint64_t intervals;  // how many it timed
};

// kIntervals intervals, lengths from length_of(i), with sampling 1 in n,
// each run by one_interval(length).
template <typename LengthOf>
Outcome run(unsigned n, LengthOf length_of, void (*one_interval)(uint64_t) = interval)
{
    EXPECT_EQ(spc_timer_sampling_set(n), SPC_SUCCESS);
    const uint64_t raw_before = spc_read_raw(kTimer), timed_before = spc_timer_intervals(kTimer);
    spc_counter_enable(kTimer);
    Outcome outcome{0, 0, 0};
    for (uint64_t i = 0; i < kIntervals; ++i) {
        outcome.exact += length_of(i);
        one_interval(length_of(i));
    }
    spc_counter_disable(kTimer);
    outcome.estimate = (spc_read_raw(kTimer) - raw_before) * n;
    outcome.intervals = spc_timer_intervals(kTimer) - timed_before;
    spc_timer_sampling_set(1);
    return outcome;
}

double relative_error(const Outcome &o)
{
    return (static_cast<double>(o.estimate) - static_cast<double>(o.exact)) / static_cast<double>(o.exact);
}

TEST(Sampling, OneInOneIsExactToTheTick)
{
    Outcome o = run(1, [](uint64_t i) { return 1000 + i % 37; });
    EXPECT_EQ(o.estimate, o.exact);
    EXPECT_EQ(o.intervals, 0u) << "exact timers count no intervals";
}

TEST(Sampling, OneIn16And64WithinTwoPercent)
{
    for (unsigned n : {16u, 64u}) {
        Outcome o = run(n, [](uint64_t i) { return 1000 + (i * 7919) % 500; });
        EXPECT_LT(std::abs(relative_error(o)), 0.02) << "n = " << n;
        EXPECT_NEAR(static_cast<double>(o.intervals), static_cast<double>(kIntervals) / n,
                    0.02 * static_cast<double>(kIntervals) / n) << "n = " << n;
        std::printf("1 in %u: %llu of %llu intervals timed, estimate off by %+.3f%%\n", n,
                    static_cast<unsigned long long>(o.intervals),
                    static_cast<unsigned long long>(kIntervals), 100 * relative_error(o));
    }
}

// Every n-th interval is twice as long.  A countdown of exactly n would time
// the same phase every time: the test first shows how far off that is (the
// control), then that the randomised countdown is not.
TEST(Sampling, APeriodicWorkloadDoesNotAlias)
{
    constexpr unsigned n = 16;
    auto length_of = [](uint64_t i) -> uint64_t { return i % n == 0 ? 2000 : 1000; };
    uint64_t exact = 0, fixed_phase_0 = 0, fixed_phase_1 = 0;
    for (uint64_t i = 0; i < kIntervals; ++i) {
        exact += length_of(i);
        fixed_phase_0 += i % n == 0 ? length_of(i) * n : 0;
        fixed_phase_1 += i % n == 1 ? length_of(i) * n : 0;
    }
    const double fixed_error_0 = (static_cast<double>(fixed_phase_0) - exact) / exact;
    const double fixed_error_1 = (static_cast<double>(fixed_phase_1) - exact) / exact;
    ASSERT_GT(std::abs(fixed_error_0), 0.5) << "the workload must alias with a fixed countdown";
    ASSERT_GT(std::abs(fixed_error_1), 0.05);

    Outcome o = run(n, length_of);
    EXPECT_EQ(o.exact, exact);
    EXPECT_LT(std::abs(relative_error(o)), 0.02);
    std::printf("period %u: a fixed countdown would be off by %+.1f%% or %+.1f%%, ours by %+.3f%%\n",
                n, 100 * fixed_error_0, 100 * fixed_error_1, 100 * relative_error(o));
}

TEST(Sampling, AHooksCopiesForAllCountersAreExactOrSampled)
{
    const int consumer = kTimer;
    ASSERT_EQ(spc_hook_define(kHook, &consumer, 1), SPC_SUCCESS);
    const bool patched = spc_sites_kind() == SPC_SITES_KIND_PATCHED;
    const spc_hook_mode exact_copy = patched ? SPC_HOOK_ALL_COUNTERS : SPC_HOOK_TESTS,
                        sampled_copy = patched ? SPC_HOOK_ALL_SAMPLED : SPC_HOOK_TESTS;
    auto lengths = [](uint64_t i) { return 1000 + (i * 7919) % 500; };

    Outcome o = run(1, lengths, hooked_interval);
    EXPECT_EQ(hook_mode_ran, exact_copy);
    EXPECT_EQ(o.estimate, o.exact) << "the exact copy times every interval";
    EXPECT_EQ(o.intervals, 0u);
    for (unsigned n : {16u, 64u}) {
        o = run(n, lengths, hooked_interval);
        EXPECT_EQ(hook_mode_ran, sampled_copy) << "n = " << n;
        EXPECT_LT(std::abs(relative_error(o)), 0.02) << "n = " << n;
        EXPECT_NEAR(static_cast<double>(o.intervals), static_cast<double>(kIntervals) / n,
                    0.02 * static_cast<double>(kIntervals) / n) << "n = " << n;
    }

    // Sampling changed while the timer is on: the site follows at once.
    ASSERT_EQ(spc_counter_enable(kTimer), SPC_SUCCESS);
    hooked_interval(1);
    EXPECT_EQ(hook_mode_ran, exact_copy);
    ASSERT_EQ(spc_timer_sampling_set(8), SPC_SUCCESS);
    hooked_interval(1);
    EXPECT_EQ(hook_mode_ran, sampled_copy);
    ASSERT_EQ(spc_timer_sampling_set(1), SPC_SUCCESS);
    hooked_interval(1);
    EXPECT_EQ(hook_mode_ran, exact_copy);
    ASSERT_EQ(spc_counter_disable(kTimer), SPC_SUCCESS);
    ASSERT_EQ(spc_hook_define(kHook, nullptr, 0), SPC_SUCCESS);
}

TEST(Sampling, ZeroIsRefused)
{
    EXPECT_EQ(spc_timer_sampling_set(0), SPC_ERR_BAD_ID);
    EXPECT_EQ(spc_timer_sampling(), 1u);
}

}  // namespace
