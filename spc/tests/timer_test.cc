// The cycle timer against CLOCK_MONOTONIC, and tick conversion.
#include <gtest/gtest.h>
#include <time.h>

#include <cmath>
#include <cstdint>

#include "spc/spc.h"
#include "../src/internal.hpp"

namespace {

double monotonic_seconds()
{
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

TEST(Timer, HundredMillisecondSleepWithinTwoPercentOfMonotonic)
{
    spc_init();
    spc_counter_enable(OMPI_SPC_MATCH_TIME);
    const uint64_t before = spc_read(OMPI_SPC_MATCH_TIME);

    spc_timer_t timer;
    const double start = monotonic_seconds();
    SPC_TIMER_START(OMPI_SPC_MATCH_TIME, &timer);
    timespec pause{0, 100000000};
    while (nanosleep(&pause, &pause) != 0) {
    }
    SPC_TIMER_STOP(&timer);
    const double elapsed_us = (monotonic_seconds() - start) * 1e6;
    spc_counter_disable(OMPI_SPC_MATCH_TIME);

    const double timed_us = static_cast<double>(spc_read(OMPI_SPC_MATCH_TIME) - before);
    EXPECT_GE(elapsed_us, 100000.0);
    EXPECT_NEAR(timed_us, elapsed_us, 0.02 * elapsed_us);
}

TEST(Timer, TicksAreMonotone)
{
    uint64_t previous = spc_ticks();
    for (int i = 0; i < 1000000; ++i) {
        uint64_t now = spc_ticks();
        ASSERT_GE(now, previous) << "after " << i << " readings";
        previous = now;
    }
}

TEST(Timer, FrequencyIsPlausible)
{
    const double hz = spc_ticks_per_second();
    EXPECT_GT(hz, 1e8);
    EXPECT_LT(hz, 1e10);
}

TEST(Timer, ConversionDoesNotOverflowOverHoursOfTicks)
{
    const uint64_t hz = 3000000000u;  // a 3 GHz counter
    const uint64_t ten_hours = hz * 36000u;
    EXPECT_EQ(spc::ticks_to_microseconds(ten_hours, hz), 36000000000u);
    EXPECT_EQ(spc::ticks_to_microseconds(hz / 1000000u, hz), 1u);
    EXPECT_EQ(spc::ticks_to_microseconds(0, hz), 0u);
    // The whole 64-bit range (about 195 years at 3 GHz) converts exactly.
    EXPECT_EQ(spc::ticks_to_microseconds(UINT64_MAX, hz), UINT64_MAX / 3000u);
}

TEST(Timer, StopWithoutAnEnabledStartAddsNothing)
{
    const uint64_t before = spc_read_raw(OMPI_SPC_OOS_MATCH_TIME);
    spc_timer_t timer;
    SPC_TIMER_START(OMPI_SPC_OOS_MATCH_TIME, &timer);  // off: timer stays 0
    EXPECT_EQ(timer.start, 0u);
    spc_counter_enable(OMPI_SPC_OOS_MATCH_TIME);
    SPC_TIMER_STOP(&timer);   // turned on in between
    EXPECT_EQ(spc_read_raw(OMPI_SPC_OOS_MATCH_TIME), before);

    SPC_TIMER_START(OMPI_SPC_OOS_MATCH_TIME, &timer);
    EXPECT_NE(timer.start, 0u);
    SPC_TIMER_STOP(&timer);
    const uint64_t once = spc_read_raw(OMPI_SPC_OOS_MATCH_TIME);
    EXPECT_GT(once, before);
    SPC_TIMER_STOP(&timer);   // a second stop adds nothing
    EXPECT_EQ(spc_read_raw(OMPI_SPC_OOS_MATCH_TIME), once);
    spc_counter_disable(OMPI_SPC_OOS_MATCH_TIME);
}

TEST(Timer, ReadConvertsTicksToMicroseconds)
{
    const double hz = spc_ticks_per_second();
    const uint64_t raw = spc_read_raw(OMPI_SPC_MATCH_TIME);
    const long double expected = static_cast<long double>(raw) * 1e6L / hz;
    EXPECT_NEAR(static_cast<double>(spc_convert(OMPI_SPC_MATCH_TIME, raw)),
                static_cast<double>(expected), 1.0);
    EXPECT_EQ(spc_convert(OMPI_SPC_SEND, 12345), 12345u) << "only timers are converted";
}

}  // namespace
