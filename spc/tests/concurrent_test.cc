// Exact totals under concurrency, in both storage modes, including threads
// that exit before the read; levels and watermarks under concurrent change.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "spc/spc.h"

namespace {

// Lets threads that must stay alive across a read wait for it.
class Gate {
public:
    void open()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        open_ = true;
        opened_.notify_all();
    }
    void wait()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        opened_.wait(lock, [this] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable opened_;
    bool open_ = false;
};

class Countdown {
public:
    explicit Countdown(int n) : left_(n) {}
    void arrive_and_wait()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        if (--left_ == 0) {
            zero_.notify_all();
        }
        zero_.wait(lock, [this] { return left_ == 0; });
    }
    void wait()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        zero_.wait(lock, [this] { return left_ == 0; });
    }
    void arrive()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--left_ == 0) {
            zero_.notify_all();
        }
    }

private:
    std::mutex mutex_;
    std::condition_variable zero_;
    int left_;
};

using AddFunction = void (*)(int, uint64_t);

// The macro takes constant ids only: one site per counter the test counts.
void add_through_macro(int id, uint64_t n)
{
    switch (id) {
    case OMPI_SPC_SEND: SPC_RECORD(OMPI_SPC_SEND, n); break;
    case OMPI_SPC_ISEND: SPC_RECORD(OMPI_SPC_ISEND, n); break;
    case OMPI_SPC_BYTES_SENT_USER: SPC_RECORD(OMPI_SPC_BYTES_SENT_USER, n); break;
    default: ADD_FAILURE() << "no site for counter " << id;
    }
}

struct Mode {
    const char *name;
    AddFunction add;
};

class ExactTotals : public ::testing::TestWithParam<Mode> {};

constexpr int kThreads = 8;
constexpr uint64_t kUpdates = 1000000;
const int kCounted[] = {OMPI_SPC_SEND, OMPI_SPC_ISEND, OMPI_SPC_BYTES_SENT_USER};

// Half the threads exit before the read (their counts must have been folded
// into the retired totals), half stay alive until after it.
TEST_P(ExactTotals, EightThreadsMillionUpdatesEach)
{
    const AddFunction add = GetParam().add;
    uint64_t before[OMPI_SPC_NUM_COUNTERS];
    spc_read_all(before, OMPI_SPC_NUM_COUNTERS);
    for (int id : kCounted) {
        spc_counter_enable(id);
    }

    // The byte amount of update i of thread t; summed separately below.
    auto bytes_of = [](int t, uint64_t i) { return (i * 7 + static_cast<uint64_t>(t)) % 4096; };

    Gate read_done;
    Countdown all_counted(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (uint64_t i = 0; i < kUpdates; ++i) {
                add(OMPI_SPC_SEND, 1);
                add(OMPI_SPC_BYTES_SENT_USER, bytes_of(t, i));
                if (i % 3 == 0) {
                    add(OMPI_SPC_ISEND, 1);
                }
            }
            all_counted.arrive();
            if (t % 2 == 0) {
                read_done.wait();
            }
        });
    }
    for (int t = 1; t < kThreads; t += 2) {
        threads[t].join();  // the odd threads have exited
    }
    all_counted.wait();

    uint64_t after[OMPI_SPC_NUM_COUNTERS];
    spc_read_all(after, OMPI_SPC_NUM_COUNTERS);
    uint64_t send_alone = spc_read(OMPI_SPC_SEND);
    read_done.open();
    for (int t = 0; t < kThreads; t += 2) {
        threads[t].join();
    }
    uint64_t after_all_exited = spc_read(OMPI_SPC_SEND);

    uint64_t expected_bytes = 0;
    for (int t = 0; t < kThreads; ++t) {
        for (uint64_t i = 0; i < kUpdates; ++i) {
            expected_bytes += bytes_of(t, i);
        }
    }
    const uint64_t expected_sends = kThreads * kUpdates;
    const uint64_t expected_isends = kThreads * ((kUpdates + 2) / 3);
    EXPECT_EQ(after[OMPI_SPC_SEND] - before[OMPI_SPC_SEND], expected_sends);
    EXPECT_EQ(send_alone - before[OMPI_SPC_SEND], expected_sends);
    EXPECT_EQ(after_all_exited - before[OMPI_SPC_SEND], expected_sends);
    EXPECT_EQ(after[OMPI_SPC_ISEND] - before[OMPI_SPC_ISEND], expected_isends);
    EXPECT_EQ(after[OMPI_SPC_BYTES_SENT_USER] - before[OMPI_SPC_BYTES_SENT_USER], expected_bytes);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (id != OMPI_SPC_SEND && id != OMPI_SPC_ISEND && id != OMPI_SPC_BYTES_SENT_USER) {
            EXPECT_EQ(after[id], before[id]) << spc_counter_infos[id].name;
        }
    }
    for (int id : kCounted) {
        spc_counter_disable(id);
    }
}

