// The ds toolkit's pure parts: DirectMappedCache and RetryLoop (ds/common). The parts that need
// a memory node (FarObject, ObjectHeap, Reclaimer, LeaseLock) are in
// tests/integration/ds/ds_common_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "farmem/common/virtual_clock.h"
#include "farmem/ds/common/direct_mapped_cache.h"
#include "farmem/ds/common/retry.h"
#include "farmem/runtime/scheduler.h"

namespace farmem::ds {
namespace {

struct Entry {
  uint64_t tag = 0;
  uint64_t value = 0;
};

TEST(DirectMappedCacheTest, KeysShareALineByTheirLowBitsAndTheNewerWins) {
  DirectMappedCache<Entry> cache(4);  // 16 entries
  ASSERT_TRUE(cache.enabled());
  EXPECT_EQ(cache.size(), 16u);
  cache.at(3) = Entry{3, 30};
  EXPECT_EQ(cache.at(3).value, 30u);
  EXPECT_EQ(cache.at(3 + 16).tag, 3u);  // same line: the caller's tag tells them apart
  cache.at(3 + 16) = Entry{19, 190};
  EXPECT_EQ(cache.at(3).tag, 19u);
  cache.clear();
  EXPECT_EQ(cache.at(3).tag, 0u);
}

TEST(DirectMappedCacheTest, NegativeSizeDisablesIt) {
  DirectMappedCache<Entry> off(-1);
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.size(), 0u);
  off.prefetch(7);  // harmless
}

runtime::Task<Status> contended(RetryLoop* loop, int succeed_after) {
  for (int attempt = 0;; ++attempt) {
    if (attempt == succeed_after) {
      loop->succeeded();
      co_return OkStatus();
    }
    if (loop->exhausted()) co_return loop->give_up();
    co_await loop->retry();
  }
}

TEST(RetryLoopTest, GivesUpWithOneCodeAndMessageAfterTheBound) {
  VirtualClock clock(VirtualClock::Mode::kAutoAdvance);
  ScopedVirtualClock guard(clock);
  runtime::Scheduler scheduler;
  scheduler.install();
  runtime::BackoffPolicy policy;
  RetryLoop loop(policy, scheduler, "test update", 5);
  Status s = scheduler.block_on(contended(&loop, 1000));
  EXPECT_EQ(s.code(), StatusCode::kRetriesExhausted);
  EXPECT_EQ(s.message(), "test update gave up after 5 contended attempts");
  EXPECT_EQ(loop.attempts(), 5u);
}

TEST(RetryLoopTest, SucceedsWithinTheBoundAfterBackingOff) {
  VirtualClock clock(VirtualClock::Mode::kAutoAdvance);
  ScopedVirtualClock guard(clock);
  runtime::Scheduler scheduler;
  scheduler.install();
  runtime::BackoffPolicy policy;
  RetryLoop loop(policy, scheduler, "cas", 10);
  const uint64_t start = now_ns();
  EXPECT_TRUE(scheduler.block_on(contended(&loop, 3)).ok());
  EXPECT_EQ(loop.attempts(), 3u);
  EXPECT_GT(now_ns(), start);  // the retries slept (in virtual time)
  EXPECT_EQ(policy.successes(), 1u);
}

TEST(RetryLoopTest, OnlyAContendedSuccessReachesThePolicy) {
  VirtualClock clock(VirtualClock::Mode::kAutoAdvance);
  ScopedVirtualClock guard(clock);
  runtime::Scheduler scheduler;
  scheduler.install();
  runtime::BackoffPolicy policy;
  RetryLoop uncontended(policy, scheduler, "cas", 10);
  EXPECT_TRUE(scheduler.block_on(contended(&uncontended, 0)).ok());
  EXPECT_EQ(policy.successes(), 0u);
  EXPECT_EQ(policy.retries(), 0u);
  RetryLoop retried(policy, scheduler, "cas", 10);
  EXPECT_TRUE(scheduler.block_on(contended(&retried, 2)).ok());
  EXPECT_EQ(policy.successes(), 1u);
  EXPECT_EQ(policy.retries(), 2u);
}

}  // namespace
}  // namespace farmem::ds
