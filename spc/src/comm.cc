// Storage of the counters kept per communicator (spc.h, "Counters bound to
// communicators"); the communicator's owner (Open MPI's PML) holds it.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "internal.hpp"
#include "live_internal.hpp"

namespace {

// The struct, then its peer arrays, in one block, so one free releases all.
size_t storage_bytes(int peers)
{
    const size_t bytes = sizeof(spc_comm) + sizeof(uint64_t) * SPC_NUM_PEER_COUNTERS * static_cast<size_t>(peers);
    return (bytes + alignof(spc_comm) - 1) / alignof(spc_comm) * alignof(spc_comm);
}

// Storage this large comes from mmap: zero pages that the kernel backs only
// once written, so a communicator of 100,000 ranks (6.4 MB of arrays) costs
// the pages its traffic touches, not its length.  Smaller storage is zeroed
// by hand: a page each would be more than it needs.
constexpr size_t kMappedFrom = 64 * 1024;

size_t peer_histogram_bytes(int peers)
{
    return sizeof(uint64_t) * SPC_NUM_HISTOGRAMS * SPC_HISTOGRAM_BINS * static_cast<size_t>(peers);
}

// Zeroed bytes, mapped from kMappedFrom on; nullptr when out of memory.
void *zeroed(size_t bytes, size_t alignment)
{
    if (bytes >= kMappedFrom) {
        void *block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return block == MAP_FAILED ? nullptr : block;
    }
    void *block = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    if (block != nullptr) {
        std::memset(block, 0, bytes);
    }
    return block;
}

void release(void *block, size_t bytes)
{
    if (bytes >= kMappedFrom) {
        munmap(block, bytes);
    } else {
        std::free(block);
    }
}

}  // namespace

extern "C" {

uint64_t spc_histograms[SPC_NUM_HISTOGRAMS][SPC_HISTOGRAM_BINS];

void spc_histogram_bin_name(int id, int bin, char *name, size_t size)
{
    std::snprintf(name, size, "%s_BIN%d", spc_histogram_infos[id].name, bin);
}

void spc_histogram_bin_description(int id, int bin, char *description, size_t size)
{
    if (bin == 0) {
        std::snprintf(description, size, "%s Bin 0: messages of 0 bytes.", spc_histogram_infos[id].description);
    } else {
        std::snprintf(description, size, "%s Bin %d: messages of 2^%d to 2^%d - 1 bytes.",
                      spc_histogram_infos[id].description, bin, bin - 1, bin);
    }
}

struct spc_comm *spc_comm_create(int peers)
{
    if (peers < 0) {
        return nullptr;
    }
    // live with traffic: a file outside readers map (live_peers.cc)
    if (spc_comm *shared = spc::live::peers_create(peers, storage_bytes(peers))) {
        return shared;
    }
    void *block = zeroed(storage_bytes(peers), alignof(spc_comm));
    if (block == nullptr) {
        return nullptr;
    }
    auto *comm = static_cast<spc_comm *>(block);
    comm->peers = peers;
    comm->peer = reinterpret_cast<uint64_t *>(comm + 1);
    return comm;
}

void spc_comm_destroy(struct spc_comm *comm)
{
    if (comm == nullptr) {
        return;
    }
    if (comm->peer_histogram != nullptr) {
        release(comm->peer_histogram, peer_histogram_bytes(comm->peers));
    }
    if (!spc::live::peers_destroy(comm)) {
        release(comm, storage_bytes(comm->peers));
    }
}

int spc_comm_keep_peer_histograms(struct spc_comm *comm)
{
    if (comm == nullptr) {
        return -1;
    }
    if (__atomic_load_n(&comm->peer_histogram, __ATOMIC_ACQUIRE) != nullptr) {
        return 0;
    }
    auto *arrays = static_cast<uint64_t *>(zeroed(peer_histogram_bytes(comm->peers), alignof(uint64_t)));
    if (arrays == nullptr) {
        return -1;
    }
    __atomic_store_n(&comm->peer_histogram, arrays, __ATOMIC_RELEASE);
    return 0;
}

void spc_comm_read_peer_histograms(const struct spc_comm *comm, int id, uint64_t *values)
{
    if (comm == nullptr || id < 0 || id >= SPC_NUM_HISTOGRAMS) {
        return;
    }
    const size_t length = static_cast<size_t>(comm->peers) * SPC_HISTOGRAM_BINS;
    const uint64_t *arrays = __atomic_load_n(&comm->peer_histogram, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < length; ++i) {
        values[i] = arrays != nullptr ? __atomic_load_n(&arrays[static_cast<size_t>(id) * length + i], __ATOMIC_RELAXED)
                                      : 0;
    }
}

uint64_t spc_comm_read(const struct spc_comm *comm, int id)
{
    if (comm == nullptr || id < 0 || id >= SPC_NUM_COMM_COUNTERS) {
        return 0;
    }
    return __atomic_load_n(&comm->value[id], __ATOMIC_RELAXED);
}

void spc_comm_read_peers(const struct spc_comm *comm, int id, uint64_t *values)
{
    if (comm == nullptr || id < 0 || id >= SPC_NUM_PEER_COUNTERS) {
        return;
    }
    const uint64_t *array = comm->peer + static_cast<size_t>(id) * static_cast<size_t>(comm->peers);
    for (int rank = 0; rank < comm->peers; ++rank) {
        values[rank] = __atomic_load_n(&array[rank], __ATOMIC_RELAXED);
    }
}

void spc_histogram_read(const struct spc_comm *comm, int id, uint64_t values[SPC_HISTOGRAM_BINS])
{
    if (id < 0 || id >= SPC_NUM_HISTOGRAMS) {
        return;
    }
    const uint64_t *bins = comm != nullptr ? comm->histogram[id] : spc_histograms[id];
    for (int bin = 0; bin < SPC_HISTOGRAM_BINS; ++bin) {
        values[bin] = __atomic_load_n(&bins[bin], __ATOMIC_RELAXED);
    }
}

}  // extern "C"
