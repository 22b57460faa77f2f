// Unit tests for runtime::Scheduler: posting, spawning, bounds, timers, yielding, block_on and
// sync_wait. Every test that involves time runs on a VirtualClock: time moves only when the test
// advances it or when an idle scheduler auto-advances it to the next timer, so the tests assert
// order and outcome, never how long something took in real time.
#include "farmem/runtime/scheduler.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/common/clock.h"
#include "farmem/common/virtual_clock.h"

namespace farmem::runtime {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kUs = 1'000;
constexpr VirtualClock::Mode kAuto = VirtualClock::Mode::kAutoAdvance;
constexpr VirtualClock::Mode kManual = VirtualClock::Mode::kManual;
constexpr VirtualClock::Mode kSleepAdvance = VirtualClock::Mode::kSleepAdvance;

// Posts `t` on `s` as block_on does, without polling; the test drives poll_once() itself.
template <typename T>
void Start(Scheduler* s, Task<T>& t) {
  t.handle().promise().continuation = std::noop_coroutine();
  s->post(t.handle());
}

Task<void> SetFlag(bool* flag) {
  *flag = true;
  co_return;
}

Task<void> Increment(int* counter) {
  ++*counter;
  co_return;
}

Task<void> YieldThenIncrement(Scheduler* s, int* counter) {
  co_await s->yield();
  ++*counter;
}

Task<void> YieldForever(Scheduler* s, const bool* stop, int* spins) {
  while (!*stop) {
    co_await s->yield();
    ++*spins;
  }
}

Task<void> SleepThenRecord(Scheduler* s, uint64_t ns, int id, std::vector<int>* order) {
  co_await s->sleep_for_ns(ns);
  order->push_back(id);
}

Task<void> SleepUntilThenRecord(Scheduler* s, uint64_t when, int id, std::vector<int>* order) {
  co_await s->sleep_until_ns(when);
  order->push_back(id);
}

Task<void> SleepThenSet(Scheduler* s, uint64_t ns, bool* flag) {
  co_await s->sleep_for_ns(ns);
  *flag = true;
}

Task<void> YieldAndRecord(Scheduler* s, char id, int rounds, std::string* trace) {
  for (int i = 0; i < rounds; ++i) {
    trace->push_back(id);
    co_await s->yield();
  }
}

Task<uint64_t> SleepAndMeasure(Scheduler* s, uint64_t ns) {
  uint64_t start = now_ns();
  co_await s->sleep_for_ns(ns);
  co_return now_ns() - start;
}

Task<int> AddAfterYield(Scheduler* s, int a, int b) {
  co_await s->yield();
  co_return a + b;
}

Task<Scheduler*> CurrentScheduler() { co_return Scheduler::current(); }

Task<void> SpawnChild(Scheduler* s, int* counter, Status* spawn_status) {
  *spawn_status = s->spawn(Increment(counter));
  co_return;
}

Task<void> RecordOthersReady(Scheduler* s, std::vector<bool>* seen) {
  seen->push_back(s->others_ready());
  co_return;
}

TEST(SchedulerTest, PostedHandleResumesOnTheNextPoll) {
  Scheduler s;
  bool flag = false;
  Task<void> t = SetFlag(&flag);
  t.handle().promise().continuation = std::noop_coroutine();
  s.post(t.handle());
  EXPECT_FALSE(flag);  // post only queues
  EXPECT_TRUE(s.poll_once());
  EXPECT_TRUE(flag);
  EXPECT_TRUE(t.done());
}

TEST(SchedulerTest, PollOnceReportsIdleWhenNothingIsReady) {
  Scheduler s;
  EXPECT_FALSE(s.poll_once());
  EXPECT_FALSE(s.poll_once());
}

TEST(SchedulerTest, CoroutinePostedDuringAPollRunsInTheNextPoll) {
  Scheduler s;
  int counter = 0;
  ASSERT_TRUE(s.spawn(YieldThenIncrement(&s, &counter)).ok());
  EXPECT_TRUE(s.poll_once());  // runs until the yield
  EXPECT_EQ(counter, 0);
  EXPECT_EQ(s.live_coroutines(), 1u);
  EXPECT_TRUE(s.poll_once());  // resumes after the yield
  EXPECT_EQ(counter, 1);
  EXPECT_EQ(s.live_coroutines(), 0u);
}

// What the round-end test records: coroutines append their id, round-end calls append -1.
struct RoundLog {
  Scheduler* s = nullptr;
  std::vector<int> events;
  bool hook_pending = false;
  int chained = 0;  // round-end calls that register one more
};

void LogRoundEnd(void* arg) {
  auto* log = static_cast<RoundLog*>(arg);
  log->hook_pending = false;
  log->events.push_back(-1);
  if (log->chained > 0) {
    --log->chained;
    log->s->at_round_end(&LogRoundEnd, log);
  }
}

// Appends id, asks once per round for the round-end call, yields, and appends id again.
Task<void> QueueThenYield(RoundLog* log, int id) {
  for (int i = 0; i < 2; ++i) {
    log->events.push_back(id);
    if (!log->hook_pending) {
      log->hook_pending = true;
      log->s->at_round_end(&LogRoundEnd, log);
    }
    if (i == 0) co_await log->s->yield();
  }
}

// A round-end call runs once, after every coroutine of the round that asked for it and before
// the next round; one registered outside a poll runs at the end of the next round; calls that
// register more run in the same round.
TEST(SchedulerTest, RoundEndCallsRunAfterTheRoundsCoroutines) {
  Scheduler s;
  RoundLog log;
  log.s = &s;
  for (int id = 1; id <= 3; ++id) ASSERT_TRUE(s.spawn(QueueThenYield(&log, id)).ok());
  EXPECT_TRUE(s.poll_once());
  EXPECT_EQ(log.events, (std::vector<int>{1, 2, 3, -1}));
  EXPECT_TRUE(s.poll_once());
  EXPECT_EQ(log.events, (std::vector<int>{1, 2, 3, -1, 1, 2, 3, -1}));
  EXPECT_EQ(s.live_coroutines(), 0u);
  log.events.clear();
  log.chained = 2;
  s.at_round_end(&LogRoundEnd, &log);  // outside a poll: the next round's end
  EXPECT_TRUE(log.events.empty());
  EXPECT_TRUE(s.poll_once());  // nothing else ran, but the calls did: a busy round
  EXPECT_EQ(log.events, (std::vector<int>{-1, -1, -1}));
  EXPECT_FALSE(s.poll_once());
}

// An idle scheduler waiting for a timer sleeps (in the kernel) instead of spinning once it has
// been idle for idle_sleep_after_ns, wakes for the timer, and never sleeps with a virtual clock
// or with idle sleeping off. (Real time passes here: 3 ms; nothing is asserted about it.)
// Under a kSleepAdvance virtual clock an idle sleep moves that clock instead of blocking, so
// the idle-sleep decision is checked without reading the real clock.
TEST(SchedulerTest, IdleRoundsSleepUntilTheNextTimer) {
  {
    VirtualClock clock(kSleepAdvance);
    ScopedVirtualClock use(clock);
    const uint64_t start = clock.now_ns();
    Scheduler s;
    bool done = false;
    // A timer within max_sleep_ns (1 ms by default) of the idle round.
    ASSERT_TRUE(s.spawn(SleepThenSet(&s, 500 * kUs, &done)).ok());
    ASSERT_TRUE(s.poll_once());   // runs to its sleep
    EXPECT_FALSE(s.poll_once());  // the first idle round starts the idle stretch
    EXPECT_EQ(s.idle_sleeps(), 0u);
    clock.advance(SchedulerOptions{}.idle_sleep_after_ns - 1);
    EXPECT_FALSE(s.poll_once());  // not idle long enough yet
    EXPECT_EQ(s.idle_sleeps(), 0u);
    clock.advance(1);
    EXPECT_FALSE(s.poll_once());  // sleeps until the timer
    EXPECT_EQ(s.idle_sleeps(), 1u);
    EXPECT_EQ(clock.now_ns(), start + 500 * kUs);
    EXPECT_FALSE(done);
    s.run_until_idle();
    EXPECT_TRUE(done);
    EXPECT_EQ(s.idle_sleeps(), 1u);
  }
  {
    // A sleep is bounded by max_sleep_ns: a far timer takes several.
    VirtualClock clock(kSleepAdvance);
    ScopedVirtualClock use(clock);
    SchedulerOptions o;
    o.idle_sleep_after_ns = 1;
    o.max_sleep_ns = 1 * kMs;
    Scheduler s(o);
    bool done = false;
    ASSERT_TRUE(s.spawn(SleepThenSet(&s, 10 * kMs, &done)).ok());
    s.poll_once();
    while (!done) {
      s.poll_once();
      clock.advance(1);  // each idle stretch lasts idle_sleep_after_ns
    }
    // Nine sleeps of max_sleep_ns, then one that ends at the timer.
    EXPECT_EQ(s.idle_sleeps(), 10u);
  }
  {
    VirtualClock clock(kSleepAdvance);
    ScopedVirtualClock use(clock);
    SchedulerOptions o;
    o.idle_sleep_after_ns = 0;  // always spin
    Scheduler s(o);
    bool done = false;
    ASSERT_TRUE(s.spawn(SleepThenSet(&s, 1 * kMs, &done)).ok());
    for (int i = 0; i < 100 && !done; ++i) {
      s.poll_once();
      clock.advance(20 * kUs);
    }
    EXPECT_TRUE(done);
    EXPECT_EQ(s.idle_sleeps(), 0u);
  }
  {
    VirtualClock clock(kAuto);
    ScopedVirtualClock use(clock);
    Scheduler s;
    bool done = false;
    ASSERT_TRUE(s.spawn(SleepThenSet(&s, 3'600'000 * kMs, &done)).ok());
    s.run_until_idle();
    EXPECT_TRUE(done);
    EXPECT_EQ(s.idle_sleeps(), 0u);
  }
}

// others_ready() is true while a later coroutine of the same round, or a posted one, would run
// before a coroutine that yields now; the last of a round with nothing posted sees false.
TEST(SchedulerTest, OthersReadySeesLaterCoroutinesOfTheRoundAndPostedOnes) {
  Scheduler s;
  EXPECT_FALSE(s.others_ready());
  std::vector<bool> seen;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.spawn(RecordOthersReady(&s, &seen)).ok());
  EXPECT_TRUE(s.others_ready());  // spawned = posted
  s.run_until_idle();
  EXPECT_EQ(seen, (std::vector<bool>{true, true, false}));
  EXPECT_FALSE(s.others_ready());
  seen.clear();
  bool flag = false;
  ASSERT_TRUE(s.spawn(RecordOthersReady(&s, &seen)).ok());
  ASSERT_TRUE(s.poll_once());  // the single coroutine is alone in its round
  EXPECT_EQ(seen, (std::vector<bool>{false}));
  Task<void> t = SetFlag(&flag);
  t.handle().promise().continuation = std::noop_coroutine();
  s.post(t.handle());
  EXPECT_TRUE(s.others_ready());
  s.poll_once();
  EXPECT_TRUE(flag);
}

