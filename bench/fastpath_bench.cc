// Micro-benchmarks of the counter fast path, the timer and reads.
//
// Every update benchmark has the same loop (one update, then a compiler
// barrier), so differences between them are the cost of the update.
// Counters benchmarked "on" are enabled in main(); the "off" one never is.
// Timers are on only inside their "on" benchmark: every timer site is on
// while any timer is (SPC_ANY_TIMER), so an "off" timer needs all of them off.
#include <benchmark/benchmark.h>
#include <time.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "spc/spc.h"

namespace {

constexpr int kOffCounter = OMPI_SPC_SSEND;
constexpr int kOnCounters[] = {OMPI_SPC_SEND, OMPI_SPC_RECV};

void BM_Update_Off(benchmark::State &state)
{
    for (auto _ : state) {
        SPC_RECORD(kOffCounter, 1);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(BM_Update_Off);

// Threads of a multi-threaded run update one counter ("same") or one each.
int counter_for(const benchmark::State &state, bool same)
{
    return same ? OMPI_SPC_SEND : kOnCounters[state.thread_index() % 2];
}

template <void (*Add)(int, uint64_t)>
void update_on(benchmark::State &state, bool same)
{
    const int id = counter_for(state, same);
    for (auto _ : state) {
        if (SPC_UNLIKELY(spc_enabled_(id))) {
            Add(id, 1);
        }
        benchmark::ClobberMemory();
    }
}

void BM_Update_On_Sharded(benchmark::State &state) { update_on<spc_sharded_add_>(state, true); }
void BM_Update_On_Atomic(benchmark::State &state) { update_on<spc_atomic_add_>(state, true); }
void BM_Update_On_Sharded_OwnCounter(benchmark::State &state) { update_on<spc_sharded_add_>(state, false); }
void BM_Update_On_Atomic_OwnCounter(benchmark::State &state) { update_on<spc_atomic_add_>(state, false); }
BENCHMARK(BM_Update_On_Sharded)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_Update_On_Atomic)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_Update_On_Sharded_OwnCounter)->Threads(2)->UseRealTime();
BENCHMARK(BM_Update_On_Atomic_OwnCounter)->Threads(2)->UseRealTime();

// What Open MPI's call sites compile to, in the storage mode of this build.
void BM_Update_On_Macro(benchmark::State &state)
{
    for (auto _ : state) {
        SPC_RECORD(OMPI_SPC_SEND, 1);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(BM_Update_On_Macro);

void timer_pairs(benchmark::State &state, bool on)
{
    if (on) {
        spc_counter_enable(OMPI_SPC_MATCH_TIME);
    }
    spc_timer_t timer;
    for (auto _ : state) {
        SPC_TIMER_START(OMPI_SPC_MATCH_TIME, &timer);
        SPC_TIMER_STOP(&timer);
        benchmark::ClobberMemory();
    }
    if (on) {
        spc_counter_disable(OMPI_SPC_MATCH_TIME);
    }
}
void BM_TimerPair_On(benchmark::State &state) { timer_pairs(state, true); }
BENCHMARK(BM_TimerPair_On);
void BM_TimerPair_Off(benchmark::State &state) { timer_pairs(state, false); }
BENCHMARK(BM_TimerPair_Off);

void BM_RawCycleCounterPair(benchmark::State &state)
{
    for (auto _ : state) {
        uint64_t start = spc_ticks();
        uint64_t stop = spc_ticks();
        benchmark::DoNotOptimize(stop - start);
    }
}
BENCHMARK(BM_RawCycleCounterPair);

void BM_ClockGettimePair(benchmark::State &state)
{
    for (auto _ : state) {
        timespec start, stop;
        clock_gettime(CLOCK_MONOTONIC, &start);
        clock_gettime(CLOCK_MONOTONIC, &stop);
        benchmark::DoNotOptimize(stop.tv_nsec - start.tv_nsec);
    }
}
BENCHMARK(BM_ClockGettimePair);

// Threads that have counted once (so each owns a shard) and wait, alive,
// until the benchmark is over.
class ParkedThreads {
public:
    explicit ParkedThreads(int n)
    {
        for (int i = 0; i < n; ++i) {
            threads_.emplace_back([this] {
                spc_sharded_add_(OMPI_SPC_SEND, 1);
                std::unique_lock<std::mutex> lock(mutex_);
                ++ready_;
                changed_.notify_all();
                changed_.wait(lock, [this] { return done_; });
            });
        }
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this, n] { return ready_ == n; });
    }
    ~ParkedThreads()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
        }
        changed_.notify_all();
        for (std::thread &thread : threads_) {
            thread.join();
        }
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int ready_ = 0;
    bool done_ = false;
    std::vector<std::thread> threads_;
};

// Argument: live threads with a shard, counting the benchmark's own thread.
void BM_ReadAll(benchmark::State &state)
{
    spc_sharded_add_(OMPI_SPC_SEND, 1);
    ParkedThreads others(static_cast<int>(state.range(0)) - 1);
    uint64_t values[OMPI_SPC_NUM_COUNTERS];
    for (auto _ : state) {
        spc_read_all(values, OMPI_SPC_NUM_COUNTERS);
        benchmark::DoNotOptimize(values);
    }
    state.counters["counters"] = OMPI_SPC_NUM_COUNTERS;
}
BENCHMARK(BM_ReadAll)->Arg(1)->Arg(8)->Arg(64);

void BM_ReadOne(benchmark::State &state)
{
    spc_sharded_add_(OMPI_SPC_SEND, 1);
    ParkedThreads others(static_cast<int>(state.range(0)) - 1);
    for (auto _ : state) {
        benchmark::DoNotOptimize(spc_read(OMPI_SPC_SEND));
    }
}
BENCHMARK(BM_ReadOne)->Arg(1)->Arg(8)->Arg(64);

// What an MPI_T read of a per-peer variable copies out of the core: one
// array of a communicator of that many ranks (issue 36), every peer sent
// to once so that every page is there.  MPI_T then subtracts the handle's
// baseline from each element (opal/mca/base/mca_base_pvar.c), one more
// pass of the same length.
void BM_ReadPeers(benchmark::State &state)
{
    const int ranks = static_cast<int>(state.range(0));
    struct spc_comm *comm = spc_comm_create(ranks);
    if (comm == nullptr) {
        state.SkipWithError("spc_comm_create failed");
        return;
    }
    spc_switch_on(SPC_SWITCH_COMM_COUNTERS);
    for (int rank = 0; rank < ranks; ++rank) {
        spc_comm_add_peer(comm, SPC_PEER_BYTES_SENT, rank, 1);
    }
    spc_switch_off(SPC_SWITCH_COMM_COUNTERS);
    std::vector<uint64_t> values(static_cast<size_t>(ranks));
    for (auto _ : state) {
        spc_comm_read_peers(comm, SPC_PEER_BYTES_SENT, values.data());
        benchmark::DoNotOptimize(values.data());
    }
    spc_comm_destroy(comm);
    state.counters["peers_per_second"] =
        benchmark::Counter(static_cast<double>(ranks), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ReadPeers)->Arg(128)->Arg(10000)->Arg(100000);

}  // namespace

int main(int argc, char **argv)
{
    spc_init();
    for (int id : kOnCounters) {
        spc_counter_enable(id);
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    benchmark::AddCustomContext("spc_storage", SPC_STORAGE_ATOMIC ? "atomic" : "sharded");
    benchmark::AddCustomContext("spc_ticks_per_second", std::to_string(spc_ticks_per_second()));
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
