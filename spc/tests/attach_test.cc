// The mpi_spc_attach parser and spc_attach.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spc/spc.h"
#include "../src/internal.hpp"

namespace {

using spc::parse_attach_list;

std::vector<int> counters_in(spc_category_id category)
{
    std::vector<int> ids;
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (spc::category_contains(category, spc_counter_infos[id].category)) {
            ids.push_back(id);
        }
    }
    return ids;
}

TEST(AttachList, NamesWithAndWithoutPrefix)
{
    auto parsed = parse_attach_list("OMPI_SPC_SEND,RECV, bytes_sent_user ");
    EXPECT_EQ(parsed.counters,
              (std::vector<int>{OMPI_SPC_SEND, OMPI_SPC_RECV, OMPI_SPC_BYTES_SENT_USER}));
    EXPECT_TRUE(parsed.unknown.empty());
    EXPECT_TRUE(parsed.message.empty());
}

TEST(AttachList, AllNamesEveryCounterOnce)
{
    auto parsed = parse_attach_list("SEND, all ,SEND");
    ASSERT_EQ(parsed.counters.size(), size_t{OMPI_SPC_NUM_COUNTERS});
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        EXPECT_EQ(parsed.counters[id], id);
    }
}

TEST(AttachList, CategoriesExpandToTheirCounters)
{
    auto timers = parse_attach_list("spc_timers");
    EXPECT_EQ(timers.counters, (std::vector<int>{OMPI_SPC_MATCH_TIME, OMPI_SPC_OOS_MATCH_TIME}));
    EXPECT_EQ(timers.categories, (std::vector<int>{SPC_CATEGORY_TIMERS}));

    auto matching = parse_attach_list("matching");
    EXPECT_EQ(matching.counters,
              (std::vector<int>{OMPI_SPC_UNEXPECTED, OMPI_SPC_OUT_OF_SEQUENCE,
                                OMPI_SPC_UNEXPECTED_IN_QUEUE, OMPI_SPC_OOS_IN_QUEUE,
                                OMPI_SPC_MAX_UNEXPECTED_IN_QUEUE, OMPI_SPC_MAX_OOS_IN_QUEUE}));

    // The root takes its whole tree, as "all" does.
    auto everything = parse_attach_list("spc");
    EXPECT_EQ(everything.counters.size(), size_t{OMPI_SPC_NUM_COUNTERS});
    EXPECT_EQ(everything.counters, counters_in(SPC_CATEGORY_SPC));
    EXPECT_EQ(parse_attach_list("spc_mpi_wait").counters.size(), 8u);

    auto mixed = parse_attach_list("spc_mpi_rma,BYTES_PUT");
    EXPECT_EQ(mixed.counters, (std::vector<int>{OMPI_SPC_PUT, OMPI_SPC_RPUT, OMPI_SPC_GET,
                                                OMPI_SPC_RGET, OMPI_SPC_BYTES_PUT, OMPI_SPC_ACCUMULATE,
                                                OMPI_SPC_RACCUMULATE, OMPI_SPC_GET_ACCUMULATE,
                                                OMPI_SPC_RGET_ACCUMULATE, OMPI_SPC_FETCH_AND_OP,
                                                OMPI_SPC_COMPARE_AND_SWAP}));
    EXPECT_EQ(mixed.categories, (std::vector<int>{SPC_CATEGORY_MPI_RMA})) << "a counter names no category";
    EXPECT_TRUE(parse_attach_list("all").categories.empty()) << "all names the counters only";
}

