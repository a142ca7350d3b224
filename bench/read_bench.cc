// What a tool pays to read the 7 counters of the paper's NetPIPE study
// (Table 4 of seed 004) in a running MPI process of the spc build: one
// PAPI_read of an event set holding them, 7 MPI_T_pvar_read calls, and the
// core's own spc_read for reference.  Run under mpirun -np 1.
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <papi.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mpit_util.h"  // spc_pvar, started_handle
#include "spc/spc.h"

namespace {

constexpr std::array<const char *, 7> kTable4 = {
    "SEND", "RECV", "BYTES_RECEIVED_USER", "BYTES_SENT_USER", "BYTES_GET", "UNEXPECTED", "MATCH_TIME"};

int event_set = PAPI_NULL;
MPI_T_pvar_session session;
std::array<MPI_T_pvar_handle, kTable4.size()> handles;
std::array<int, kTable4.size()> ids;

[[noreturn]] void fail(const std::string &what)
{
    std::fprintf(stderr, "spc_read_bench: %s\n", what.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::abort();
}

void set_up()
{
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT || PAPI_create_eventset(&event_set) != PAPI_OK) {
        fail("PAPI could not be initialised");
    }
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS ||
        MPI_T_pvar_session_create(&session) != MPI_SUCCESS) {
        fail("MPI_T could not be initialised");
    }
    for (size_t i = 0; i < kTable4.size(); ++i) {
        std::string name = std::string("OMPI_SPC_") + kTable4[i];
        if (PAPI_add_named_event(event_set, ("sde:::ompi_spc::" + name).c_str()) != PAPI_OK) {
            fail("no PAPI event for " + name + ": is this the spc build?");
        }
        handles[i] = started_handle(session, kTable4[i]);
        ids[i] = spc_counter_find(kTable4[i]);
    }
    if (PAPI_start(event_set) != PAPI_OK) {
        fail("PAPI_start");
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