INSTANTIATE_TEST_SUITE_P(
    StorageModes, ExactTotals,
    ::testing::Values(Mode{"sharded", spc_sharded_add_}, Mode{"atomic", spc_atomic_add_},
                      Mode{"macro", add_through_macro}),
    [](const ::testing::TestParamInfo<Mode> &mode) { return std::string(mode.param.name); });

TEST(Record, CountsOnlyWhileEnabled)
{
    const uint64_t before = spc_read(OMPI_SPC_RECV);
    SPC_RECORD(OMPI_SPC_RECV, 1);
    EXPECT_EQ(spc_read(OMPI_SPC_RECV), before);
    spc_counter_enable(OMPI_SPC_RECV);
    SPC_RECORD(OMPI_SPC_RECV, 1);
    SPC_RECORD(OMPI_SPC_RECV, 1);
    spc_counter_disable(OMPI_SPC_RECV);
    SPC_RECORD(OMPI_SPC_RECV, 1);
    EXPECT_EQ(spc_read(OMPI_SPC_RECV), before + 2);
}

TEST(Record, UserOrMpiSplitsOnTheTag)
{
    spc_counter_enable(OMPI_SPC_BYTES_SENT_USER);
    spc_counter_enable(OMPI_SPC_BYTES_SENT_MPI);
    const uint64_t user = spc_read(OMPI_SPC_BYTES_SENT_USER);
    const uint64_t mpi = spc_read(OMPI_SPC_BYTES_SENT_MPI);
    SPC_USER_OR_MPI(0, 100, OMPI_SPC_BYTES_SENT_USER, OMPI_SPC_BYTES_SENT_MPI);
    SPC_USER_OR_MPI(42, 10, OMPI_SPC_BYTES_SENT_USER, OMPI_SPC_BYTES_SENT_MPI);
    SPC_USER_OR_MPI(-17, 1000, OMPI_SPC_BYTES_SENT_USER, OMPI_SPC_BYTES_SENT_MPI);
    EXPECT_EQ(spc_read(OMPI_SPC_BYTES_SENT_USER) - user, 110u);
    EXPECT_EQ(spc_read(OMPI_SPC_BYTES_SENT_MPI) - mpi, 1000u);
    spc_counter_disable(OMPI_SPC_BYTES_SENT_USER);
    spc_counter_disable(OMPI_SPC_BYTES_SENT_MPI);
}

// Each thread climbs to its own peak, waits until all are at their peaks
// (the level is then the sum of the peaks, the true maximum), and between
// those moments oscillates below its peak to race the compare-and-swap.
TEST(Watermark, EndsAtTheTrueMaximumUnderFourThreads)
{
    constexpr int kLevelThreads = 4;
    constexpr int kRounds = 200;
    const int peaks[kLevelThreads] = {3, 50, 7, 400};
    const int level = OMPI_SPC_UNEXPECTED_IN_QUEUE;
    const int watermark = OMPI_SPC_MAX_UNEXPECTED_IN_QUEUE;
    ASSERT_EQ(spc_read(level), 0u);
    ASSERT_EQ(spc_read(watermark), 0u);
    const int slot = spc_watermark_slot_acquire(watermark);
    ASSERT_GE(slot, 1);

    Countdown at_peak(kLevelThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kLevelThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < kRounds; ++round) {
                int height = round % peaks[t] + 1;
                for (int i = 0; i < height; ++i) {
                    SPC_LEVEL_ADD(level, 1);
                }
                for (int i = 0; i < height; ++i) {
                    SPC_LEVEL_ADD(level, -1);
                }
            }
            for (int i = 0; i < peaks[t]; ++i) {
                SPC_LEVEL_ADD(level, 1);
            }
            at_peak.arrive_and_wait();
            for (int i = 0; i < peaks[t]; ++i) {
                SPC_LEVEL_ADD(level, -1);
            }
        });
    }
    for (std::thread &thread : threads) {
        thread.join();
    }
    const uint64_t true_maximum = 3 + 50 + 7 + 400;
    EXPECT_EQ(spc_read(level), 0u);
    EXPECT_EQ(spc_read(watermark), true_maximum);
    EXPECT_EQ(spc_read(watermark), true_maximum) << "a read does not reset it";
    EXPECT_EQ(spc_watermark_slot_read(watermark, slot), true_maximum);

    // A reader's reset starts its own watermark over; the process-wide one stays.
    EXPECT_EQ(spc_watermark_slot_reset(watermark, slot), SPC_SUCCESS);
    EXPECT_EQ(spc_watermark_slot_read(watermark, slot), 0u);
    SPC_LEVEL_ADD(level, 2);
    SPC_LEVEL_ADD(level, -2);
    EXPECT_EQ(spc_watermark_slot_read(watermark, slot), 2u);
    EXPECT_EQ(spc_read(watermark), true_maximum);
    EXPECT_EQ(spc_watermark_slot_release(watermark, slot), SPC_SUCCESS);
}

