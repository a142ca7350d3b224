// The MPI_T event machinery (spc/src/event_*.c) alone,
// without Open MPI: dispatch to the lowest valid callback level, waiting
// events and safe points, exact dropped counts reported first, free
// callbacks after the last event, and the same while threads raise and a
// tool changes registrations (ThreadSanitizer runs the concurrent cases).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "spc/events.h"
#include "spc/spc.h"

namespace {

struct Data {
    int32_t value;
    int32_t pad;
    int64_t other;
};
const size_t kPlaces[] = {offsetof(Data, value), offsetof(Data, other)};
const size_t kSizes[] = {sizeof(int32_t), sizeof(int64_t)};
const spc_ev_type kTypes[] = {{2, kPlaces, kSizes, sizeof(Data)}, {2, kPlaces, kSizes, sizeof(Data)}};
constexpr int kCapacity = 4;
int object_a, object_b;  // what registrations are bound to

class Events : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_EQ(SPC_EV_OK, spc_ev_init(kTypes, 2, kCapacity));
        spc_ev_set_raise_safety(SPC_EV_MPI_RESTRICTED);
    }
    void TearDown() override { spc_ev_fini(); }
};

void raise_value(int type, const void *object, int32_t value)
{
    Data data{value, 0, -value};
    spc_ev_raise(type, object, &data);
}

struct Seen {
    std::vector<int32_t> values;
    std::vector<int> safeties;
    std::vector<uint64_t> ticks;
    std::vector<int> sources;
    long long dropped = 0;
    int dropped_calls = 0, events_before_drop_report = -1;
};

void record(spc_ev_instance *instance, spc_ev_registration *, int safety, void *user)
{
    auto *seen = static_cast<Seen *>(user);
    Data copy;
    int32_t value;
    int64_t other;
    uint64_t ticks;
    int source;
    ASSERT_EQ(SPC_EV_OK, spc_ev_read(instance, 0, &value));
    ASSERT_EQ(SPC_EV_OK, spc_ev_read(instance, 1, &other));
    ASSERT_EQ(SPC_EV_OK, spc_ev_copy(instance, &copy));
    ASSERT_EQ(SPC_EV_OK, spc_ev_timestamp(instance, &ticks));
    ASSERT_EQ(SPC_EV_OK, spc_ev_source_of(instance, &source));
    EXPECT_EQ(value, copy.value);
    EXPECT_EQ(-value, other);
    EXPECT_EQ(SPC_EV_ERR_INDEX, spc_ev_read(instance, 2, &value));
    seen->values.push_back(value);
    seen->safeties.push_back(safety);
    seen->ticks.push_back(ticks);
    seen->sources.push_back(source);
}

void count_drops(long long count, spc_ev_registration *, int, int, void *user)
{
    auto *seen = static_cast<Seen *>(user);
    seen->dropped += count;
    ++seen->dropped_calls;
    seen->events_before_drop_report = static_cast<int>(seen->values.size());
}

TEST_F(Events, CallsTheLowestLevelValidWhereRaised)
{
    Seen none, restricted, thread_safe;
    spc_ev_registration *r;
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(0, &object_a, &r));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(r, SPC_EV_THREAD_SAFE, record, &thread_safe));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(r, SPC_EV_MPI_RESTRICTED, record, &restricted));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(r, SPC_EV_NONE, record, &none));
    uint64_t before = spc_ticks();
    raise_value(0, &object_a, 7);
    raise_value(0, &object_b, 8);  // another object: not r's
    raise_value(1, &object_a, 9);  // another type: not r's
    uint64_t after = spc_ticks();
    ASSERT_EQ(std::vector<int32_t>{7}, restricted.values);
    EXPECT_EQ(SPC_EV_MPI_RESTRICTED, restricted.safeties[0]);
    EXPECT_GE(restricted.ticks[0], before);
    EXPECT_LE(restricted.ticks[0], after);
    EXPECT_TRUE(none.values.empty());
    EXPECT_TRUE(thread_safe.values.empty());
    // removing a level's callback leaves the next one up
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(r, SPC_EV_MPI_RESTRICTED, nullptr, nullptr));
    raise_value(0, &object_a, 10);
    EXPECT_EQ(std::vector<int32_t>{10}, thread_safe.values);
    // re-registering a level replaces its callback
    Seen replaced;
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(r, SPC_EV_THREAD_SAFE, record, &replaced));
    raise_value(0, &object_a, 11);
    EXPECT_EQ(std::vector<int32_t>{11}, replaced.values);
    EXPECT_EQ(std::vector<int32_t>{10}, thread_safe.values);
    // none of them was called at level NONE: only the safe point may
    EXPECT_TRUE(none.values.empty());
    EXPECT_EQ(0, spc_ev_buffered_here());
}

