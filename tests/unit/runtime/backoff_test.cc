// Unit tests for runtime::Backoff and runtime::BackoffPolicy. The policy's adaptation is driven
// with synthetic timestamps. Backoff reads now_ns(), so its tests run on a VirtualClock: a sleep
// is exactly the awaiter's deadline minus the clock, and a retry loop's total sleep is exactly
// how far the auto-advancing clock moved. Jitter comes from BackoffOptions::seed = test_seed().
#include "farmem/runtime/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "farmem/common/clock.h"
#include "farmem/common/virtual_clock.h"
#include "farmem/runtime/scheduler.h"
#include "test_seed.h"

namespace farmem::runtime {
namespace {

using ::farmem::testing::test_seed;

// Options with a fixed ceiling and no adaptation, so Backoff's own growth is visible.
BackoffOptions FixedCeiling(uint64_t base_ns, uint64_t jitter_ns, uint64_t ceiling_ns) {
  BackoffOptions o;
  o.base_ns = base_ns;
  o.jitter_ns = jitter_ns;
  o.ceiling_min_ns = ceiling_ns;
  o.ceiling_max_ns = ceiling_ns;
  o.adaptive = false;
  o.seed = test_seed();
  return o;
}

// Calls retry() and returns the sleep it chose (the clock does not move during the call).
uint64_t RetrySleep(Backoff* b) {
  Scheduler::SleepAwaiter a = b->retry();
  return a.until_ns - now_ns();
}

BackoffOptions Seeded() {
  BackoffOptions o;
  o.seed = test_seed();
  return o;
}

TEST(BackoffPolicyTest, InitialCeilingIsOneThirtySecondOfTheMaximumClamped) {
  EXPECT_EQ(BackoffPolicy().ceiling_ns(), 2'000'000u / 32);
  BackoffOptions o;
  o.ceiling_min_ns = 100'000;  // above max / 32
  EXPECT_EQ(BackoffPolicy(o).ceiling_ns(), 100'000u);
  o = BackoffOptions();
  o.ceiling_min_ns = 10;
  o.ceiling_max_ns = 3200;
  EXPECT_EQ(BackoffPolicy(o).ceiling_ns(), 100u);
}

TEST(BackoffPolicyTest, CountsRetriesAndSuccesses) {
  BackoffPolicy p;
  p.record_retry(1000);
  p.record_retry(1001);
  p.record_success(1002);
  EXPECT_EQ(p.retries(), 2u);
  EXPECT_EQ(p.successes(), 1u);
}

TEST(BackoffPolicyTest, RandomBelowStaysBelowTheBoundAndCoversTheRange) {
  BackoffPolicy p(Seeded());
  EXPECT_EQ(p.random_below(0), 0u);
  EXPECT_EQ(p.random_below(1), 0u);
  std::vector<int> histogram(10, 0);
  for (int i = 0; i < 10000; ++i) {
    uint64_t r = p.random_below(10);
    ASSERT_LT(r, 10u);
    ++histogram[r];
  }
  for (int v = 0; v < 10; ++v) {
    EXPECT_GT(histogram[v], 700) << "value " << v;  // 1000 +- 30 (sd) expected for each
    EXPECT_LT(histogram[v], 1300) << "value " << v;
  }
}

TEST(BackoffPolicyTest, TheSameSeedGivesTheSameJitter) {
  BackoffOptions o = Seeded();
  BackoffPolicy a(o), b(o);
  o.seed = test_seed() + 1;
  BackoffPolicy c(o);
  int equal_to_c = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.random_below(1'000'000'000);
    ASSERT_EQ(x, b.random_below(1'000'000'000));
    equal_to_c += x == c.random_below(1'000'000'000);
  }
  EXPECT_LT(equal_to_c, 5);  // about 1e-6 expected
}

class AdaptiveBackoffPolicyTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kEpoch = 1000;
  AdaptiveBackoffPolicyTest() : policy_(Options()) {}
  static BackoffOptions Options() {
    BackoffOptions o;
    o.epoch_ns = kEpoch;
    o.ceiling_min_ns = 2'000;
    o.ceiling_max_ns = 2'000'000;  // initial ceiling 62'500
    o.low_retry_rate = 0.10;
    o.high_retry_rate = 0.50;
    return o;
  }
  // Records `retries` retries and `successes` successes inside the current epoch, then one more
  // success once the epoch has passed (which triggers the adaptation).
  void RunEpoch(int retries, int successes) {
    for (int i = 0; i < retries; ++i) policy_.record_retry(now_ + 1);
    for (int i = 0; i < successes; ++i) policy_.record_success(now_ + 1);
    now_ += kEpoch;
    policy_.record_success(now_);
  }
  void StartEpoch() { policy_.record_success(now_); }

  BackoffPolicy policy_;
  uint64_t now_ = 1'000'000;
};

TEST_F(AdaptiveBackoffPolicyTest, CeilingHalvesUnderALowRetryRate) {
  StartEpoch();
  ASSERT_EQ(policy_.ceiling_ns(), 62'500u);
  RunEpoch(/*retries=*/1, /*successes=*/99);  // rate 1%
  EXPECT_EQ(policy_.ceiling_ns(), 31'250u);
  RunEpoch(0, 50);
  EXPECT_EQ(policy_.ceiling_ns(), 15'625u);
}

TEST_F(AdaptiveBackoffPolicyTest, CeilingDoublesUnderAHighRetryRate) {
  StartEpoch();
  RunEpoch(/*retries=*/90, /*successes=*/10);  // rate 90%
  EXPECT_EQ(policy_.ceiling_ns(), 125'000u);
  RunEpoch(60, 40);
  EXPECT_EQ(policy_.ceiling_ns(), 250'000u);
}

TEST_F(AdaptiveBackoffPolicyTest, CeilingHoldsBetweenTheThresholds) {
  StartEpoch();
  RunEpoch(/*retries=*/30, /*successes=*/70);  // rate 30%
  EXPECT_EQ(policy_.ceiling_ns(), 62'500u);
}

TEST_F(AdaptiveBackoffPolicyTest, CeilingDoesNotMoveBeforeTheEpochPasses) {
  StartEpoch();
  for (int i = 0; i < 100; ++i) policy_.record_retry(now_ + kEpoch - 1);
  EXPECT_EQ(policy_.ceiling_ns(), 62'500u);
  policy_.record_retry(now_ + kEpoch);
  EXPECT_EQ(policy_.ceiling_ns(), 125'000u);
}

TEST_F(AdaptiveBackoffPolicyTest, CeilingIsBoundedByMinAndMax) {
  StartEpoch();
  for (int i = 0; i < 20; ++i) RunEpoch(100, 0);
  EXPECT_EQ(policy_.ceiling_ns(), 2'000'000u);
  for (int i = 0; i < 20; ++i) RunEpoch(0, 100);
  EXPECT_EQ(policy_.ceiling_ns(), 2'000u);
}

TEST_F(AdaptiveBackoffPolicyTest, EachEpochIsJudgedOnItsOwnCounts) {
  StartEpoch();
  RunEpoch(100, 0);  // high: doubles
  EXPECT_EQ(policy_.ceiling_ns(), 125'000u);
  // The next epoch sees only its own (low) retry rate, not the previous epoch's retries.
  RunEpoch(0, 100);
  EXPECT_EQ(policy_.ceiling_ns(), 62'500u);
}

TEST(BackoffPolicyTest, NonAdaptivePolicyKeepsItsCeiling) {
  BackoffOptions o;
  o.adaptive = false;
  o.epoch_ns = 10;
  BackoffPolicy p(o);
  uint64_t initial = p.ceiling_ns();
  for (uint64_t t = 1000; t < 100'000; t += 100) p.record_retry(t);
  EXPECT_EQ(p.ceiling_ns(), initial);
  for (uint64_t t = 100'000; t < 200'000; t += 100) p.record_success(t);
  EXPECT_EQ(p.ceiling_ns(), initial);
}

TEST(BackoffTest, SleepGrowsExponentiallyUpToTheCeiling) {
  VirtualClock clock(VirtualClock::Mode::kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  BackoffPolicy policy(FixedCeiling(/*base_ns=*/1000, /*jitter_ns=*/0, /*ceiling=*/16'000));
  Backoff b(policy, s);
  const std::vector<uint64_t> expected = {1000, 2000, 4000, 8000, 16'000, 16'000, 16'000};
  EXPECT_EQ(b.current_ns(), 1000u);
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(RetrySleep(&b), expected[i]);
    EXPECT_EQ(b.current_ns(), std::min<uint64_t>(expected[i] * 2, 16'000));
  }
  EXPECT_EQ(b.attempts(), expected.size());
  EXPECT_EQ(policy.retries(), expected.size());
}

TEST(BackoffTest, JitterStaysWithinItsBound) {
  VirtualClock clock(VirtualClock::Mode::kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  constexpr uint64_t kBase = 10'000, kJitter = 5'000;
  BackoffPolicy policy(FixedCeiling(kBase, kJitter, kBase));
  Backoff b(policy, s);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t sleep = RetrySleep(&b);
    ASSERT_GE(sleep, kBase);
    ASSERT_LE(sleep, kBase + kJitter);
    ASSERT_EQ(b.current_ns(), kBase);
    clock.advance(i);  // retries at different times choose their sleeps the same way
  }
}

TEST(BackoffTest, JitterSpreadsSleepsAcrossItsWholeRange) {
  VirtualClock clock(VirtualClock::Mode::kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  constexpr uint64_t kJitter = 1'000'000;
  // base 0: every sleep is pure jitter, uniform in [0, kJitter].
  BackoffPolicy policy(FixedCeiling(/*base_ns=*/0, kJitter, /*ceiling=*/1));
  Backoff b(policy, s);
  uint64_t smallest = UINT64_MAX, largest = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t sleep = RetrySleep(&b);
    ASSERT_LE(sleep, kJitter);
    smallest = std::min(smallest, sleep);
    largest = std::max(largest, sleep);
  }
  // Each bound fails for a given seed with probability 0.9^1000 (about 1e-46).
  EXPECT_LT(smallest, kJitter / 10);
  EXPECT_GT(largest, kJitter * 9 / 10);
}

TEST(BackoffTest, TheSameSeedReplaysTheSameSleeps) {
  VirtualClock clock(VirtualClock::Mode::kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  BackoffPolicy p1(FixedCeiling(1000, 1'000'000, 1000));
  BackoffPolicy p2(FixedCeiling(1000, 1'000'000, 1000));
  Backoff b1(p1, s), b2(p2, s);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(RetrySleep(&b1), RetrySleep(&b2)) << "retry " << i;
}

TEST(BackoffTest, GrowthIsCappedByThePolicyCeilingNotTheMaximum) {
  Scheduler s;
  BackoffOptions o;
  o.base_ns = 1000;
  o.jitter_ns = 0;
  o.ceiling_min_ns = 2000;
  o.ceiling_max_ns = 64'000;  // initial ceiling max(64'000 / 32, 2000) = 2000
  BackoffPolicy policy(o);
  ASSERT_EQ(policy.ceiling_ns(), 2000u);
  Backoff b(policy, s);
  (void)b.retry();
  EXPECT_EQ(b.current_ns(), 2000u);
  (void)b.retry();
  EXPECT_EQ(b.current_ns(), 2000u);
}

TEST(BackoffTest, ExhaustedAfterMaxRetries) {
  Scheduler s;
  BackoffOptions o = FixedCeiling(1, 0, 1);
  o.max_retries = 3;
  BackoffPolicy policy(o);
  Backoff b(policy, s);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(b.exhausted()) << "after " << i << " retries";
    (void)b.retry();
  }
  EXPECT_TRUE(b.exhausted());
  EXPECT_EQ(b.attempts(), 3u);
}

TEST(BackoffTest, SucceededRecordsASuccessOnThePolicy) {
  Scheduler s;
  BackoffPolicy policy;
  Backoff b(policy, s);
  b.succeeded();
  EXPECT_EQ(policy.successes(), 1u);
  EXPECT_EQ(policy.retries(), 0u);
}

TEST(BackoffTest, DisabledBackoffNeverSleepsButStillCountsAttempts) {
  Scheduler s;
  BackoffOptions o = FixedCeiling(/*base_ns=*/1'000'000'000, /*jitter_ns=*/1'000'000'000,
                                  /*ceiling=*/1'000'000'000);
  o.enabled = false;
  BackoffPolicy policy(o);
  Backoff b(policy, s);
  for (int i = 0; i < 10; ++i) {
    Scheduler::SleepAwaiter a = b.retry();
    EXPECT_TRUE(a.await_ready());
  }
  EXPECT_EQ(b.current_ns(), 1'000'000'000u);  // no growth either
  EXPECT_EQ(b.attempts(), 10u);
  EXPECT_EQ(policy.retries(), 10u);
}

Task<int> RetryLoop(Scheduler* s, BackoffPolicy* policy, int failures) {
  Backoff b(*policy, *s);
  int attempts = 0;
  for (;;) {
    ++attempts;
    if (attempts > failures) {
      b.succeeded();
      break;
    }
    if (b.exhausted()) break;
    co_await b.retry();
  }
  co_return attempts;
}

TEST(BackoffTest, DisabledRetryLoopCompletesInASinglePoll) {
  Scheduler s;
  BackoffOptions o = FixedCeiling(1'000'000'000, 0, 1'000'000'000);
  o.enabled = false;
  BackoffPolicy policy(o);
  Task<int> t = RetryLoop(&s, &policy, 50);
  t.handle().promise().continuation = std::noop_coroutine();
  s.post(t.handle());
  s.poll_once();
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.take_result(), 51);
}

TEST(BackoffTest, EnabledRetryLoopSleepsForTheBackoffSchedule) {
  VirtualClock clock(VirtualClock::Mode::kAutoAdvance);
  ScopedVirtualClock use(clock);
  Scheduler s;
  // Sleeps of 100 us, 200 us, 400 us: 700 us in total, one after the other.
  BackoffPolicy policy(FixedCeiling(100'000, 0, 400'000));
  const uint64_t start = now_ns();
  EXPECT_EQ(s.block_on(RetryLoop(&s, &policy, 3)), 4);
  EXPECT_EQ(now_ns() - start, 700'000u);
  EXPECT_EQ(clock.auto_advances(), 3u);  // one per sleep
  EXPECT_EQ(policy.retries(), 3u);
  EXPECT_EQ(policy.successes(), 1u);
}

// Backoff records retries and successes at now_ns(), so the policy's epochs follow the clock.
TEST(BackoffTest, PolicyEpochsFollowTheThreadsClock) {
  VirtualClock clock(VirtualClock::Mode::kManual);
  ScopedVirtualClock use(clock);
  Scheduler s;
  BackoffOptions o = Seeded();
  o.epoch_ns = 1'000'000;
  BackoffPolicy policy(o);
  const uint64_t initial = policy.ceiling_ns();
  Backoff b(policy, s);
  for (int i = 0; i < 10; ++i) (void)b.retry();  // all retries: rate 100%
  clock.advance(o.epoch_ns - 1);
  (void)b.retry();
  EXPECT_EQ(policy.ceiling_ns(), initial);  // the epoch has not passed yet
  clock.advance(1);
  (void)b.retry();
  EXPECT_EQ(policy.ceiling_ns(), 2 * initial);  // a high retry rate doubles the ceiling
}

TEST(BackoffTest, RetryLoopGivesUpWhenExhausted) {
  Scheduler s;
  BackoffOptions o = FixedCeiling(1, 0, 1);
  o.max_retries = 5;
  BackoffPolicy policy(o);
  EXPECT_EQ(s.block_on(RetryLoop(&s, &policy, 1000)), 6);
  EXPECT_EQ(policy.retries(), 5u);
  EXPECT_EQ(policy.successes(), 0u);
}

}  // namespace
}  // namespace farmem::runtime
