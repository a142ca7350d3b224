// Patched sites under fire: sites of two counters side by side run in 4
// threads while a fifth turns one of them on and off 100,000 times.  Run
// twice by meson: patched, and with SPC_SITES=flag (sites never change).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "spc/spc.h"

namespace {

constexpr int kA = OMPI_SPC_SEND, kB = OMPI_SPC_RECV;

// The only sites of this program: A's, then B's right behind it.
__attribute__((noinline)) uint64_t run_sites(const std::atomic<bool> &stop)
{
    uint64_t rounds = 0;
    while (!stop.load(std::memory_order_relaxed)) {
        SPC_RECORD(kA, 1);
        SPC_RECORD(kB, 1);
        ++rounds;
    }
    return rounds;
}

#if SPC_SITES_PATCHED
// A site's 5 bytes, read in assembly (ThreadSanitizer has no shadow for code).
std::array<unsigned char, 5> bytes_at(const unsigned char *at)
{
    std::array<unsigned char, 5> bytes;
    for (size_t i = 0; i < bytes.size(); ++i) {
        __asm__ volatile("movb %1, %0" : "=q"(bytes[i]) : "m"(at[i]));
    }
    return bytes;
}

const unsigned char *site_of(int id)
{
    for (const spc_site *site = __start_spc_sites; site < __stop_spc_sites; ++site) {
        if (site->id == id) {
            return reinterpret_cast<const unsigned char *>(&site->at) + site->at;
        }
    }
    return nullptr;
}
#endif

constexpr int kKey = SPC_SWITCH_COMM_COUNTERS;
std::atomic<int> switched_runs{0};

// The program's one switched site.
__attribute__((noinline)) void run_switched_site() { SPC_SWITCHED(kKey, switched_runs.fetch_add(1)); }

bool patched() { return spc_sites_kind() == SPC_SITES_KIND_PATCHED; }

TEST(Sites, OffSiteIsANoOpAndOnSiteAJump)
{
#if SPC_SITES_PATCHED
    const unsigned char *a = site_of(kA), *b = site_of(kB);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b - a, 5) << "the two sites must be neighbours for the stress test to mean anything";
    EXPECT_EQ((reinterpret_cast<uintptr_t>(b) & 63) + 5 <= 64, true) << "a site straddles a cache line";
    const std::array<unsigned char, 5> nop5 = {0x0f, 0x1f, 0x44, 0x00, 0x00};
    const bool nop_when_off = bytes_at(b) == nop5;
    spc_counter_enable(kB);
    const std::array<unsigned char, 5> on = bytes_at(b);
    int32_t displacement;
    std::memcpy(&displacement, &on[1], sizeof displacement);
    const bool jump_when_on = on[0] == 0xe9 && displacement > 0;  // forward, to the update code
    spc_counter_disable(kB);
    const bool nop_again = bytes_at(b) == nop5;
    if (patched()) {
        EXPECT_TRUE(nop_when_off && jump_when_on && nop_again);
    } else {  // the flag kind: compiled jumps, never rewritten
        EXPECT_FALSE(nop_when_off || nop_again);
        EXPECT_TRUE(jump_when_on);
    }
#else
    GTEST_FAIL() << "built with -Dsites=flag: run this test in a patched build";
#endif
}

// A switched site runs its code exactly while its switch is on, as counted
// ons and offs say, and is a no-op in the patched kind while off.
TEST(Sites, SwitchedSiteRunsItsCodeOnlyWhileOn)
{
    run_switched_site();
    EXPECT_EQ(switched_runs.load(), 0);
    ASSERT_EQ(spc_switch_on(kKey), SPC_SUCCESS);
    ASSERT_EQ(spc_switch_on(kKey), SPC_SUCCESS);
    run_switched_site();
    ASSERT_EQ(spc_switch_off(kKey), SPC_SUCCESS);
    run_switched_site();  // one on is left
    EXPECT_TRUE(spc_switch_is_on(kKey));
#if SPC_SITES_PATCHED
    const unsigned char *site = site_of(SPC_SWITCH_SITE_ID(kKey));
    ASSERT_NE(site, nullptr);
    EXPECT_EQ(bytes_at(site)[0], 0xe9) << "on: a jump";
#endif
    ASSERT_EQ(spc_switch_off(kKey), SPC_SUCCESS);
    run_switched_site();
    EXPECT_EQ(switched_runs.load(), 2);
    EXPECT_FALSE(spc_switch_is_on(kKey));
#if SPC_SITES_PATCHED
    const std::array<unsigned char, 5> nop5 = {0x0f, 0x1f, 0x44, 0x00, 0x00};
    EXPECT_EQ(bytes_at(site) == nop5, patched()) << "off: a no-op in the patched kind only";
#endif
    EXPECT_EQ(spc_switch_off(kKey), SPC_ERR_NOT_ENABLED);
    EXPECT_EQ(spc_switch_on(SPC_NUM_SWITCHES), SPC_ERR_BAD_ID);
    EXPECT_EQ(spc_switch_on(-1), SPC_ERR_BAD_ID);
    EXPECT_FALSE(spc_switch_is_on(SPC_NUM_SWITCHES));
}

TEST(Sites, PatchingOneCounterNeverDisturbsItsNeighbour)
{
    constexpr int kWorkers = 4, kToggles = 100000;
    const uint64_t a_before = spc_read(kA), b_before = spc_read(kB);
    spc_counter_enable(kA);
    std::atomic<bool> stop{false};
    std::vector<uint64_t> rounds(kWorkers);
    std::vector<std::thread> workers;
    for (int w = 0; w < kWorkers; ++w) {
        workers.emplace_back([&, w] { rounds[w] = run_sites(stop); });
    }
    for (int toggle = 0; toggle < kToggles; ++toggle) {
        spc_counter_enable(kB);
        spc_counter_disable(kB);
    }
    stop = true;
    uint64_t total = 0;
    for (int w = 0; w < kWorkers; ++w) {
        workers[w].join();
        total += rounds[w];
    }
    spc_counter_disable(kA);
    EXPECT_EQ(spc_read(kA) - a_before, total) << "A's count must be exact";
    EXPECT_LE(spc_read(kB) - b_before, total);
    std::printf("%s sites: %llu rounds of A and B, B counted %llu during %d toggles\n",
                patched() ? "patched" : "flag", static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(spc_read(kB) - b_before), kToggles);
}

}  // namespace