TEST_F(Events, WaitForTheSafePointAndDropExactly)
{
    Seen none;
    spc_ev_registration *r;
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(0, &object_a, &r));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(r, SPC_EV_NONE, record, &none));
    ASSERT_EQ(SPC_EV_OK, spc_ev_set_dropped(r, count_drops));
    for (int32_t v = 0; v < kCapacity + 3; ++v) {
        raise_value(0, &object_a, v);
    }
    EXPECT_TRUE(none.values.empty());
    EXPECT_EQ(kCapacity, spc_ev_buffered_here());
    spc_ev_safe_point();
    EXPECT_EQ(3, none.dropped);
    EXPECT_EQ(1, none.dropped_calls);
    EXPECT_EQ(0, none.events_before_drop_report);  // reported before any later event
    ASSERT_EQ((std::vector<int32_t>{0, 1, 2, 3}), none.values);
    for (size_t i = 0; i < none.values.size(); ++i) {
        EXPECT_EQ(SPC_EV_NONE, none.safeties[i]);
        EXPECT_EQ(none.sources[0], none.sources[i]);
        if (i > 0) {
            EXPECT_LE(none.ticks[i - 1], none.ticks[i]);  // in the order they happened
        }
    }
    EXPECT_EQ(0, spc_ev_buffered_here());
    // without a dropped handler no loss is recorded
    ASSERT_EQ(SPC_EV_OK, spc_ev_set_dropped(r, nullptr));
    for (int32_t v = 0; v < kCapacity + 2; ++v) {
        raise_value(0, &object_a, v);
    }
    spc_ev_safe_point();
    EXPECT_EQ(1, none.dropped_calls);
    EXPECT_EQ(2u * kCapacity, none.values.size());
}

// An event with a waiting predecessor waits too, so a source's callbacks
// come in order even when a later event could be called at once.
TEST_F(Events, ASourceKeepsItsOrder)
{
    Seen seen;
    spc_ev_registration *low, *high;
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(0, &object_a, &low));
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(1, &object_a, &high));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(low, SPC_EV_NONE, record, &seen));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(high, SPC_EV_ASYNC_SIGNAL_SAFE, record, &seen));
    raise_value(1, &object_a, 1);  // called at once
    raise_value(0, &object_a, 2);  // waits
    raise_value(1, &object_a, 3);  // waits behind it
    EXPECT_EQ(std::vector<int32_t>{1}, seen.values);
    spc_ev_safe_point();
    EXPECT_EQ((std::vector<int32_t>{1, 2, 3}), seen.values);
    EXPECT_EQ((std::vector<int>{SPC_EV_MPI_RESTRICTED, SPC_EV_NONE, SPC_EV_NONE}), seen.safeties);
}

struct FreeProbe {
    spc_ev_registration *self = nullptr;
    int events = 0, events_after_free = 0, frees = 0;
    bool freed = false;
};

void free_on_first(spc_ev_instance *, spc_ev_registration *r, int, void *user)
{
    auto *probe = static_cast<FreeProbe *>(user);
    probe->events_after_free += probe->freed;
    if (++probe->events == 1) {
        ASSERT_EQ(SPC_EV_OK, spc_ev_free(r, probe, [](spc_ev_registration *, int, void *u) {
            auto *p = static_cast<FreeProbe *>(u);
            p->freed = true;
            ++p->frees;
        }));
        EXPECT_FALSE(probe->freed);  // not while its own callback runs
    }
}

TEST_F(Events, FreeCallbackAfterTheLastEvent)
{
    FreeProbe probe;
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(0, &object_a, &probe.self));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(probe.self, SPC_EV_THREAD_SAFE, free_on_first, &probe));
    raise_value(0, &object_a, 1);
    EXPECT_TRUE(probe.freed);  // when the raise left its callback
    raise_value(0, &object_a, 2);
    EXPECT_EQ(1, probe.events);
    EXPECT_EQ(1, probe.frees);
    EXPECT_EQ(0, probe.events_after_free);
    EXPECT_FALSE(spc_ev_check(probe.self));
}

