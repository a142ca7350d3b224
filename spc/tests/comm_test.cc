// Counters kept per communicator: the catalogue's SPC_PER_COMM and
// SPC_PER_PEER rows, their storage, and sites that count into it only while
// the switch is on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include <set>
#include <string>
#include <vector>

#include "spc/spc.h"

namespace {

TEST(CommCounters, RowsNameCatalogueCountersOnce)
{
    // 9 rows, the times of the 17 timed calls with a communicator and the
    // collectives by kind (3 kinds, calls and bytes)
    ASSERT_EQ(SPC_NUM_COMM_COUNTERS, 32);
    EXPECT_EQ(spc_comm_counter_infos[SPC_COMM_COLL_ONE_TO_ALL_BYTES].counter, OMPI_SPC_COLL_ONE_TO_ALL_BYTES);
    EXPECT_EQ(spc_comm_counter_infos[SPC_COMM_BARRIER_TIME].counter, OMPI_SPC_BARRIER_TIME);
    EXPECT_EQ(spc_comm_counter_infos[SPC_COMM_UNEXPECTED_IN_QUEUE].counter, OMPI_SPC_UNEXPECTED_IN_QUEUE);
    EXPECT_EQ(spc_comm_counter_infos[SPC_COMM_SEND].counter, OMPI_SPC_SEND);
    EXPECT_EQ(spc_comm_counter_infos[SPC_COMM_MATCH_TIME].counter, OMPI_SPC_MATCH_TIME);
    EXPECT_EQ(spc_comm_counter_infos[SPC_COMM_OUT_OF_SEQUENCE].counter, OMPI_SPC_OUT_OF_SEQUENCE);
    std::set<int> counters;
    for (const spc_comm_counter_info &info : spc_comm_counter_infos) {
        EXPECT_TRUE(counters.insert(info.counter).second) << info.counter;
        EXPECT_GT(std::string(info.where).size(), 20u);
    }
    EXPECT_EQ(spc_comm_counter_find("bytes_sent_user"), SPC_COMM_BYTES_SENT_USER);
    EXPECT_EQ(spc_comm_counter_find("OMPI_SPC_RECV"), SPC_COMM_RECV);
    EXPECT_EQ(spc_comm_counter_find("ISEND"), -1) << "a counter without a row";
    EXPECT_EQ(spc_comm_counter_find("no such counter"), -1);
}

// A match timed into a communicator, as ob1's are (patch
// "ob1: counters bound to communicators"); its start names timer Timed.
template <int Timed>
__attribute__((noinline)) void timed_match(struct spc_comm *comm)
{
    spc_timer_t timer = {0, 0};
    SPC_TIMER_START(Timed, &timer);
    SPC_TIMER_STOP_COMM(&timer, OMPI_SPC_MATCH_TIME, comm, SPC_COMM_MATCH_TIME);
}

TEST(CommCounters, MatchTimeGoesToTheCommunicatorOnlyWhileBothAreOn)
{
    struct spc_comm *comm = spc_comm_create(2);
    ASSERT_NE(comm, nullptr);
    timed_match<OMPI_SPC_MATCH_TIME>(comm);
    EXPECT_EQ(spc_comm_read(comm, SPC_COMM_MATCH_TIME), 0u) << "timers off";
    ASSERT_EQ(spc_counter_enable(OMPI_SPC_MATCH_TIME), SPC_SUCCESS);
    const uint64_t global_before = spc_read_raw(OMPI_SPC_MATCH_TIME);
    timed_match<OMPI_SPC_MATCH_TIME>(comm);
    EXPECT_EQ(spc_comm_read(comm, SPC_COMM_MATCH_TIME), 0u) << "communicator counters off";
    ASSERT_EQ(spc_switch_on(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    const uint64_t timed_before = spc_read_raw(OMPI_SPC_MATCH_TIME);
    for (int i = 0; i < 100; ++i) {
        timed_match<OMPI_SPC_MATCH_TIME>(comm);
    }
    const uint64_t in_comm = spc_comm_read(comm, SPC_COMM_MATCH_TIME);
    EXPECT_GT(in_comm, 0u);
    EXPECT_EQ(in_comm, spc_read_raw(OMPI_SPC_MATCH_TIME) - timed_before)
        << "the communicator gets exactly the intervals the process-wide timer got";
    EXPECT_GT(timed_before, global_before);
    ASSERT_EQ(spc_counter_enable(OMPI_SPC_OOS_MATCH_TIME), SPC_SUCCESS);
    timed_match<OMPI_SPC_OOS_MATCH_TIME>(comm);
    EXPECT_EQ(spc_comm_read(comm, SPC_COMM_MATCH_TIME), in_comm) << "another timer's interval";
    spc_counter_disable(OMPI_SPC_OOS_MATCH_TIME);
    spc_switch_off(SPC_SWITCH_COMM_COUNTERS);
    spc_counter_disable(OMPI_SPC_MATCH_TIME);
    spc_comm_destroy(comm);
}

// One switched site adding n to a communicator's counter, as Open MPI's are.
__attribute__((noinline)) void count_on(struct spc_comm *comm, int id, uint64_t n)
{
    SPC_SWITCHED(SPC_SWITCH_COMM_COUNTERS, spc_comm_add(comm, id, n));
}

TEST(CommCounters, CountOnlyWhileSwitchedOnAndOnlyWithStorage)
{
    struct spc_comm *a = spc_comm_create(4), *b = spc_comm_create(0);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
    count_on(a, SPC_COMM_SEND, 1);  // control: off, so nothing
    EXPECT_EQ(spc_comm_read(a, SPC_COMM_SEND), 0u);

    ASSERT_EQ(spc_switch_on(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    for (int i = 0; i < 7; ++i) {
        count_on(a, SPC_COMM_SEND, 1);
    }
    count_on(b, SPC_COMM_SEND, 3);
    count_on(a, SPC_COMM_BYTES_SENT_USER, 4000);
    count_on(nullptr, SPC_COMM_SEND, 1);  // a communicator nobody watches
    EXPECT_EQ(spc_comm_read(a, SPC_COMM_SEND), 7u);
    EXPECT_EQ(spc_comm_read(b, SPC_COMM_SEND), 3u);
    EXPECT_EQ(spc_comm_read(a, SPC_COMM_BYTES_SENT_USER), 4000u);
    EXPECT_EQ(spc_comm_read(b, SPC_COMM_BYTES_SENT_USER), 0u);
    EXPECT_EQ(spc_read(OMPI_SPC_SEND), 0u) << "the process-wide counter is not touched";

    ASSERT_EQ(spc_switch_off(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    count_on(a, SPC_COMM_SEND, 1);
    EXPECT_EQ(spc_comm_read(a, SPC_COMM_SEND), 7u) << "off again";
    EXPECT_EQ(spc_comm_read(a, SPC_NUM_COMM_COUNTERS), 0u) << "not an id";
    EXPECT_EQ(spc_comm_read(nullptr, SPC_COMM_SEND), 0u);
    spc_comm_destroy(a);
    spc_comm_destroy(b);
}

// The per-peer case: world rank 0 sends 5 messages of 1000 B to rank 2.
__attribute__((noinline)) void send_to(struct spc_comm *comm, int rank, uint64_t bytes)
{
    SPC_SWITCHED(SPC_SWITCH_COMM_COUNTERS, spc_comm_add_peer(comm, SPC_PEER_MESSAGES_SENT, rank, 1);
                 spc_comm_add_peer(comm, SPC_PEER_BYTES_SENT, rank, bytes));
}

TEST(CommCounters, PeerArraysHaveOneElementPerRank)
{
    EXPECT_EQ(SPC_NUM_PEER_COUNTERS, 12);
    EXPECT_STREQ(spc_peer_counter_infos[SPC_PEER_BYTES_RECEIVED].name, "OMPI_SPC_PEER_BYTES_RECEIVED");
    EXPECT_STREQ(spc_peer_counter_infos[SPC_PEER_OF_TAG(SPC_PEER_BYTES_RECEIVED, -17)].name,
                 "OMPI_SPC_PEER_INTERNAL_BYTES_RECEIVED");
    EXPECT_EQ(SPC_PEER_OF_TAG(SPC_PEER_MESSAGES_SENT, 0), SPC_PEER_MESSAGES_SENT) << "tag 0 is the user's";
    EXPECT_EQ(SPC_PEER_OF_TAG(SPC_PEER_MESSAGES_SENT, -1), SPC_PEER_INTERNAL_MESSAGES_SENT);
    EXPECT_EQ(spc_peer_counter_infos[SPC_PEER_BYTES_SENT].kind, SPC_KIND_AGGREGATE);
    EXPECT_STREQ(spc_peer_counter_infos[SPC_PEER_ONE_SIDED_OF(SPC_PEER_BYTES_RECEIVED)].name,
                 "OMPI_SPC_PEER_ONE_SIDED_BYTES_RECEIVED");
    EXPECT_TRUE(spc_peer_counter_infos[SPC_PEER_ONE_SIDED_MESSAGES_SENT].window);
    EXPECT_FALSE(spc_peer_counter_infos[SPC_PEER_INTERNAL_BYTES_RECEIVED].window);
    EXPECT_EQ(spc_comm_create(-1), nullptr);
    struct spc_comm *world = spc_comm_create(4);
    ASSERT_NE(world, nullptr);
    EXPECT_EQ(world->peers, 4);
    send_to(world, 2, 1000);  // control: off
    ASSERT_EQ(spc_switch_on(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    for (int i = 0; i < 5; ++i) {
        send_to(world, 2, 1000);
    }
    send_to(world, 4, 1);   // not a rank: ignored
    send_to(world, -1, 1);  // MPI_ANY_SOURCE before a match: ignored
    ASSERT_EQ(spc_switch_off(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    uint64_t values[4];
    spc_comm_read_peers(world, SPC_PEER_MESSAGES_SENT, values);
    EXPECT_EQ(std::vector<uint64_t>(values, values + 4), (std::vector<uint64_t>{0, 0, 5, 0}));
    spc_comm_read_peers(world, SPC_PEER_BYTES_SENT, values);
    EXPECT_EQ(std::vector<uint64_t>(values, values + 4), (std::vector<uint64_t>{0, 0, 5000, 0}));
    spc_comm_read_peers(world, SPC_PEER_MESSAGES_RECEIVED, values);
    EXPECT_EQ(std::vector<uint64_t>(values, values + 4), (std::vector<uint64_t>{0, 0, 0, 0}));
    spc_comm_destroy(world);
}

// This process's resident memory (/proc/self/statm: pages).
size_t resident_bytes()
{
    unsigned long size = 0, resident = 0;
    FILE *statm = std::fopen("/proc/self/statm", "r");
    if (statm != nullptr) {
        if (std::fscanf(statm, "%lu %lu", &size, &resident) != 2) {
            resident = 0;
        }
        std::fclose(statm);
    }
    return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Issue 36: a communicator of 100,000 ranks has 9.6 MB of peer arrays (user,
// internal and one-sided traffic), which cost memory only where its traffic
// wrote.  The control: writing every rank's two user send elements makes
// those two arrays (1.6 MB) resident.
TEST(CommCounters, LargeCommunicatorCostsOnlyThePagesItsTrafficTouches)
{
    constexpr int kRanks = 100000;
    const size_t arrays = sizeof(uint64_t) * SPC_NUM_PEER_COUNTERS * kRanks;
    const size_t before = resident_bytes();
    ASSERT_GT(before, 0u);
    struct spc_comm *comm = spc_comm_create(kRanks);
    ASSERT_NE(comm, nullptr);
    const size_t created = resident_bytes();
    ASSERT_EQ(spc_switch_on(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    send_to(comm, kRanks / 2, 100);
    const size_t one_peer = resident_bytes();
    for (int rank = 0; rank < kRanks; ++rank) {
        send_to(comm, rank, 1);
    }
    ASSERT_EQ(spc_switch_off(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    const size_t every_peer = resident_bytes();
    std::vector<uint64_t> bytes(kRanks);
    spc_comm_read_peers(comm, SPC_PEER_BYTES_SENT, bytes.data());
    EXPECT_EQ(bytes[kRanks / 2], 101u);
    EXPECT_EQ(bytes[0] + bytes[kRanks - 1], 2u);
    spc_comm_destroy(comm);
    std::printf("a communicator of %d ranks: %zu bytes of peer arrays; resident +%zu bytes when made, "
                "+%zu after one peer's send, +%zu after every peer's\n",
                kRanks, arrays, created - before, one_peer - before, every_peer - before);
    EXPECT_LT(created - before, size_t{512} * 1024) << "made: only its first page is written";
    EXPECT_LT(one_peer - created, size_t{64} * 1024) << "one peer's send: two elements' pages";
    const size_t two_arrays = sizeof(uint64_t) * 2 * kRanks;
    EXPECT_GT(every_peer - one_peer, two_arrays - two_arrays / 4) << "control: every user send element written";
}

__attribute__((noinline)) void message_of(struct spc_comm *comm, uint64_t bytes, int peer = 0)
{
    SPC_SWITCHED(SPC_SWITCH_COMM_COUNTERS, spc_histogram_add(comm, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, peer, bytes));
}

// The case: 0, 1, 2, 3, 4, 1023, 1024 B land in bins 0, 1, 2, 2,
// 3, 10, 11.
TEST(CommCounters, HistogramBinsByBitLength)
{
    EXPECT_EQ(SPC_HISTOGRAM_BINS, 65);
    EXPECT_EQ(spc_histogram_bin(0), 0);
    EXPECT_EQ(spc_histogram_bin(1), 1);
    EXPECT_EQ(spc_histogram_bin(3), 2);
    EXPECT_EQ(spc_histogram_bin(1023), 10);
    EXPECT_EQ(spc_histogram_bin(1024), 11);
    EXPECT_EQ(spc_histogram_bin(UINT64_MAX), 64);
    EXPECT_STREQ(spc_histogram_infos[SPC_HISTOGRAM_MESSAGE_SIZES_RECEIVED].name,
                 "OMPI_SPC_MESSAGE_SIZES_RECEIVED");

    struct spc_comm *a = spc_comm_create(2);
    ASSERT_NE(a, nullptr);
    uint64_t before[SPC_HISTOGRAM_BINS], after[SPC_HISTOGRAM_BINS], bins[SPC_HISTOGRAM_BINS];
    spc_histogram_read(nullptr, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, before);
    message_of(a, 5);  // control: off
    ASSERT_EQ(spc_switch_on(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    for (uint64_t bytes : {0, 1, 2, 3, 4, 1023, 1024}) {
        message_of(a, bytes);
    }
    message_of(nullptr, 1024);  // a communicator nobody watches: process-wide only
    ASSERT_EQ(spc_switch_off(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    spc_histogram_read(a, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, bins);
    spc_histogram_read(nullptr, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, after);
    std::vector<uint64_t> expected(SPC_HISTOGRAM_BINS, 0);
    expected[0] = expected[1] = expected[3] = expected[10] = expected[11] = 1;
    expected[2] = 2;
    EXPECT_EQ(std::vector<uint64_t>(bins, bins + SPC_HISTOGRAM_BINS), expected);
    expected[11] += 1;
    for (int bin = 0; bin < SPC_HISTOGRAM_BINS; ++bin) {
        EXPECT_EQ(after[bin] - before[bin], expected[bin]) << "process-wide bin " << bin;
    }
    spc_histogram_read(a, SPC_HISTOGRAM_MESSAGE_SIZES_RECEIVED, bins);
    EXPECT_EQ(std::vector<uint64_t>(bins, bins + SPC_HISTOGRAM_BINS), std::vector<uint64_t>(SPC_HISTOGRAM_BINS, 0));
    spc_comm_destroy(a);
}

// Histograms per peer only once asked for: before, a peer's messages are in
// the communicator's histogram alone; after, in their peer's too, by bin,
// and a peer outside the communicator's ranks in neither.
TEST(CommCounters, PeerHistogramsOnceAsked)
{
    constexpr int kPeers = 3;
    struct spc_comm *comm = spc_comm_create(kPeers);
    ASSERT_NE(comm, nullptr);
    std::vector<uint64_t> per_peer(kPeers * SPC_HISTOGRAM_BINS, 7);
    spc_comm_read_peer_histograms(comm, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, per_peer.data());
    EXPECT_EQ(per_peer, std::vector<uint64_t>(kPeers * SPC_HISTOGRAM_BINS, 0)) << "none kept: zeros";
    ASSERT_EQ(spc_switch_on(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    message_of(comm, 100, 1);  // before: not per peer
    ASSERT_EQ(spc_comm_keep_peer_histograms(comm), 0);
    ASSERT_EQ(spc_comm_keep_peer_histograms(comm), 0) << "asked twice: the same arrays";
    message_of(comm, 100, 1);
    message_of(comm, 100, 1);
    message_of(comm, 0, 2);
    message_of(comm, 1 << 20, 0);
    message_of(comm, 5, kPeers);  // outside the communicator: its histogram only
    message_of(comm, 5, -1);
    ASSERT_EQ(spc_switch_off(SPC_SWITCH_COMM_COUNTERS), SPC_SUCCESS);
    spc_comm_read_peer_histograms(comm, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, per_peer.data());
    std::vector<uint64_t> expected(kPeers * SPC_HISTOGRAM_BINS, 0);
    expected[1 * SPC_HISTOGRAM_BINS + spc_histogram_bin(100)] = 2;
    expected[2 * SPC_HISTOGRAM_BINS + 0] = 1;
    expected[0 * SPC_HISTOGRAM_BINS + 21] = 1;
    EXPECT_EQ(per_peer, expected);
    spc_comm_read_peer_histograms(comm, SPC_HISTOGRAM_MESSAGE_SIZES_RECEIVED, per_peer.data());
    EXPECT_EQ(per_peer, std::vector<uint64_t>(kPeers * SPC_HISTOGRAM_BINS, 0)) << "the other direction";
    uint64_t bins[SPC_HISTOGRAM_BINS];
    spc_histogram_read(comm, SPC_HISTOGRAM_MESSAGE_SIZES_SENT, bins);
    EXPECT_EQ(bins[spc_histogram_bin(100)], 3u) << "the communicator's own has every message";
    EXPECT_EQ(bins[spc_histogram_bin(5)], 2u);
    spc_comm_destroy(comm);
    EXPECT_EQ(spc_comm_keep_peer_histograms(nullptr), -1);
}

}  // namespace