TEST(SchedulerTest, SpawnRunsDetachedCoroutinesAndTracksLiveCount) {
  Scheduler s;
  int counter = 0;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s.spawn(Increment(&counter)).ok());
  EXPECT_EQ(s.live_coroutines(), 10u);
  EXPECT_EQ(counter, 0);  // spawned, not yet run
  s.run_until_idle();
  EXPECT_EQ(counter, 10);
  EXPECT_EQ(s.live_coroutines(), 0u);
}

TEST(SchedulerTest, SpawnBeyondMaxCoroutinesIsResourceExhausted) {
  SchedulerOptions options;
  options.max_coroutines = 3;
  Scheduler s(options);
  int counter = 0;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.spawn(YieldThenIncrement(&s, &counter)).ok());
  Status st = s.spawn(Increment(&counter));
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("max_coroutines"), std::string_view::npos);
  EXPECT_EQ(s.live_coroutines(), 3u);
  s.run_until_idle();
  EXPECT_EQ(counter, 3);  // the rejected task never ran
  // Capacity frees up once coroutines finish.
  EXPECT_TRUE(s.spawn(Increment(&counter)).ok());
  s.run_until_idle();
  EXPECT_EQ(counter, 4);
}

TEST(SchedulerTest, RejectedSpawnDestroysTheTaskFrame) {
  SchedulerOptions options;
  options.max_coroutines = 1;
  Scheduler s(options);
  int counter = 0;
  ASSERT_TRUE(s.spawn(Increment(&counter)).ok());
  size_t live_before = frame_pool_stats().live_frames;
  EXPECT_FALSE(s.spawn(Increment(&counter)).ok());
  EXPECT_EQ(frame_pool_stats().live_frames, live_before);
  s.run_until_idle();
  EXPECT_EQ(counter, 1);
}

