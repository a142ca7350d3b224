// The "compiled out" case: this translation unit sees SPC_ENABLE 0 (set by
// bench/meson.build), exactly as Open MPI built without SPC would.
#include <benchmark/benchmark.h>

#include "spc/spc.h"

static_assert(SPC_ENABLE == 0, "bench/compiled_out.cc must be built with SPC compiled out");

static void BM_Update_CompiledOut(benchmark::State &state)
{
    for (auto _ : state) {
        SPC_RECORD(OMPI_SPC_SEND, 1);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(BM_Update_CompiledOut);
