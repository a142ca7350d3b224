// Behaviour half of the elision check (the object-file half is
// check_elision.py): compiled out, no argument is evaluated.
#include <gtest/gtest.h>

extern "C" int elision_probe_off(void);
extern "C" int elision_probe_on(void);

TEST(Elision, CompiledOutEvaluatesNoArgument) { EXPECT_EQ(elision_probe_off(), 0); }

TEST(Elision, CompiledInEvaluatesEachArgumentOnce) { EXPECT_EQ(elision_probe_on(), 8); }
