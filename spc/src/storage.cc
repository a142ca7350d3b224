// Counter storage and reads.
//
// Sharded mode: each thread owns a block of counters that it alone writes
// (spc_thread_shard); a read sums the blocks of the live threads plus the
// totals folded in by threads that have exited.  Atomic mode: one counter per
// cache line in spc_shared, updated with an atomic add.  Both stores exist in
// every build and a read sums both, so tests and benchmarks can drive either
// mode in one binary; the build option only picks the one the update macros
// write to, and the other stays zero.  With live counters on (live.cc), new
// threads take their blocks from the live segment, and the level lines are
// the segment's pages.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "internal.hpp"
#include "live_internal.hpp"

extern "C" {
spc_level_pages spc_level_pages_;
static_assert(sizeof(spc_shared_line) == 64, "a counter's shared line is one cache line (SPC_WATERMARK_SLOTS)");
// The fast path's name for the level lines: the same bytes as spc_level_pages_.
extern struct spc_shared_line spc_shared[OMPI_SPC_NUM_COUNTERS] __attribute__((alias("spc_level_pages_")));
// C linkage: spc.h declares it.  Timers time every interval until told otherwise.
alignas(64) struct spc_flags spc_flags_ = {{}, {}, {}, {}, 1};
__thread uint64_t *spc_thread_shard __attribute__((tls_model("initial-exec"))) = nullptr;
}

namespace {

constexpr size_t kShardBytes = spc::live::kBlockBytes;  // whole cache lines

// Guards the list of live shards and the retired totals; never taken on the
// update path, only by thread start/exit and by reads.
struct Registry {
    std::mutex mutex;
    std::vector<uint64_t *> live;
    uint64_t retired[SPC_BLOCK_SLOTS] = {};  // counters and timed intervals of exited threads
    pthread_key_t exit_key;

    Registry() { pthread_key_create(&exit_key, fold_exiting_thread); }

    static void fold_exiting_thread(void *block);
};

// Never destroyed: threads may still exit, and fold their counts, while the
// process runs its static destructors.
Registry &registry()
{
    static Registry *instance = new Registry;
    return *instance;
}

uint64_t load(const uint64_t *counter) { return __atomic_load_n(counter, __ATOMIC_RELAXED); }

void Registry::fold_exiting_thread(void *block)
{
    auto *shard = static_cast<uint64_t *>(block);
    if (spc::live::release(shard)) {
        // A live block keeps its counts where readers sum them (and stays
        // in the list); the next new thread adds to them.
        spc_thread_shard = nullptr;
        return;
    }
    Registry &r = registry();
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        for (int slot = 0; slot < SPC_BLOCK_SLOTS; ++slot) {
            r.retired[slot] += load(&shard[slot]);
        }
        r.live.erase(std::find(r.live.begin(), r.live.end(), shard));
    }
    // A later TLS destructor of this thread that counts gets a fresh block
    // (and glibc calls this destructor again for it).
    spc_thread_shard = nullptr;
    std::free(shard);
}

// Sum of a block slot over all threads; caller holds the lock.
uint64_t summed_slot(const Registry &r, int slot)
{
    uint64_t total = r.retired[slot];
    for (const uint64_t *shard : r.live) {
        total += load(&shard[slot]);
    }
    return total;
}

// Sum of counter id over all threads and both stores; caller holds the lock.
uint64_t summed(const Registry &r, int id) { return summed_slot(r, id) + load(&spc_shared[id].value); }


bool valid_id(int id) { return id >= 0 && id < OMPI_SPC_NUM_COUNTERS; }

bool is_watermark(int id) { return valid_id(id) && spc_counter_infos[id].kind == SPC_KIND_HIGHWATERMARK; }

spc_shared_line &level_of(int watermark_id) { return spc_shared[spc_counter_infos[watermark_id].level]; }

int64_t load_signed(const int64_t *value) { return __atomic_load_n(value, __ATOMIC_RELAXED); }

}  // namespace

extern "C" {

uint64_t *spc_thread_shard_create(void)
{
    Registry &r = registry();
    spc::live::Block live = spc::live::acquire();
    if (live.block != nullptr) {
        uint64_t *shard = live.block;
        // Its slots keep what an exited thread counted.
        if (live.fresh) {
            std::lock_guard<std::mutex> lock(r.mutex);
            r.live.push_back(shard);
        }
        pthread_setspecific(r.exit_key, shard);
        spc_thread_shard = shard;
        return shard;
    }
    void *block = std::aligned_alloc(64, kShardBytes);
    if (block == nullptr) {
        // The update macros cannot report an error and must not crash MPI:
        // threads that cannot get a block share this one, where concurrent
        // updates may be lost.
        static uint64_t *shared_fallback = [&r] {
            alignas(64) static uint64_t block_of_last_resort[SPC_BLOCK_SLOTS];
            std::lock_guard<std::mutex> lock(r.mutex);
            r.live.push_back(block_of_last_resort);
            std::fputs("spc: out of memory for a thread's counters; counts of such threads "
                       "may be lost\n", stderr);
            return block_of_last_resort;
        }();
        spc_thread_shard = shared_fallback;
        return shared_fallback;
    }
    std::memset(block, 0, kShardBytes);
    auto *shard = static_cast<uint64_t *>(block);
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        r.live.push_back(shard);
    }
    pthread_setspecific(r.exit_key, shard);
    spc_thread_shard = shard;
    return shard;
}