TEST(AttachList, UnknownNamesAreReportedOnceAndTheRestStillApplies)
{
    auto parsed = parse_attach_list("SNED,RECV,bogus_counter");
    EXPECT_EQ(parsed.counters, (std::vector<int>{OMPI_SPC_RECV}));
    EXPECT_EQ(parsed.unknown, (std::vector<std::string>{"SNED", "bogus_counter"}));
    const std::string &m = parsed.message;
    EXPECT_NE(m.find("\"SNED\" (did you mean \"SEND\"?)"), std::string::npos) << m;
    EXPECT_NE(m.find("\"bogus_counter\""), std::string::npos) << m;
    EXPECT_EQ(m.find("\"bogus_counter\" (did you mean"), std::string::npos) << m;
    EXPECT_NE(m.find("\"all\""), std::string::npos) << m;
    EXPECT_NE(m.find("spc_matching"), std::string::npos) << m;
    EXPECT_NE(m.find("OOS_MATCH_TIME"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one message, one line";
}

TEST(AttachList, EmptyAndMalformedStrings)
{
    EXPECT_TRUE(parse_attach_list("").counters.empty());
    EXPECT_TRUE(parse_attach_list("").unknown.empty());
    EXPECT_TRUE(parse_attach_list(" , ,, ").counters.empty());
    EXPECT_TRUE(parse_attach_list(" , ,, ").unknown.empty());
    EXPECT_EQ(parse_attach_list("SEND,,RECV,").counters,
              (std::vector<int>{OMPI_SPC_SEND, OMPI_SPC_RECV}));

    // Other separators are not separators: the whole entry is one unknown name.
    auto spaced = parse_attach_list("SEND RECV");
    EXPECT_TRUE(spaced.counters.empty());
    EXPECT_EQ(spaced.unknown, (std::vector<std::string>{"SEND RECV"}));
    auto semicolon = parse_attach_list("SEND;RECV");
    EXPECT_EQ(semicolon.unknown, (std::vector<std::string>{"SEND;RECV"}));
    EXPECT_EQ(parse_attach_list("OMPI_SPC_").unknown, (std::vector<std::string>{"OMPI_SPC_"}));
    EXPECT_EQ(parse_attach_list("all_of_them").unknown, (std::vector<std::string>{"all_of_them"}));
}

TEST(Attach, EnablesKnownNamesAndWritesTheMessage)
{
    ASSERT_FALSE(spc_counter_is_enabled(OMPI_SPC_IBARRIER));
    char message[64];
    spc_attach_list attached;
    EXPECT_EQ(spc_attach("IBARRIER,NOPE", &attached, message, sizeof message), 1);
    EXPECT_TRUE(spc_counter_is_enabled(OMPI_SPC_IBARRIER));
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        EXPECT_EQ(attached.counters[id], id == OMPI_SPC_IBARRIER) << id;
    }
    EXPECT_EQ(std::string(message).size(), sizeof message - 1) << "truncated, terminated";
    EXPECT_EQ(std::string(message).rfind("mpi_spc_attach: unknown counter or category \"NOPE\"", 0), 0u)
        << message;
    EXPECT_EQ(spc_counter_disable(OMPI_SPC_IBARRIER), SPC_SUCCESS);
    EXPECT_FALSE(spc_counter_is_enabled(OMPI_SPC_IBARRIER));

    EXPECT_EQ(spc_attach(nullptr, nullptr, nullptr, 0), 0);
    EXPECT_EQ(spc_attach("", nullptr, message, sizeof message), 0);
    EXPECT_STREQ(message, "");
}

TEST(Enable, IsReferenceCounted)
{
    const int id = OMPI_SPC_ISCAN;
    EXPECT_EQ(spc_counter_disable(id), SPC_ERR_NOT_ENABLED);
    EXPECT_EQ(spc_counter_enable(id), SPC_SUCCESS);
    EXPECT_EQ(spc_counter_enable(id), SPC_SUCCESS);
    EXPECT_EQ(spc_counter_disable(id), SPC_SUCCESS);
    EXPECT_TRUE(spc_counter_is_enabled(id)) << "the other reader still holds it";
    EXPECT_EQ(spc_counter_disable(id), SPC_SUCCESS);
    EXPECT_FALSE(spc_counter_is_enabled(id));
    EXPECT_EQ(spc_counter_disable(id), SPC_ERR_NOT_ENABLED);
    EXPECT_EQ(spc_counter_enable(-1), SPC_ERR_BAD_ID);
    EXPECT_EQ(spc_counter_enable(OMPI_SPC_NUM_COUNTERS), SPC_ERR_BAD_ID);
    EXPECT_EQ(spc_counter_disable(OMPI_SPC_NUM_COUNTERS), SPC_ERR_BAD_ID);
    EXPECT_FALSE(spc_counter_is_enabled(-5));
}

}  // namespace

namespace {

TEST(AttachParse, ReportsTheChoiceWithoutEnabling)
{
    spc_attach_list list;
    char message[256];
    EXPECT_EQ(spc_attach_parse("spc_timers,nonsense", &list, message, sizeof message), 1);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        EXPECT_EQ(list.counters[id], id == OMPI_SPC_MATCH_TIME || id == OMPI_SPC_OOS_MATCH_TIME) << id;
        EXPECT_FALSE(spc_counter_is_enabled(id)) << id;
    }
    for (int id = 0; id < SPC_NUM_CATEGORIES; ++id) {
        EXPECT_EQ(list.categories[id], id == SPC_CATEGORY_TIMERS) << id;
    }
    // Open MPI's side asks whether "traffic" was named, in any spelling.
    EXPECT_EQ(spc_attach_parse(" Spc_Traffic , SEND", &list, nullptr, 0), 0);
    EXPECT_TRUE(list.categories[SPC_CATEGORY_TRAFFIC]);
    EXPECT_EQ(spc_attach_parse("all", &list, nullptr, 0), 0);
    EXPECT_FALSE(list.categories[SPC_CATEGORY_TRAFFIC]);
    EXPECT_EQ(spc_attach_parse(nullptr, &list, nullptr, 0), 0);
    EXPECT_EQ(spc_attach_parse("all", nullptr, nullptr, 0), 0);
}

}  // namespace

namespace {

// The help text (ompi_info's description of mpi_spc_attach) names every
// category and counter a user may write, and the variables' names.
TEST(AttachHelp, NamesEveryChoice)
{
    std::string help = spc_attach_help();
    EXPECT_NE(help.find("\"all\""), std::string::npos);
    for (const spc_category_info &category : spc_category_infos) {
        EXPECT_NE(help.find(category.name), std::string::npos) << category.name;
    }
    for (const spc_counter_info &counter : spc_counter_infos) {
        std::string name = counter.name + std::string(SPC_COUNTER_PREFIX).size();
        bool listed = help.find(" " + name + ",") != std::string::npos ||
                      help.find(" " + name + ".") != std::string::npos;
        EXPECT_TRUE(listed) << name;
    }
    EXPECT_NE(help.find("runtime_spc_OMPI_SPC_<NAME>"), std::string::npos);
    EXPECT_EQ(help, spc_attach_help()) << "one text, built once";
}

}  // namespace
