// Unit tests for runtime::Throttle and parse_throttle_mode. The adaptive tuner is driven with
// synthetic timestamps and completion counts, and once through a scheduler ticker on a
// VirtualClock (as ThreadClient runs it).
#include "farmem/runtime/throttle.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "farmem/common/virtual_clock.h"
#include "farmem/runtime/scheduler.h"

namespace farmem::runtime {
namespace {

TEST(ParseThrottleModeTest, ParsesEveryModeName) {
  for (ThrottleMode m : {ThrottleMode::kOff, ThrottleMode::kFixed, ThrottleMode::kAdaptive}) {
    Result<ThrottleMode> r = parse_throttle_mode(throttle_mode_name(m));
    ASSERT_TRUE(r.ok()) << throttle_mode_name(m);
    EXPECT_EQ(*r, m);
  }
  EXPECT_STREQ(throttle_mode_name(ThrottleMode::kOff), "off");
  EXPECT_STREQ(throttle_mode_name(ThrottleMode::kFixed), "fixed");
  EXPECT_STREQ(throttle_mode_name(ThrottleMode::kAdaptive), "adaptive");
}

TEST(ParseThrottleModeTest, RejectsUnknownNames) {
  for (const char* bad : {"", "Off", "FIXED", "auto", "adaptive ", "none"}) {
    Result<ThrottleMode> r = parse_throttle_mode(bad);
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("off|fixed|adaptive"), std::string_view::npos);
  }
}

TEST(ThrottleTest, DefaultIsOffAndUnlimited) {
  Throttle t;
  EXPECT_EQ(t.cap(), Throttle::kUnlimited);
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(t.try_acquire());
  EXPECT_EQ(t.in_flight(), 100000u);
  for (int i = 0; i < 100000; ++i) t.release();
  EXPECT_EQ(t.in_flight(), 0u);
  EXPECT_EQ(t.completed(), 100000u);
}

TEST(ThrottleTest, OffModeIgnoresTicks) {
  ThrottleOptions o;
  o.mode = ThrottleMode::kOff;
  o.epoch_ns = 10;
  Throttle t(o);
  for (uint64_t now = 1000; now < 100'000; now += 10) t.tick(now);
  EXPECT_EQ(t.cap(), Throttle::kUnlimited);
  EXPECT_EQ(t.rounds(), 0u);
}

TEST(ThrottleTest, FixedModeCapsInFlightOperations) {
  ThrottleOptions o;
  o.mode = ThrottleMode::kFixed;
  o.fixed_cap = 3;
  Throttle t(o);
  EXPECT_EQ(t.cap(), 3u);
  EXPECT_TRUE(t.try_acquire());
  EXPECT_TRUE(t.try_acquire());
  EXPECT_TRUE(t.try_acquire());
  EXPECT_FALSE(t.try_acquire());
  EXPECT_EQ(t.in_flight(), 3u);
  t.release();
  EXPECT_EQ(t.in_flight(), 2u);
  EXPECT_EQ(t.completed(), 1u);
  EXPECT_TRUE(t.try_acquire());
  EXPECT_FALSE(t.try_acquire());
}

TEST(ThrottleTest, FixedModeIgnoresTicks) {
  ThrottleOptions o;
  o.mode = ThrottleMode::kFixed;
  o.fixed_cap = 5;
  o.epoch_ns = 10;
  Throttle t(o);
  for (uint64_t now = 1000; now < 100'000; now += 10) t.tick(now);
  EXPECT_EQ(t.cap(), 5u);
}

TEST(ThrottleTest, FixedCapOfZeroIsRaisedToOne) {
  ThrottleOptions o;
  o.mode = ThrottleMode::kFixed;
  o.fixed_cap = 0;
  Throttle t(o);
  EXPECT_EQ(t.cap(), 1u);
  EXPECT_TRUE(t.try_acquire());
  EXPECT_FALSE(t.try_acquire());
}

// A waiter that records the order in which it is resumed and the in-flight count it sees.
struct RecordingWaiter {
  Throttle::Waiter w;
  int id;
  std::vector<int>* order;
  Throttle* throttle;
  uint32_t in_flight_at_resume = 0;

  static void Resume(Throttle::Waiter* w) {
    auto* self = static_cast<RecordingWaiter*>(w->owner);
    self->order->push_back(self->id);
    self->in_flight_at_resume = self->throttle->in_flight();
  }
};

void InitWaiters(std::vector<RecordingWaiter>* waiters, std::vector<int>* order, Throttle* t) {
  for (size_t i = 0; i < waiters->size(); ++i) {
    RecordingWaiter& r = (*waiters)[i];
    r.id = static_cast<int>(i);
    r.order = order;
    r.throttle = t;
    r.w.owner = &r;
    r.w.resume = &RecordingWaiter::Resume;
  }
}

TEST(ThrottleTest, WaitersResumeInFifoOrderWithTheCreditTaken) {
  ThrottleOptions o;
  o.mode = ThrottleMode::kFixed;
  o.fixed_cap = 1;
  Throttle t(o);
  ASSERT_TRUE(t.try_acquire());
  std::vector<int> order;
  std::vector<RecordingWaiter> waiters(4);
  InitWaiters(&waiters, &order, &t);
  for (RecordingWaiter& r : waiters) {
    ASSERT_FALSE(t.try_acquire());
    t.enqueue(&r.w);
  }
  for (int i = 0; i < 4; ++i) {
    t.release();  // the holder finishes; exactly one waiter gets its credit
    ASSERT_EQ(order.size(), static_cast<size_t>(i + 1));
    EXPECT_EQ(order.back(), i);
    EXPECT_EQ(waiters[i].in_flight_at_resume, 1u);  // credit already taken for the waiter
    EXPECT_EQ(t.in_flight(), 1u);
    EXPECT_FALSE(t.try_acquire());
  }
  t.release();
  EXPECT_EQ(t.in_flight(), 0u);
  EXPECT_EQ(t.completed(), 5u);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(ThrottleTest, QueueCanBeRefilledAfterDraining) {
  ThrottleOptions o;
  o.mode = ThrottleMode::kFixed;
  o.fixed_cap = 1;
  Throttle t(o);
  ASSERT_TRUE(t.try_acquire());
  std::vector<int> order;
  std::vector<RecordingWaiter> waiters(3);
  InitWaiters(&waiters, &order, &t);
  t.enqueue(&waiters[0].w);
  t.release();  // waiter 0 runs, queue empty
  t.enqueue(&waiters[1].w);
  t.enqueue(&waiters[2].w);
  t.release();
  t.release();
  t.release();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t.in_flight(), 0u);
}

TEST(ThrottleTest, ReleaseWithoutWaitersOnlyFreesACredit) {
  ThrottleOptions o;
  o.mode = ThrottleMode::kFixed;
  o.fixed_cap = 2;
  Throttle t(o);
  ASSERT_TRUE(t.try_acquire());
  t.release();
  EXPECT_EQ(t.in_flight(), 0u);
  EXPECT_EQ(t.completed(), 1u);
}

// Drives an adaptive throttle epoch by epoch with a synthetic throughput model: in each epoch
// it completes `rate(cap)` operations through try_acquire/release, then ticks.
class AdaptiveThrottleTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kEpoch = 1'000'000;  // 1 ms of synthetic time

  static ThrottleOptions Options(uint32_t hold_epochs) {
    ThrottleOptions o;
    o.mode = ThrottleMode::kAdaptive;
    o.candidates = {4, 8, 16};
    o.epoch_ns = kEpoch;
    o.hold_epochs = hold_epochs;
    o.inf_weight = 1.05;
    return o;
  }

  void Complete(Throttle* t, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(t->try_acquire());
      t->release();
    }
  }

  // Runs one epoch: completes rate(cap) operations, advances time and ticks. Returns the cap the
  // epoch ran with.
  uint32_t RunEpoch(Throttle* t, const std::function<uint64_t(uint32_t)>& rate) {
    uint32_t cap = t->cap();
    Complete(t, rate(cap));
    now_ += kEpoch;
    t->tick(now_);
    return cap;
  }

  uint64_t now_ = 5'000'000'000;
};

uint64_t EightIsBest(uint32_t cap) {
  switch (cap) {
    case 4:
      return 100;
    case 8:
      return 300;
    case 16:
      return 200;
    default:
      return 150;  // unlimited
  }
}

uint64_t UnlimitedIsBest(uint32_t cap) { return cap == Throttle::kUnlimited ? 500 : 100; }

uint64_t SixteenBarelyBeatsUnlimited(uint32_t cap) {
  switch (cap) {
    case 4:
      return 100;
    case 8:
      return 100;
    case 16:
      return 1030;
    default:
      return 1000;  // 16 is only 3% better, below inf_weight
  }
}

TEST_F(AdaptiveThrottleTest, StartsWithTheFirstCandidate) {
  Throttle t(Options(10));
  EXPECT_EQ(t.cap(), 4u);
  EXPECT_EQ(t.rounds(), 0u);
}

TEST_F(AdaptiveThrottleTest, SweepsEveryCandidateThenUnlimitedThenSettlesOnTheBest) {
  Throttle t(Options(10));
  t.tick(now_);  // the first tick starts the first epoch
  std::vector<uint32_t> swept;
  for (int i = 0; i < 4; ++i) swept.push_back(RunEpoch(&t, EightIsBest));
  EXPECT_EQ(swept, (std::vector<uint32_t>{4, 8, 16, Throttle::kUnlimited}));
  EXPECT_EQ(t.cap(), 8u);
  EXPECT_EQ(t.rounds(), 1u);
}

TEST_F(AdaptiveThrottleTest, KeepsUnlimitedWhenItIsFastest) {
  Throttle t(Options(10));
  t.tick(now_);
  for (int i = 0; i < 4; ++i) RunEpoch(&t, UnlimitedIsBest);
  EXPECT_EQ(t.cap(), Throttle::kUnlimited);
  EXPECT_EQ(t.rounds(), 1u);
}

TEST_F(AdaptiveThrottleTest, FiniteCapMustBeatUnlimitedByInfWeight) {
  Throttle t(Options(10));
  t.tick(now_);
  for (int i = 0; i < 4; ++i) RunEpoch(&t, SixteenBarelyBeatsUnlimited);
  EXPECT_EQ(t.cap(), Throttle::kUnlimited);
}

TEST_F(AdaptiveThrottleTest, HoldsTheChoiceForHoldEpochsThenRetrains) {
  constexpr uint32_t kHold = 5;
  Throttle t(Options(kHold));
  t.tick(now_);
  for (int i = 0; i < 4; ++i) RunEpoch(&t, EightIsBest);
  ASSERT_EQ(t.cap(), 8u);
  for (uint32_t i = 0; i + 1 < kHold; ++i) {
    RunEpoch(&t, EightIsBest);
    EXPECT_EQ(t.cap(), 8u) << "held epoch " << i;
  }
  RunEpoch(&t, EightIsBest);  // the last held epoch ends: training restarts
  EXPECT_EQ(t.cap(), 4u);
  EXPECT_EQ(t.rounds(), 1u);
  // The second sweep sees a different workload and settles elsewhere.
  std::vector<uint32_t> swept;
  for (int i = 0; i < 4; ++i) swept.push_back(RunEpoch(&t, UnlimitedIsBest));
  EXPECT_EQ(swept, (std::vector<uint32_t>{4, 8, 16, Throttle::kUnlimited}));
  EXPECT_EQ(t.cap(), Throttle::kUnlimited);
  EXPECT_EQ(t.rounds(), 2u);
}

TEST_F(AdaptiveThrottleTest, TicksWithinAnEpochDoNotAdvanceTheSweep) {
  Throttle t(Options(10));
  t.tick(now_);
  Complete(&t, 50);
  for (uint64_t dt = 1; dt < kEpoch; dt += kEpoch / 10) t.tick(now_ + dt);
  EXPECT_EQ(t.cap(), 4u);
  t.tick(now_ + kEpoch);
  EXPECT_EQ(t.cap(), 8u);
}

TEST_F(AdaptiveThrottleTest, RatesAreNormalisedByEpochLength) {
  // Candidate 8 completes more operations in total but over a much longer epoch: its rate is
  // lower, so it must not win.
  Throttle t(Options(10));
  t.tick(now_);
  Complete(&t, 100);  // cap 4: 100 ops in 1 epoch
  now_ += kEpoch;
  t.tick(now_);
  ASSERT_EQ(t.cap(), 8u);
  Complete(&t, 150);  // cap 8: 150 ops in 3 epochs
  now_ += 3 * kEpoch;
  t.tick(now_);
  ASSERT_EQ(t.cap(), 16u);
  Complete(&t, 10);
  now_ += kEpoch;
  t.tick(now_);
  ASSERT_EQ(t.cap(), Throttle::kUnlimited);
  Complete(&t, 10);
  now_ += kEpoch;
  t.tick(now_);
  EXPECT_EQ(t.cap(), 4u);
}

TEST_F(AdaptiveThrottleTest, RaisingTheCapAdmitsQueuedWaiters) {
  Throttle t(Options(10));
  t.tick(now_);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t.try_acquire());
  ASSERT_FALSE(t.try_acquire());
  std::vector<int> order;
  std::vector<RecordingWaiter> waiters(6);
  InitWaiters(&waiters, &order, &t);
  for (RecordingWaiter& r : waiters) t.enqueue(&r.w);
  now_ += kEpoch;
  t.tick(now_);  // cap 4 -> 8: four waiters fit at once
  ASSERT_EQ(t.cap(), 8u);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.in_flight(), 8u);
  t.release();  // one more slot: waiter 4
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(t.in_flight(), 8u);
}

