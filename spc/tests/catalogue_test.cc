// The catalogue: upstream's names in upstream's order, then ours;
// every counter in exactly one leaf category; a well-formed category tree.
#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>

#include "spc/spc.h"
#include "../src/internal.hpp"

namespace {

bool is_leaf(int category)
{
    for (const spc_category_info &other : spc_category_infos) {
        if (&other - spc_category_infos != category && other.parent == category) {
            return false;
        }
    }
    return true;
}

TEST(Catalogue, HoldsUpstreamCountersInUpstreamOrderThenOurs)
{
    // Upstream 4.1.4 has 108 counters, SEND first and MAX_OOS_IN_QUEUE last
    // (ompi/runtime/ompi_spc.h:52-161); the paper's OOS_MATCH_TIME follows,
    // then the matched probes and MPI_Comm_dup, then the MPI 4.0 calls
    // Open MPI 5.0 counts (upstream 5.0.7's and v5.0.x's names), then the
    // one-sided accumulates (patch
    // "spc: count the MPI calls upstream leaves out" counts the three), then
    // time inside MPI: in all, 5 families, 31 calls, then coll tuned's
    // algorithms: 14 collectives, 66 algorithms, 13 byte counts (issue 35),
    // then the collectives by kind: 3 kinds, calls and bytes (issue 38).
    ASSERT_EQ(OMPI_SPC_NUM_COUNTERS, 249);
    EXPECT_EQ(OMPI_SPC_SEND, 0);
    EXPECT_EQ(OMPI_SPC_CANCEL, 94);
    EXPECT_EQ(OMPI_SPC_BYTES_RECEIVED_USER, 95);
    EXPECT_EQ(OMPI_SPC_MAX_OOS_IN_QUEUE, 107);
    EXPECT_EQ(OMPI_SPC_OOS_MATCH_TIME, 108);
    EXPECT_EQ(OMPI_SPC_MPROBE, 109);
    EXPECT_EQ(OMPI_SPC_IMRECV, 111);
    EXPECT_EQ(OMPI_SPC_COMM_DUP, 112);
    EXPECT_EQ(OMPI_SPC_ISENDRECV, 113);
    EXPECT_EQ(OMPI_SPC_PSEND_INIT, 120);
    EXPECT_EQ(OMPI_SPC_ACCUMULATE, 121);
    EXPECT_EQ(OMPI_SPC_COMPARE_AND_SWAP, 126);
    EXPECT_EQ(OMPI_SPC_MPI_TIME, 127);
    EXPECT_EQ(OMPI_SPC_SEND_TIME, 133);
    EXPECT_EQ(OMPI_SPC_FILE_WRITE_AT_ALL_TIME, 163);
    EXPECT_EQ(OMPI_SPC_TUNED_ALLGATHER_BYTES, 164);
    EXPECT_EQ(OMPI_SPC_TUNED_ALLGATHER_LINEAR, 165);
    EXPECT_EQ(OMPI_SPC_TUNED_SCATTER_LINEAR_NB, 242);
    EXPECT_EQ(OMPI_SPC_COLL_ONE_TO_ALL, 243);
    EXPECT_EQ(OMPI_SPC_COLL_ALL_TO_ALL_BYTES, 248);
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_COLL_ALL_TO_ONE_BYTES].kind, SPC_KIND_AGGREGATE);
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_COLL_ALL_TO_ONE].category, SPC_CATEGORY_COLLECTIVES);
    EXPECT_STREQ(spc_counter_infos[OMPI_SPC_TUNED_BCAST_BINOMIAL].description,
                 "MPI_Bcast calls coll tuned ran with its algorithm binomial (coll_tuned_bcast_algorithm 6).");
    EXPECT_STREQ(spc_counter_infos[OMPI_SPC_TUNED_BCAST_BYTES].description,
                 "Bytes of the MPI_Bcast calls coll tuned ran (count x the datatype's size).");
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_WAIT_TIME].kind, SPC_KIND_TIMER);
    EXPECT_STREQ(spc_counter_infos[OMPI_SPC_WAIT_TIME].description,
                 "The number of microseconds spent inside MPI_Wait, from its entry to its return (added to "
                 "COMPLETION_TIME and MPI_TIME too).");
    EXPECT_STREQ(spc_counter_infos[OMPI_SPC_PREADY_RANGE].description,
                 "The number of times MPI_Pready_range was called.");
    EXPECT_STREQ(spc_counter_infos[OMPI_SPC_SENDRECV_REPLACE].name, "OMPI_SPC_SENDRECV_REPLACE");
    EXPECT_STREQ(spc_counter_infos[OMPI_SPC_SEND].description, "The number of times MPI_Send was called.");
    EXPECT_STREQ(spc_counter_infos[OMPI_SPC_NEIGHBOR_ALLGATHERV_INIT].description,
                 "The number of times MPI_Neighbor_allgatherv_init (MPIX_Neighbor_allgatherv_init before "
                 "Open MPI 5.0) was called.");
}

TEST(Catalogue, NamesAreUniqueAndDescribed)
{
    std::set<std::string> names;
    for (const spc_counter_info &counter : spc_counter_infos) {
        EXPECT_TRUE(names.insert(counter.name).second) << counter.name;
        EXPECT_EQ(std::string(counter.name).rfind("OMPI_SPC_", 0), 0u) << counter.name;
        EXPECT_GT(std::string(counter.description).size(), 20u) << counter.name;
    }
    for (const spc_category_info &category : spc_category_infos) {
        EXPECT_TRUE(names.insert(category.name).second) << category.name;
        EXPECT_GT(std::string(category.description).size(), 10u) << category.name;
        EXPECT_EQ(spc_counter_find(category.name), -1) << category.name;
    }
}