TEST_F(Events, MisuseGivesErrors)
{
    spc_ev_registration *r;
    Seen seen;
    EXPECT_EQ(SPC_EV_ERR_INDEX, spc_ev_alloc(2, &object_a, &r));
    EXPECT_EQ(SPC_EV_ERR_INDEX, spc_ev_alloc(-1, &object_a, &r));
    EXPECT_EQ(SPC_EV_ERR_ARG, spc_ev_alloc(0, &object_a, nullptr));
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(0, &object_a, &r));
    EXPECT_EQ(SPC_EV_ERR_ARG, spc_ev_register(r, SPC_EV_NUM_SAFETY, record, &seen));
    EXPECT_EQ(SPC_EV_ERR_ARG, spc_ev_register(r, -1, record, &seen));
    EXPECT_EQ(0, spc_ev_type_of(r));
    ASSERT_EQ(SPC_EV_OK, spc_ev_free(r, nullptr, nullptr));
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_free(r, nullptr, nullptr));
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_register(r, SPC_EV_NONE, record, &seen));
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_set_dropped(r, count_drops));
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_type_of(r));
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_free(nullptr, nullptr, nullptr));
    int32_t value;
    uint64_t ticks;
    int source;
    auto *stale = reinterpret_cast<spc_ev_instance *>(&seen);  // not an instance in its callback
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_read(stale, 0, &value));
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_copy(stale, &value));
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_timestamp(stale, &ticks));
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_source_of(stale, &source));
    EXPECT_EQ(SPC_EV_ERR_HANDLE, spc_ev_read(nullptr, 0, &value));
}

// The event's site is on exactly while a registration for it exists.
TEST_F(Events, SitesFollowRegistrations)
{
    spc_ev_registration *r1, *r2;
    EXPECT_FALSE(spc_switch_is_on(SPC_SWITCH_FIRST_EVENT + 0));
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(0, &object_a, &r1));
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(0, &object_b, &r2));
    EXPECT_TRUE(spc_switch_is_on(SPC_SWITCH_FIRST_EVENT + 0));
    EXPECT_FALSE(spc_switch_is_on(SPC_SWITCH_FIRST_EVENT + 1));
    EXPECT_FALSE(spc_switch_is_on(SPC_SWITCH_FIRST_EVENT + 2));  // the safe point: no callback below the raise level
    Seen seen;
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(r1, SPC_EV_NONE, record, &seen));
    EXPECT_TRUE(spc_switch_is_on(SPC_SWITCH_FIRST_EVENT + 2));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(r1, SPC_EV_NONE, nullptr, nullptr));
    EXPECT_FALSE(spc_switch_is_on(SPC_SWITCH_FIRST_EVENT + 2));
    ASSERT_EQ(SPC_EV_OK, spc_ev_free(r1, nullptr, nullptr));
    EXPECT_TRUE(spc_switch_is_on(SPC_SWITCH_FIRST_EVENT + 0));
    ASSERT_EQ(SPC_EV_OK, spc_ev_free(r2, nullptr, nullptr));
    EXPECT_FALSE(spc_switch_is_on(SPC_SWITCH_FIRST_EVENT + 0));
}

// ---- concurrent --------------------------------------------------------------

constexpr int kThreads = 4;
constexpr int kRaises = 20000;

struct Counted {
    std::atomic<long> events{0};
    std::atomic<int> after_free{0};
    std::atomic<bool> freed{false};
};

void count_event(spc_ev_instance *instance, spc_ev_registration *, int safety, void *user)
{
    auto *c = static_cast<Counted *>(user);
    int32_t value;
    EXPECT_EQ(SPC_EV_OK, spc_ev_read(instance, 0, &value));
    EXPECT_EQ(SPC_EV_THREAD_SAFE, safety);
    c->after_free += c->freed.load();
    c->events.fetch_add(1, std::memory_order_relaxed);
}

