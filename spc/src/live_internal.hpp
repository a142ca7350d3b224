// What the counter storage (storage.cc) and the live segment (live.cc) share
// inside libspc: where a thread's block comes from while live is on, and
// the pages that hold the level lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <sys/types.h>

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

// What files beside the segment need (live_peers.cc): its folder, job, rank
// and size, and its file's group and mode; false while live is off, in a
// forked child, or before MPI_Init named the segment.
struct Identity {
    std::string folder, jobid;
    int rank = -1, size = -1;
    gid_t gid = 0;
    mode_t mode = 0600;
};
bool identity(Identity &who);
// spc_live_finalize's part for the peer files: removes them unless keep.
void peers_finalize(bool keep);
// spc_comm_create's storage of length peers (storage_bytes: the struct and
// its arrays) as a shared file while the peer files are on, else nullptr.
struct ::spc_comm *peers_create(int length, size_t storage_bytes);
// spc_comm_destroy's part: true if comm was a file (folded, removed, unmapped).
bool peers_destroy(struct ::spc_comm *comm);

}  // namespace spc::live
