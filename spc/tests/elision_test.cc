// Behaviour half of the elision check (the object-file half is
// check_elision.py): compiled out, no argument is evaluated.
#include <gtest/gtest.h>

#include "spc/spc.h"

extern "C" int elision_probe_off(void);
extern "C" int elision_probe_on(void);
extern "C" int elision_probe_off_around(void);
extern "C" int elision_probe_on_around(void);

namespace {

const int kProbed[] = {OMPI_SPC_SEND, OMPI_SPC_BYTES_SENT_USER, OMPI_SPC_BYTES_SENT_MPI,
                       OMPI_SPC_MATCH_TIME};

TEST(Elision, CompiledOutEvaluatesNoArgument)
{
    for (int id : kProbed) {
        spc_counter_enable(id);
    }
    EXPECT_EQ(elision_probe_off(), 0);
    for (int id : kProbed) {
        spc_counter_disable(id);
    }
}

// The control: the same source compiled in, its counters on.  Arguments of
// a counter that is off may go unevaluated; a level's always are.
TEST(Elision, CompiledInEvaluatesEachArgumentOnceWhileOn)
{
    for (int id : kProbed) {
        spc_counter_enable(id);
    }
    EXPECT_EQ(elision_probe_on(), 4);
    for (int id : kProbed) {
        spc_counter_disable(id);
    }
}

// A hook around a statement keeps the statement when compiled out, and
// runs its code instead only compiled in, while the hook is on.
TEST(Elision, HookAroundLeavesItsStatementCompiledOut)
{
    const int consumer = OMPI_SPC_SEND;
    ASSERT_EQ(spc_hook_define(5, &consumer, 1), SPC_SUCCESS);
    EXPECT_EQ(elision_probe_on_around(), 5) << "the hook is off";
    spc_counter_enable(consumer);
    EXPECT_EQ(elision_probe_off_around(), 5);
    EXPECT_EQ(elision_probe_on_around(), 6);
    spc_counter_disable(consumer);
    EXPECT_EQ(elision_probe_on_around(), 5);
    ASSERT_EQ(spc_hook_define(5, nullptr, 0), SPC_SUCCESS);
}

}  // namespace
