// Cycle-counter calibration and tick conversion.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "internal.hpp"

namespace {

uint64_t monotonic_ns()
{
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

// A tick count read between two clock readings, and the midpoint of the two.
struct Bracket {
    uint64_t ticks;
    uint64_t ns;
    uint64_t width_ns;
};

Bracket bracket()
{
    Bracket best{0, 0, UINT64_MAX};
    for (int attempt = 0; attempt < 5; ++attempt) {  // a preempted reading is wide: keep the narrowest
        uint64_t before = monotonic_ns();
        uint64_t ticks = spc_ticks();
        uint64_t after = monotonic_ns();
        if (after - before < best.width_ns) {
            best = {ticks, before + (after - before) / 2, after - before};
        }
    }
    return best;
}

// spc_init takes the calibration's first reading; the first conversion takes
// the second, sleeping only for what is left of 5 ms, so MPI_Init (which
// calls spc_init) does not sleep: it cost 5 ms a start, counters on or off.
std::once_flag origin_taken_once;
std::atomic<bool> origin_taken{false};
Bracket origin;
constexpr uint64_t calibration_ns = 5000000;

uint64_t calibrate()
{
#if defined(__x86_64__) || defined(__i386__)
    // The TSC runs at a constant rate here (constant_tsc, nonstop_tsc), so one
    // interval against CLOCK_MONOTONIC fixes it; two readings about 100 ns wide
    // at least 5 ms apart put the error near 2e-5.
    const Bracket start = origin_taken.load(std::memory_order_acquire) ? origin : bracket();
    Bracket end = bracket();
    while (end.ns - start.ns < calibration_ns) {
        timespec pause{0, static_cast<long>(calibration_ns - (end.ns - start.ns))};
        nanosleep(&pause, nullptr);
        end = bracket();
    }
    return static_cast<uint64_t>(static_cast<long double>(end.ticks - start.ticks) * 1e9L /
                                 static_cast<long double>(end.ns - start.ns));
#else
    return 1000000000u;  // spc_ticks() reads CLOCK_MONOTONIC in nanoseconds
#endif
}

std::once_flag calibrated;
uint64_t ticks_per_second_value;

uint64_t ticks_per_second()
{
    std::call_once(calibrated, [] { ticks_per_second_value = calibrate(); });
    return ticks_per_second_value;
}

}  // namespace

namespace spc {

// The n-th thread to draw a timed interval in a process gets the n-th seed, not one from the
// clock: the gaps still look random to the workload, and a run's timed
// intervals repeat from run to run (so the instruction budget of sampled
// timers is a fixed number, netpipe_runs/instruction_budget.py).  The seed is
// n through SplitMix64's output function, the usual seeder of xorshift
// generators: a handful of instructions in the thread's first update, where
// std::mt19937_64's set-up cost 0.24 instruction per message of the budget.
uint64_t random_seed()
{
    static std::atomic<uint64_t> threads_seeded{0};
    uint64_t z = (threads_seeded.fetch_add(1, std::memory_order_relaxed) + 1) * 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return z != 0 ? z : 0x9e3779b97f4a7c15u;  // xorshift must not start at 0
}

uint64_t ticks_to_microseconds(uint64_t ticks, uint64_t per_second)
{
    return static_cast<uint64_t>(static_cast<unsigned __int128>(ticks) * 1000000u / per_second);
}

}  // namespace spc

extern "C" {

__thread struct spc_thread_timing spc_thread_timing __attribute__((tls_model("initial-exec"))) = {0, 0, 0};

void spc_init(void)
{
    std::call_once(origin_taken_once, [] {
        origin = bracket();
        origin_taken.store(true, std::memory_order_release);
    });
}

double spc_ticks_per_second(void) { return static_cast<double>(ticks_per_second()); }


int spc_timer_sampling_set(unsigned n)
{
    if (n == 0) {
        return SPC_ERR_BAD_ID;
    }
    const unsigned before = __atomic_exchange_n(&spc_flags_.timer_sampling, n, __ATOMIC_RELAXED);
    // The caller's next interval is timed; other threads take the new n at
    // their next timed interval.
    spc_thread_timing.countdown = 0;
    if ((before > 1) != (n > 1)) {
        spc::hooks_follow_sampling();
    }
    return SPC_SUCCESS;
}

unsigned spc_timer_sampling(void) { return __atomic_load_n(&spc_flags_.timer_sampling, __ATOMIC_RELAXED); }

// Uniform in [n - s, n + s], s = n/8 rounded up: the mean is n, so sums
// scaled by n are unbiased, and the jitter keeps the timed intervals from
// locking onto a periodic workload while keeping the count of timed
// intervals close to 1 in n (a wider spread makes the estimate noisier).
uint64_t spc_timer_next_gap_(void)
{
    uint64_t n = spc_timer_sampling();
    uint64_t x = spc_thread_timing.random;  // xorshift64
    if (x == 0) {
        x = spc::random_seed();
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    spc_thread_timing.random = x;
    uint64_t spread = std::min<uint64_t>((n + 7) / 8, n - 1);
    return n - spread + x % (2 * spread + 1);
}

uint64_t spc_convert(int id, uint64_t raw)
{
    if (id < 0 || id >= OMPI_SPC_NUM_COUNTERS || spc_counter_infos[id].kind != SPC_KIND_TIMER) {
        return raw;
    }
    // A sampled timer's sum covers one interval in n: scale it (in 128 bits).
    unsigned __int128 ticks = static_cast<unsigned __int128>(raw) * spc_timer_sampling();
    return static_cast<uint64_t>(ticks * 1000000u / ticks_per_second());
}

}  // extern "C"
