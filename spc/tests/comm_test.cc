// Counters kept per communicator: the catalogue's SPC_PER_COMM rows, their
// storage, and sites that count into it only while the switch is on.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "spc/spc.h"

namespace {

TEST(CommCounters, RowsNameCatalogueCountersOnce)
{
    ASSERT_EQ(SPC_NUM_COMM_COUNTERS, 6);
    EXPECT_EQ(spc_comm_counter_infos[SPC_COMM_SEND].counter, OMPI_SPC_SEND);
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

// One switched site adding n to a communicator's counter, as Open MPI's are.
__attribute__((noinline)) void count_on(struct spc_comm *comm, int id, uint64_t n)
{
    SPC_SWITCHED(SPC_SWITCH_COMM_COUNTERS, spc_comm_add(comm, id, n));
}

TEST(CommCounters, CountOnlyWhileSwitchedOnAndOnlyWithStorage)
{
    struct spc_comm *a = spc_comm_create(), *b = spc_comm_create();
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

}  // namespace
