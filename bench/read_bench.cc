// What a tool pays to read the 7 counters of Table 4 of seed 004 in an MPI
// process of the spc build: one PAPI_read, 7 MPI_T reads, 7 core reads.
// Run under mpirun -np 1.
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <papi.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "spc/spc.h"
#include "spc/spc_mpit_client.h"

namespace {

// From netpipe_runs/table4.counters, through bench/meson.build.
constexpr std::array kTable4 = {SPC_TABLE4_COUNTERS};
static_assert(kTable4.size() == 7, "the benchmarks' names say Read7");

int event_set = PAPI_NULL;
MPI_T_pvar_session session;
std::array<MPI_T_pvar_handle, kTable4.size()> handles;
std::array<int, kTable4.size()> ids;

void set_up()
{
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT || PAPI_create_eventset(&event_set) != PAPI_OK) {
        spc_client_die("PAPI could not be initialised");
    }
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS ||
        MPI_T_pvar_session_create(&session) != MPI_SUCCESS) {
        spc_client_die("MPI_T could not be initialised");
    }
    for (size_t i = 0; i < kTable4.size(); ++i) {
        std::string event = std::string(SPC_PAPI_EVENT_PREFIX SPC_COUNTER_PREFIX) + kTable4[i];
        if (PAPI_add_named_event(event_set, event.c_str()) != PAPI_OK) {
            spc_client_die("no PAPI event %s: is this the spc build?", event.c_str());
        }
        int count;
        MPI_OK(MPI_T_pvar_handle_alloc(session, spc_pvar(kTable4[i]), nullptr, &handles[i], &count));
        MPI_OK(MPI_T_pvar_start(session, handles[i]));
        ids[i] = spc_counter_find(kTable4[i]);
    }
    if (PAPI_start(event_set) != PAPI_OK) {
        spc_client_die("PAPI_start failed");
    }
}

void BM_Read7_PAPI(benchmark::State &state)
{
    long long values[kTable4.size()];
    for (auto _ : state) {
        PAPI_read(event_set, values);
        benchmark::DoNotOptimize(values);
    }
}
BENCHMARK(BM_Read7_PAPI);

void BM_Read7_MPIT(benchmark::State &state)
{
    unsigned long long values[kTable4.size()];
    for (auto _ : state) {
        for (size_t i = 0; i < kTable4.size(); ++i) {
            MPI_T_pvar_read(session, handles[i], &values[i]);
        }
        benchmark::DoNotOptimize(values);
    }
}
BENCHMARK(BM_Read7_MPIT);

void BM_Read7_Core(benchmark::State &state)
{
    uint64_t values[kTable4.size()];
    for (auto _ : state) {
        for (size_t i = 0; i < kTable4.size(); ++i) {
            values[i] = spc_read(ids[i]);
        }
        benchmark::DoNotOptimize(values);
    }
}
BENCHMARK(BM_Read7_Core);

}  // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    set_up();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    long long values[kTable4.size()];
    PAPI_stop(event_set, values);
    MPI_T_pvar_session_free(&session);
    MPI_Finalize();
    return 0;
}
