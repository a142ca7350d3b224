// What the counter storage (storage.cc) and the live segment (live.cc) share
// inside libspc: where a thread's block comes from while live is on, and
// the pages that hold the level lines.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spc/spc.h"

// The level lines (spc_shared) are an alias of this object, which is
// page-aligned and fills whole pages, so that live mode can map the
// segment's level pages over it without touching anything else.
constexpr size_t kLevelPageBytes = 4096;
struct alignas(kLevelPageBytes) spc_level_pages {
    spc_shared_line lines[OMPI_SPC_NUM_COUNTERS];
};
extern "C" spc_level_pages spc_level_pages_ __attribute__((visibility("hidden")));

namespace spc::live {

// A thread's block: its slots in whole cache lines.
constexpr size_t kBlockBytes = (SPC_BLOCK_SLOTS * sizeof(uint64_t) + 63) / 64 * 64;

struct Block {
    uint64_t *block;  // nullptr: live is off, or the segment has no block left
    bool fresh;       // first use of this block (else it holds an exited thread's counts)
};

// A block of the segment for a new thread.
Block acquire();
// Called for an exiting thread's block: true if it is the segment's, which
// keeps its counts and goes to the next new thread.
bool release(uint64_t *block);

}  // namespace spc::live