TEST(SchedulerTest, CoroutinesCanSpawnMoreCoroutines) {
  Scheduler s;
  int counter = 0;
  Status inner_status = Internal("not run");
  ASSERT_TRUE(s.spawn(SpawnChild(&s, &counter, &inner_status)).ok());
  s.run_until_idle();
  EXPECT_TRUE(inner_status.ok());
  EXPECT_EQ(counter, 1);
  EXPECT_EQ(s.live_coroutines(), 0u);
}

TEST(SchedulerTest, RunUntilIdleReturnsImmediatelyWithNothingSpawned) {
  Scheduler s;
  s.run_until_idle();
  EXPECT_EQ(s.live_coroutines(), 0u);
}

TEST(SchedulerTest, RunUntilIdleWaitsForSleepers) {
  VirtualClock clock(kAuto);
  ScopedVirtualClock use(clock);
  Scheduler s;
  bool flag = false;
  const uint64_t start = now_ns();
  ASSERT_TRUE(s.spawn(SleepThenSet(&s, 2 * kMs, &flag)).ok());
  s.run_until_idle();
  EXPECT_TRUE(flag);
  EXPECT_EQ(now_ns(), start + 2 * kMs);  // it returned only once the sleep's deadline came
}

TEST(SchedulerTest, TimersFireInDeadlineOrderNotSpawnOrder) {
  VirtualClock clock(kAuto);
  ScopedVirtualClock use(clock);
  Scheduler s;
  std::vector<int> order;
  const uint64_t base = now_ns();
  ASSERT_TRUE(s.spawn(SleepUntilThenRecord(&s, base + 3 * kMs, 3, &order)).ok());
  ASSERT_TRUE(s.spawn(SleepUntilThenRecord(&s, base + 1 * kMs, 1, &order)).ok());
  ASSERT_TRUE(s.spawn(SleepUntilThenRecord(&s, base + 2 * kMs, 2, &order)).ok());
  ASSERT_TRUE(s.spawn(SleepUntilThenRecord(&s, base, 0, &order)).ok());  // already due
  s.run_until_idle();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(now_ns(), base + 3 * kMs);
}