TEST_F(Events, ThreadsRaiseWhileRegistrationsChange)
{
    spc_ev_set_raise_safety(SPC_EV_THREAD_SAFE);
    Counted stable;
    spc_ev_registration *keep;
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(0, &object_a, &keep));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(keep, SPC_EV_THREAD_SAFE, count_event, &stable));
    // they raise until the tool is done, kRaises each at least
    std::atomic<bool> go{false}, stop{false};
    std::atomic<long> raised{0};
    std::vector<std::thread> raisers;
    for (int t = 0; t < kThreads; ++t) {
        raisers.emplace_back([&] {
            while (!go.load()) {
            }
            long n = 0;
            for (; n < kRaises || !stop.load(); ++n) {
                raise_value(0, &object_a, static_cast<int32_t>(n));
            }
            raised += n;
        });
    }
    // a tool allocates, registers and frees while they raise
    std::vector<Counted> churned(60);
    go = true;
    for (Counted &c : churned) {
        spc_ev_registration *r;
        ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(0, &object_a, &r));
        ASSERT_EQ(SPC_EV_OK, spc_ev_register(r, SPC_EV_ASYNC_SIGNAL_SAFE, count_event, &c));
        // free it only once raises reach it: on a busy machine the raisers
        // may not have run yet, and a free that meets no raise tests nothing
        while (c.events.load() == 0) {
            std::this_thread::yield();
        }
        ASSERT_EQ(SPC_EV_OK, spc_ev_free(r, &c, [](spc_ev_registration *, int, void *u) {
            static_cast<Counted *>(u)->freed = true;
        }));
        EXPECT_TRUE(c.freed.load());  // a free from outside a callback returns after it
    }
    stop = true;
    for (std::thread &t : raisers) {
        t.join();
    }
    EXPECT_EQ(raised.load(), stable.events.load());
    long churned_events = 0;
    for (Counted &c : churned) {
        churned_events += c.events.load();
    }
    EXPECT_GE(churned_events, static_cast<long>(churned.size()));  // every free met raises in flight
    for (Counted &c : churned) {
        EXPECT_EQ(0, c.after_free.load());
    }
    EXPECT_GE(spc_ev_num_sources(), kThreads);
}

struct Ordered {
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    std::atomic<long> delivered{0}, dropped{0};
    std::vector<uint64_t> last_ticks = std::vector<uint64_t>(SPC_EV_MAX_SOURCES, 0);
    std::atomic<int> out_of_order{0};
};

void ordered_event(spc_ev_instance *instance, spc_ev_registration *, int safety, void *user)
{
    auto *o = static_cast<Ordered *>(user);
    if (o->inside.fetch_add(1) != 0) {
        ++o->overlaps;  // level NONE: never two at once
    }
    uint64_t ticks;
    int source;
    EXPECT_EQ(SPC_EV_OK, spc_ev_timestamp(instance, &ticks));
    EXPECT_EQ(SPC_EV_OK, spc_ev_source_of(instance, &source));
    EXPECT_EQ(SPC_EV_NONE, safety);
    if (ticks < o->last_ticks[source]) {  // only NONE callbacks, one at a time: no race
        ++o->out_of_order;
    }
    o->last_ticks[source] = ticks;
    o->delivered.fetch_add(1);
    o->inside.fetch_sub(1);
}

TEST_F(Events, ThreadsWaitForTheirSafePoints)
{
    spc_ev_set_raise_safety(SPC_EV_THREAD_SAFE);
    Ordered o;
    spc_ev_registration *r;
    ASSERT_EQ(SPC_EV_OK, spc_ev_alloc(1, &object_b, &r));
    ASSERT_EQ(SPC_EV_OK, spc_ev_register(r, SPC_EV_NONE, ordered_event, &o));
    ASSERT_EQ(SPC_EV_OK, spc_ev_set_dropped(r, [](long long n, spc_ev_registration *, int, int, void *u) {
        static_cast<Ordered *>(u)->dropped.fetch_add(n);
    }));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRaises; ++i) {
                raise_value(1, &object_b, i);
                if (i % (t + 2) == 0) {  // a safe point every few events: some overflow
                    spc_ev_safe_point();
                }
            }
            // the last safe point may find another thread delivering: retry
            while (spc_ev_buffered_here() > 0) {
                spc_ev_safe_point();
                std::this_thread::yield();
            }
        });
    }
    for (std::thread &t : threads) {
        t.join();
    }
    spc_ev_deliver_all();  // drop counts another thread's safe point skipped
    EXPECT_EQ(long{kThreads} * kRaises, o.delivered.load() + o.dropped.load());
    EXPECT_GT(o.delivered.load(), 0);
    EXPECT_EQ(0, o.overlaps.load());
    EXPECT_EQ(0, o.out_of_order.load());
}

}  // namespace
