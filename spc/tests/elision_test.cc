// Behaviour half of the elision check (the object-file half is
// check_elision.py): compiled out, no argument is evaluated.
#include <gtest/gtest.h>

#include "spc/spc.h"

extern "C" int elision_probe_off(void);
extern "C" int elision_probe_on(void);

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

}  // namespace
