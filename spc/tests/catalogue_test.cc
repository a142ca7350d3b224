// The catalogue: upstream's names in upstream's order, plus OOS_MATCH_TIME;
// every counter in exactly one leaf category; a well-formed category tree.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "spc/spc.h"
#include "../src/internal.hpp"

namespace {

bool is_leaf(int category)
{
    for (const spc_category_info &other : spc_categories) {
        if (&other - spc_categories != category && other.parent == category) {
            return false;
        }
    }
    return true;
}

TEST(Catalogue, HoldsUpstreamCountersInUpstreamOrderPlusOosMatchTime)
{
    // Upstream 4.1.4 has 108 counters, SEND first and MAX_OOS_IN_QUEUE last
    // (ompi/runtime/ompi_spc.h:52-161); the paper's OOS_MATCH_TIME follows.
    ASSERT_EQ(OMPI_SPC_NUM_COUNTERS, 109);
    EXPECT_EQ(OMPI_SPC_SEND, 0);
    EXPECT_EQ(OMPI_SPC_CANCEL, 94);
    EXPECT_EQ(OMPI_SPC_BYTES_RECEIVED_USER, 95);
    EXPECT_EQ(OMPI_SPC_MAX_OOS_IN_QUEUE, 107);
    EXPECT_EQ(OMPI_SPC_OOS_MATCH_TIME, 108);
    EXPECT_STREQ(spc_counters[OMPI_SPC_SENDRECV_REPLACE].name, "OMPI_SPC_SENDRECV_REPLACE");
    EXPECT_STREQ(spc_counters[OMPI_SPC_SEND].description, "The number of times MPI_Send was called.");
    EXPECT_STREQ(spc_counters[OMPI_SPC_NEIGHBOR_ALLGATHERV_INIT].description,
                 "The number of times MPIX_Neighbor_allgatherv_init was called.");
}

TEST(Catalogue, NamesAreUniqueAndDescribed)
{
    std::set<std::string> names;
    for (const spc_counter_info &counter : spc_counters) {
        EXPECT_TRUE(names.insert(counter.name).second) << counter.name;
        EXPECT_EQ(std::string(counter.name).rfind("OMPI_SPC_", 0), 0u) << counter.name;
        EXPECT_GT(std::string(counter.description).size(), 20u) << counter.name;
    }
    for (const spc_category_info &category : spc_categories) {
        EXPECT_TRUE(names.insert(category.name).second) << category.name;
        EXPECT_GT(std::string(category.description).size(), 10u) << category.name;
        EXPECT_EQ(spc_counter_find(category.name), -1) << category.name;
    }
}

TEST(Catalogue, EveryCounterSitsInOneLeafUnderTheRoot)
{
    for (const spc_counter_info &counter : spc_counters) {
        EXPECT_TRUE(is_leaf(counter.category)) << counter.name;
        EXPECT_TRUE(spc::category_contains(SPC_CATEGORY_spc, counter.category)) << counter.name;
    }
    EXPECT_EQ(spc_categories[SPC_CATEGORY_spc].parent, SPC_CATEGORY_spc);
    EXPECT_STREQ(spc_categories[SPC_CATEGORY_spc].name, "spc");
    for (int id = 1; id < SPC_NUM_CATEGORIES; ++id) {
        EXPECT_EQ(spc_categories[id].parent, SPC_CATEGORY_spc) << "one level, as Open MPI nests";
        EXPECT_EQ(std::string(spc_categories[id].name).rfind("spc_", 0), 0u);
    }
}

TEST(Catalogue, KindsUnitsAndWatermarkLinks)
{
    EXPECT_EQ(spc_counters[OMPI_SPC_SEND].kind, SPC_KIND_COUNTER);
    EXPECT_EQ(spc_counters[OMPI_SPC_BYTES_SENT_USER].kind, SPC_KIND_AGGREGATE);
    EXPECT_EQ(spc_counters[OMPI_SPC_BYTES_SENT_USER].unit, SPC_UNIT_BYTES);
    EXPECT_EQ(spc_counters[OMPI_SPC_MATCH_TIME].kind, SPC_KIND_TIMER);
    EXPECT_EQ(spc_counters[OMPI_SPC_OOS_MATCH_TIME].unit, SPC_UNIT_MICROSECONDS);
    EXPECT_EQ(spc_counters[OMPI_SPC_UNEXPECTED_IN_QUEUE].kind, SPC_KIND_LEVEL);
    EXPECT_EQ(spc_counters[OMPI_SPC_MAX_UNEXPECTED_IN_QUEUE].level, OMPI_SPC_UNEXPECTED_IN_QUEUE);
    EXPECT_EQ(spc_counters[OMPI_SPC_MAX_OOS_IN_QUEUE].level, OMPI_SPC_OOS_IN_QUEUE);
    for (const spc_counter_info &counter : spc_counters) {
        bool watermark = counter.kind == SPC_KIND_HIGHWATERMARK;
        EXPECT_EQ(counter.level >= 0, watermark) << counter.name;
        if (watermark) {
            EXPECT_EQ(spc_counters[counter.level].kind, SPC_KIND_LEVEL) << counter.name;
        }
    }
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
    EXPECT_EQ(spc_category_find("spc_matching"), SPC_CATEGORY_spc_matching);
    EXPECT_EQ(spc_category_find("MATCHING"), SPC_CATEGORY_spc_matching);
    EXPECT_EQ(spc_category_find("spc"), SPC_CATEGORY_spc);
    EXPECT_EQ(spc_category_find("spc_"), -1);
    EXPECT_EQ(spc_category_find(nullptr), -1);
}

}  // namespace