// The client registers tick() as a scheduler ticker; the tuner's epochs then follow the thread's
// clock, checked at the scheduler's time checks.
TEST_F(AdaptiveThrottleTest, TunerRunByASchedulerTickerFollowsTheVirtualClock) {
  VirtualClock clock(VirtualClock::Mode::kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  Throttle t(Options(10));
  s.add_ticker([&t](uint64_t now) { t.tick(now); });
  s.poll_once();  // idle round: the first tick starts the first epoch
  std::vector<uint32_t> swept;
  for (int i = 0; i < 4; ++i) {
    const uint32_t cap = t.cap();
    Complete(&t, EightIsBest(cap));
    clock.advance(kEpoch - 1);
    s.poll_once();
    ASSERT_EQ(t.cap(), cap) << "the epoch ended early";
    clock.advance(1);
    s.poll_once();
    swept.push_back(cap);
  }
  EXPECT_EQ(swept, (std::vector<uint32_t>{4, 8, 16, Throttle::kUnlimited}));
  EXPECT_EQ(t.cap(), 8u);
  EXPECT_EQ(t.rounds(), 1u);
}

TEST_F(AdaptiveThrottleTest, EmptyCandidateListFallsBackToSixteen) {
  ThrottleOptions o = Options(10);
  o.candidates.clear();
  Throttle t(o);
  EXPECT_EQ(t.cap(), 16u);
  t.tick(now_);
  std::vector<uint32_t> swept;
  for (int i = 0; i < 2; ++i) swept.push_back(RunEpoch(&t, UnlimitedIsBest));
  EXPECT_EQ(swept, (std::vector<uint32_t>{16, Throttle::kUnlimited}));
  EXPECT_EQ(t.cap(), Throttle::kUnlimited);
  EXPECT_EQ(t.rounds(), 1u);
}

}  // namespace
}  // namespace farmem::runtime