TEST(Catalogue, EveryCounterSitsInOneLeafUnderTheRoot)
{
    for (const spc_counter_info &counter : spc_counter_infos) {
        EXPECT_TRUE(is_leaf(counter.category)) << counter.name;
        EXPECT_TRUE(spc::category_contains(SPC_CATEGORY_SPC, counter.category)) << counter.name;
    }
    EXPECT_EQ(spc_category_infos[SPC_CATEGORY_SPC].parent, SPC_CATEGORY_SPC);
    EXPECT_STREQ(spc_category_infos[SPC_CATEGORY_SPC].name, "spc");
    EXPECT_STREQ(spc_category_infos[SPC_CATEGORY_MPI_P2P].name, "spc_mpi_p2p");
    EXPECT_STREQ(spc_category_infos[SPC_CATEGORY_MATCHING].name, "spc_matching");
    for (int id = 1; id < SPC_NUM_CATEGORIES; ++id) {
        EXPECT_EQ(spc_category_infos[id].parent, SPC_CATEGORY_SPC) << "one level, as Open MPI nests";
        EXPECT_EQ(std::string(spc_category_infos[id].name).rfind("spc_", 0), 0u);
    }
}

TEST(Catalogue, KindsUnitsAndWatermarkLinks)
{
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_SEND].kind, SPC_KIND_COUNTER);
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_BYTES_SENT_USER].kind, SPC_KIND_AGGREGATE);
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_BYTES_SENT_USER].unit, SPC_UNIT_BYTES);
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_MATCH_TIME].kind, SPC_KIND_TIMER);
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_OOS_MATCH_TIME].unit, SPC_UNIT_MICROSECONDS);
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_UNEXPECTED_IN_QUEUE].kind, SPC_KIND_LEVEL);
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_MAX_UNEXPECTED_IN_QUEUE].level, OMPI_SPC_UNEXPECTED_IN_QUEUE);
    EXPECT_EQ(spc_counter_infos[OMPI_SPC_MAX_OOS_IN_QUEUE].level, OMPI_SPC_OOS_IN_QUEUE);
    int watermarks = 0;
    for (const spc_counter_info &counter : spc_counter_infos) {
        bool watermark = counter.kind == SPC_KIND_HIGHWATERMARK;
        watermarks += watermark;
        EXPECT_EQ(counter.level >= 0, watermark) << counter.name;
        if (watermark) {
            EXPECT_EQ(spc_counter_infos[counter.level].kind, SPC_KIND_LEVEL) << counter.name;
            EXPECT_EQ(counter.unit, spc_counter_infos[counter.level].unit) << counter.name;
        }
    }
    EXPECT_EQ(watermarks, SPC_NUM_WATERMARKS);
}

TEST(Catalogue, FindsNamesWithOrWithoutPrefixInAnyCase)
{
    EXPECT_EQ(spc_counter_find("OMPI_SPC_SEND"), OMPI_SPC_SEND);
    EXPECT_EQ(spc_counter_find("SEND"), OMPI_SPC_SEND);
    EXPECT_EQ(spc_counter_find("match_time"), OMPI_SPC_MATCH_TIME);
    EXPECT_EQ(spc_counter_find("OMPI_SPC_"), -1);
    EXPECT_EQ(spc_counter_find("SENDX"), -1);
    EXPECT_EQ(spc_counter_find(""), -1);
    EXPECT_EQ(spc_counter_find(nullptr), -1);
    EXPECT_EQ(spc_category_find("spc_matching"), SPC_CATEGORY_MATCHING);
    EXPECT_EQ(spc_category_find("MATCHING"), SPC_CATEGORY_MATCHING);
    EXPECT_EQ(spc_category_find("spc"), SPC_CATEGORY_SPC);
    EXPECT_EQ(spc_category_find("spc_"), -1);
    EXPECT_EQ(spc_category_find(nullptr), -1);
}

}  // namespace

// Open MPI's hook of a collective's dispatch finds the counter of algorithm
// k as SPC_TUNED_<COLL>_ALGORITHM_1 + k - 1 and checks k against the
// collective's algorithms: each row's number, in order, within them.
TEST(Catalogue, TunedAlgorithmsAreNumberedInOrder)
{
    // A table walked by one loop, not three checks a row expanded 66 times
    // (which outgrew GCC's variable tracking in the sanitizer build).
    struct Row {
        const char *name;
        int id, found_as, number, of_its_collective;
    };
    static const Row rows[] = {
#define SPC_TUNED_ALGORITHM(coll, name, function, param, number, algorithm)                   \
    {#name, OMPI_SPC_TUNED_##coll##_##name, SPC_TUNED_##coll##_ALGORITHM_1 + (number) - 1, (number), \
     SPC_TUNED_ALGORITHMS_OF_##coll},
#include "spc/catalogue.def"
    };
    for (const Row &row : rows) {
        EXPECT_EQ(row.id, row.found_as) << row.name;
        EXPECT_LE(row.number, row.of_its_collective) << row.name;
        EXPECT_EQ(spc_counter_infos[row.id].category, SPC_CATEGORY_ALGORITHMS) << row.name;
    }
    int algorithms = 0;
#define SPC_TUNED(coll, function, param, count, bytes, what) algorithms += count;
#include "spc/catalogue.def"
    EXPECT_EQ(std::size(rows), 66u);
    EXPECT_EQ(static_cast<size_t>(algorithms), std::size(rows));
    EXPECT_EQ(SPC_TUNED_BYTES_OF_BARRIER, -1);
    EXPECT_EQ(SPC_TUNED_BYTES_OF_SCAN, OMPI_SPC_TUNED_SCAN_BYTES);
}