TEST(Watermark, SlotsRunOutCleanlyAndRejectMisuse)
{
    const int watermark = OMPI_SPC_MAX_OOS_IN_QUEUE;
    std::vector<int> slots;
    for (int i = 0; i < SPC_WATERMARK_SLOTS; ++i) {
        int slot = spc_watermark_slot_acquire(watermark);
        ASSERT_GE(slot, 1);
        slots.push_back(slot);
    }
    EXPECT_EQ(spc_watermark_slot_acquire(watermark), SPC_ERR_NO_SLOT);
    EXPECT_EQ(spc_watermark_slot_acquire(OMPI_SPC_SEND), SPC_ERR_BAD_ID);
    EXPECT_EQ(spc_watermark_slot_acquire(OMPI_SPC_OOS_IN_QUEUE), SPC_ERR_BAD_ID);
    for (int slot : slots) {
        EXPECT_EQ(spc_watermark_slot_release(watermark, slot), SPC_SUCCESS);
    }
    EXPECT_EQ(spc_watermark_slot_release(watermark, slots[0]), SPC_ERR_BAD_ID) << "released twice";
    EXPECT_EQ(spc_watermark_slot_reset(watermark, 0), SPC_ERR_BAD_ID) << "slot 0 is process-wide";
    EXPECT_EQ(spc_watermark_slot_read(watermark, 99), 0u);
}

// A level must be right whenever a reader looks, so it is maintained even
// while nobody has enabled it.
TEST(Level, IsMaintainedWhetherEnabledOrNot)
{
    const int level = OMPI_SPC_OOS_IN_QUEUE;
    ASSERT_FALSE(spc_counter_is_enabled(level));
    const uint64_t before = spc_read(level);
    SPC_LEVEL_ADD(level, 5);
    EXPECT_EQ(spc_read(level), before + 5);
    SPC_LEVEL_ADD(level, -5);
    EXPECT_EQ(spc_read(level), before);
}

// A communicator's storage shared by four threads (MPI_THREAD_MULTIPLE):
// no add is lost, in its counters, peer arrays and histograms.
TEST(CommStorage, ThreadsSharingOneCommunicatorLoseNothing)
{
    struct spc_comm *comm = spc_comm_create(2);
    ASSERT_NE(comm, nullptr);
    ASSERT_EQ(spc_comm_keep_peer_histograms(comm), 0);
    constexpr int threads = 4, adds = 100000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([comm, t] {
            for (int i = 0; i < adds; ++i) {
                spc_comm_add(comm, SPC_COMM_SEND, 1);
                spc_comm_add_peer(comm, SPC_PEER_BYTES_SENT, t % 2, 3);
                spc_histogram_add(comm, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, t % 2, 4);
            }
        });
    }
    for (std::thread &w : workers) {
        w.join();
    }
    EXPECT_EQ(spc_comm_read(comm, SPC_COMM_SEND), uint64_t{threads} * adds);
    uint64_t peers[2], bins[SPC_HISTOGRAM_BINS];
    spc_comm_read_peers(comm, SPC_PEER_BYTES_SENT, peers);
    EXPECT_EQ(peers[0], uint64_t{threads / 2} * adds * 3);
    EXPECT_EQ(peers[1], uint64_t{threads / 2} * adds * 3);
    spc_histogram_read(comm, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, bins);
    EXPECT_EQ(bins[3], uint64_t{threads} * adds);
    uint64_t per_peer[2 * SPC_HISTOGRAM_BINS];
    spc_comm_read_peer_histograms(comm, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, per_peer);
    EXPECT_EQ(per_peer[3], uint64_t{threads / 2} * adds);
    EXPECT_EQ(per_peer[SPC_HISTOGRAM_BINS + 3], uint64_t{threads / 2} * adds);
    spc_comm_destroy(comm);
}

TEST(Read, RejectsBadIdsAndBuffers)
{
    EXPECT_EQ(spc_read(-1), 0u);
    EXPECT_EQ(spc_read(OMPI_SPC_NUM_COUNTERS), 0u);
    EXPECT_EQ(spc_read_all(nullptr, 10), 0u);
    uint64_t three[3];
    EXPECT_EQ(spc_read_all(three, 3), 3u);
    std::vector<uint64_t> more(OMPI_SPC_NUM_COUNTERS + 5, 7);
    EXPECT_EQ(spc_read_all(more.data(), more.size()), size_t{OMPI_SPC_NUM_COUNTERS});
    EXPECT_EQ(more[OMPI_SPC_NUM_COUNTERS], 7u) << "nothing written past the counters";
}

}  // namespace