TEST(SchedulerTest, SleepForNsWakesShortestSleepFirst) {
  VirtualClock clock(kAuto);
  ScopedVirtualClock use(clock);
  Scheduler s;
  std::vector<int> order;
  ASSERT_TRUE(s.spawn(SleepThenRecord(&s, 15 * kMs, 3, &order)).ok());
  ASSERT_TRUE(s.spawn(SleepThenRecord(&s, 5 * kMs, 1, &order)).ok());
  ASSERT_TRUE(s.spawn(SleepThenRecord(&s, 10 * kMs, 2, &order)).ok());
  ASSERT_TRUE(s.spawn(SleepThenRecord(&s, 0, 0, &order)).ok());
  s.run_until_idle();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

// Virtual time resolves deadlines exactly, however close they are.
TEST(SchedulerTest, TimersOneNanosecondApartFireInDeadlineOrder) {
  VirtualClock clock(kAuto);
  ScopedVirtualClock use(clock);
  Scheduler s;
  std::vector<int> order;
  const uint64_t base = now_ns();
  for (int id : {4, 2, 0, 3, 1}) {
    ASSERT_TRUE(s.spawn(SleepUntilThenRecord(&s, base + 1 + id, id, &order)).ok());
  }
  s.run_until_idle();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(clock.auto_advances(), 5u);  // one jump per distinct deadline
}

TEST(SchedulerTest, TimersWithEqualDeadlinesFireInArrivalOrder) {
  VirtualClock clock(kAuto);
  ScopedVirtualClock use(clock);
  Scheduler s;
  std::vector<int> order;
  const uint64_t when = now_ns() + 2 * kMs;
  for (int id = 0; id < 8; ++id) {
    ASSERT_TRUE(s.spawn(SleepUntilThenRecord(&s, when, id, &order)).ok());
  }
  s.run_until_idle();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(clock.auto_advances(), 1u);  // they fire together
}

// A sleeper wakes neither a nanosecond before its deadline nor later than the first time check
// after it.
TEST(SchedulerTest, SleepLastsExactlyUntilItsDeadline) {
  VirtualClock clock(kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  Task<uint64_t> t = SleepAndMeasure(&s, 3 * kMs);
  Start(&s, t);
  for (int i = 0; i < 100; ++i) s.poll_once();
  EXPECT_FALSE(t.done());  // nothing moves a manual clock but the test
  clock.advance(3 * kMs - 1);
  for (int i = 0; i < 100; ++i) s.poll_once();
  EXPECT_FALSE(t.done());
  clock.advance(1);
  s.poll_once();  // idle round: the time check moves the timer to the ready queue
  s.poll_once();  // the sleeper runs
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.take_result(), 3 * kMs);
}

TEST(SchedulerTest, BlockOnASleepingTaskReturnsWithTheClockAtItsDeadline) {
  VirtualClock clock(kAuto);
  ScopedVirtualClock use(clock);
  Scheduler s;
  const uint64_t start = now_ns();
  constexpr uint64_t kHour = 3600 * 1000 * kMs;
  EXPECT_EQ(s.block_on(SleepAndMeasure(&s, kHour)), kHour);  // no real hour passes
  EXPECT_EQ(now_ns(), start + kHour);
  EXPECT_EQ(clock.auto_advances(), 1u);
}

TEST(SchedulerTest, SleepAwaiterInThePastIsReadyWithoutSuspending) {
  VirtualClock clock(kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  EXPECT_TRUE(s.sleep_until_ns(0).await_ready());
  EXPECT_TRUE(s.sleep_until_ns(now_ns()).await_ready());
  EXPECT_TRUE(s.sleep_for_ns(0).await_ready());
  EXPECT_FALSE(s.sleep_for_ns(1).await_ready());
  EXPECT_FALSE(s.sleep_until_ns(now_ns() + 1).await_ready());
  EXPECT_FALSE(s.yield().await_ready());
}

// A busy scheduler never auto-advances the clock; once the test advances it, the timer fires at
// the next time check, at most time_check_interval busy rounds later.
TEST(SchedulerTest, TimersFireWhileOtherCoroutinesKeepTheSchedulerBusy) {
  VirtualClock clock(kAuto);
  ScopedVirtualClock use(clock);
  SchedulerOptions options;
  Scheduler s(options);
  bool stop = false;
  int spins = 0;
  ASSERT_TRUE(s.spawn(YieldForever(&s, &stop, &spins)).ok());
  ASSERT_TRUE(s.spawn(SleepThenSet(&s, 1 * kMs, &stop)).ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(s.poll_once());  // the yielder keeps it busy
  EXPECT_FALSE(stop);
  EXPECT_EQ(clock.auto_advances(), 0u);
  clock.advance(1 * kMs);
  uint32_t rounds = 0;
  while (!stop) {
    ASSERT_LE(++rounds, options.time_check_interval + 1) << "the timer did not fire";
    ASSERT_TRUE(s.poll_once());
  }
  s.run_until_idle();  // the yielder sees stop and finishes
  EXPECT_GE(spins, 100);
}

TEST(SchedulerTest, AutoAdvanceNeedsATimerAndNothingReady) {
  VirtualClock clock(kAuto);
  ScopedVirtualClock use(clock);
  Scheduler s;
  const uint64_t start = now_ns();
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(s.poll_once());  // idle, but no timer to jump to
  EXPECT_EQ(now_ns(), start);
  int counter = 0;
  ASSERT_TRUE(s.spawn(YieldThenIncrement(&s, &counter)).ok());
  s.run_until_idle();  // only ready work: the clock stays
  EXPECT_EQ(counter, 1);
  EXPECT_EQ(now_ns(), start);
  EXPECT_EQ(clock.auto_advances(), 0u);
}

TEST(SchedulerTest, ManualClockMovesOnlyWhenTheTestAdvancesIt) {
  VirtualClock clock(kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  std::vector<int> order;
  const uint64_t base = now_ns();
  ASSERT_TRUE(s.spawn(SleepUntilThenRecord(&s, base + 2 * kMs, 2, &order)).ok());
  ASSERT_TRUE(s.spawn(SleepUntilThenRecord(&s, base + 1 * kMs, 1, &order)).ok());
  for (int i = 0; i < 100; ++i) s.poll_once();
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(now_ns(), base);
  clock.advance_to(base + 1 * kMs);
  for (int i = 0; i < 3; ++i) s.poll_once();
  EXPECT_EQ(order, (std::vector<int>{1}));
  clock.advance_to(base + 5 * kMs);  // past the second deadline: it fires at the next check
  s.run_until_idle();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(clock.auto_advances(), 0u);
}

TEST(SchedulerTest, YieldingCoroutinesTakeStrictTurns) {
  Scheduler s;
  std::string trace;
  ASSERT_TRUE(s.spawn(YieldAndRecord(&s, 'a', 5, &trace)).ok());
  ASSERT_TRUE(s.spawn(YieldAndRecord(&s, 'b', 5, &trace)).ok());
  ASSERT_TRUE(s.spawn(YieldAndRecord(&s, 'c', 5, &trace)).ok());
  s.run_until_idle();
  EXPECT_EQ(trace, "abcabcabcabcabc");
}

TEST(SchedulerTest, YieldingCoroutineDoesNotStarveAShortOne) {
  Scheduler s;
  std::string trace;
  ASSERT_TRUE(s.spawn(YieldAndRecord(&s, 'L', 6, &trace)).ok());
  ASSERT_TRUE(s.spawn(YieldAndRecord(&s, 's', 2, &trace)).ok());
  s.run_until_idle();
  EXPECT_EQ(trace, "LsLsLLLL");
}

TEST(SchedulerTest, BlockOnReturnsTheTaskResult) {
  Scheduler s;
  EXPECT_EQ(s.block_on(AddAfterYield(&s, 2, 3)), 5);
  bool flag = false;
  s.block_on(SetFlag(&flag));
  EXPECT_TRUE(flag);
}

TEST(SchedulerTest, BlockOnAlsoRunsSpawnedCoroutines) {
  Scheduler s;
  int counter = 0;
  ASSERT_TRUE(s.spawn(YieldThenIncrement(&s, &counter)).ok());
  EXPECT_EQ(s.block_on(AddAfterYield(&s, 1, 1)), 2);
  EXPECT_EQ(counter, 1);
}

TEST(SchedulerTest, BlockOnReleasesTheTaskFrame) {
  Scheduler s;
  size_t live_before = frame_pool_stats().live_frames;
  EXPECT_EQ(s.block_on(AddAfterYield(&s, 4, 5)), 9);
  EXPECT_EQ(frame_pool_stats().live_frames, live_before);
}

TEST(SchedulerTest, NoSchedulerIsInstalledByDefault) { EXPECT_EQ(Scheduler::current(), nullptr); }

TEST(SchedulerTest, InstallMakesTheSchedulerCurrentAndDestructionRestoresThePrevious) {
  ASSERT_EQ(Scheduler::current(), nullptr);
  {
    Scheduler outer;
    outer.install();
    EXPECT_EQ(Scheduler::current(), &outer);
    {
      Scheduler inner;
      inner.install();
      EXPECT_EQ(Scheduler::current(), &inner);
      inner.install();  // installing twice is harmless
      EXPECT_EQ(Scheduler::current(), &inner);
    }
    EXPECT_EQ(Scheduler::current(), &outer);
  }
  EXPECT_EQ(Scheduler::current(), nullptr);
}

TEST(SchedulerTest, SyncWaitUsesTheInstalledScheduler) {
  Scheduler s;
  s.install();
  EXPECT_EQ(sync_wait(CurrentScheduler()), &s);
  EXPECT_EQ(sync_wait(AddAfterYield(&s, 20, 22)), 42);
}

TEST(SchedulerTest, SyncWaitWithoutASchedulerUsesATemporaryOne) {
  ASSERT_EQ(Scheduler::current(), nullptr);
  Scheduler* seen = sync_wait(CurrentScheduler());
  EXPECT_NE(seen, nullptr);
  EXPECT_EQ(Scheduler::current(), nullptr);  // the temporary is uninstalled afterwards
}

TEST(SchedulerTest, TickersRunAtClockChecksUntilRemoved) {
  VirtualClock clock(kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  std::vector<uint64_t> ticks;
  size_t id = s.add_ticker([&ticks](uint64_t now) { ticks.push_back(now); });
  const uint64_t before = now_ns();
  s.poll_once();  // idle poll: checks the clock
  clock.advance(5);
  s.poll_once();
  EXPECT_EQ(ticks, (std::vector<uint64_t>{before, before + 5}));  // tickers get the clock's time
  s.remove_ticker(id);
  s.poll_once();
  EXPECT_EQ(ticks.size(), 2u);
  // A removed slot is reused.
  int other = 0;
  size_t id2 = s.add_ticker([&other](uint64_t) { ++other; });
  EXPECT_EQ(id2, id);
  s.poll_once();
  EXPECT_EQ(other, 1);
  s.remove_ticker(id2);
  s.remove_ticker(12345);  // unknown ids are ignored
}

TEST(SchedulerTest, BusyPollsCheckTheClockEveryTimeCheckInterval) {
  SchedulerOptions options;
  options.time_check_interval = 4;
  Scheduler s(options);
  int ticks = 0;
  s.add_ticker([&ticks](uint64_t) { ++ticks; });
  bool stop = false;
  int spins = 0;
  ASSERT_TRUE(s.spawn(YieldForever(&s, &stop, &spins)).ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(s.poll_once());
  EXPECT_EQ(ticks, 10);
  stop = true;
  s.run_until_idle();
}

}  // namespace
}  // namespace farmem::runtime