uint64_t spc_read_raw(int id)
{
    if (!valid_id(id)) {
        return 0;
    }
    switch (spc_counter_infos[id].kind) {
    case SPC_KIND_LEVEL:
        return load(&spc_shared[id].value);
    case SPC_KIND_HIGHWATERMARK:
        return static_cast<uint64_t>(load_signed(&level_of(id).high[0]));
    default: {
        Registry &r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        return summed(r, id);
    }
    }
}

uint64_t spc_read(int id) { return spc_convert(id, spc_read_raw(id)); }

uint64_t spc_timer_intervals(int id)
{
    if (!valid_id(id) || spc_counter_infos[id].kind != SPC_KIND_TIMER) {
        return 0;
    }
    const int slot = spc_timed_slot_(id);
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    return summed_slot(r, slot);
}

size_t spc_read_all(uint64_t *values, size_t count)
{
    size_t n = std::min<size_t>(count, OMPI_SPC_NUM_COUNTERS);
    if (values == nullptr) {
        return 0;
    }
    uint64_t sums[OMPI_SPC_NUM_COUNTERS];
    {
        // Block by block, so each shard is walked once, in order.
        Registry &r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        for (size_t id = 0; id < n; ++id) {
            sums[id] = r.retired[id] + load(&spc_shared[id].value);
        }
        for (const uint64_t *shard : r.live) {
            for (size_t id = 0; id < n; ++id) {
                sums[id] += load(&shard[id]);
            }
        }
    }
    for (size_t id = 0; id < n; ++id) {
        spc_kind kind = spc_counter_infos[id].kind;
        uint64_t raw = kind == SPC_KIND_LEVEL || kind == SPC_KIND_HIGHWATERMARK
                           ? spc_read_raw(static_cast<int>(id))
                           : sums[id];
        values[id] = spc_convert(static_cast<int>(id), raw);
    }
    return n;
}

int spc_watermark_slot_acquire(int watermark_id)
{
    if (!is_watermark(watermark_id)) {
        return SPC_ERR_BAD_ID;
    }
    spc_shared_line &level = level_of(watermark_id);
    uint64_t in_use = __atomic_load_n(&level.reader_slots, __ATOMIC_RELAXED);
    for (;;) {
        int slot = 1;
        while (slot <= SPC_WATERMARK_SLOTS && (in_use & (uint64_t{1} << slot))) {
            ++slot;
        }
        if (slot > SPC_WATERMARK_SLOTS) {
            return SPC_ERR_NO_SLOT;
        }
        // Start at the current value before publishing the slot, so the
        // first raise sees a sensible floor.
        __atomic_store_n(&level.high[slot], static_cast<int64_t>(load(&level.value)),
                         __ATOMIC_RELAXED);
        if (__atomic_compare_exchange_n(&level.reader_slots, &in_use, in_use | (uint64_t{1} << slot),
                                        false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
            // A raise between our store and the publication went unseen.
            spc_raise_(&level.high[slot], static_cast<int64_t>(load(&level.value)));
            return slot;
        }
    }
}

static bool slot_in_use(int watermark_id, int slot)
{
    return is_watermark(watermark_id) && slot >= 1 && slot <= SPC_WATERMARK_SLOTS &&
           (__atomic_load_n(&level_of(watermark_id).reader_slots, __ATOMIC_RELAXED) &
            (uint64_t{1} << slot));
}

int spc_watermark_slot_reset(int watermark_id, int slot)
{
    if (!slot_in_use(watermark_id, slot)) {
        return SPC_ERR_BAD_ID;
    }
    spc_shared_line &level = level_of(watermark_id);
    __atomic_store_n(&level.high[slot], static_cast<int64_t>(load(&level.value)), __ATOMIC_RELAXED);
    return SPC_SUCCESS;
}

int spc_watermark_slot_release(int watermark_id, int slot)
{
    if (!slot_in_use(watermark_id, slot)) {
        return SPC_ERR_BAD_ID;
    }
    __atomic_fetch_and(&level_of(watermark_id).reader_slots, ~(uint64_t{1} << slot),
                       __ATOMIC_RELEASE);
    return SPC_SUCCESS;
}

uint64_t spc_watermark_slot_read(int watermark_id, int slot)
{
    if (!slot_in_use(watermark_id, slot)) {
        return 0;
    }
    return static_cast<uint64_t>(load_signed(&level_of(watermark_id).high[slot]));
}

}  // extern "C"
