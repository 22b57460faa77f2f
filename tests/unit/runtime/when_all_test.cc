// Unit tests for runtime::when_all. Sleeping tasks run on an auto-advancing VirtualClock, so
// "they ran concurrently" is checked on virtual time, exactly, not on real elapsed time.
#include "farmem/runtime/when_all.h"

#include <gtest/gtest.h>

#include <vector>

#include "farmem/common/clock.h"
#include "farmem/common/virtual_clock.h"
#include "farmem/runtime/scheduler.h"

namespace farmem::runtime {
namespace {

Task<int> immediate(int v) { co_return v * 2; }

Task<int> sleepy(Scheduler* s, int v, uint64_t ns, std::vector<int>* finish_order) {
  co_await s->sleep_for_ns(ns);
  finish_order->push_back(v);
  co_return v;
}

Task<void> count_after_yield(Scheduler* s, int* counter) {
  co_await s->yield();
  ++*counter;
}

Task<std::vector<int>> gather_immediate(int n) {
  std::vector<Task<int>> tasks;
  for (int i = 0; i < n; ++i) tasks.push_back(immediate(i));
  auto r = co_await when_all(std::move(tasks));
  co_return r;
}

TEST(WhenAllTest, SynchronousTasksReturnResultsInOrder) {
  Scheduler s;
  s.install();
  std::vector<int> r = s.block_on(gather_immediate(1000));
  ASSERT_EQ(r.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(r[i], 2 * i);
}

Task<std::vector<int>> gather_sleepy(Scheduler* s, std::vector<int>* order) {
  std::vector<Task<int>> tasks;
  tasks.push_back(sleepy(s, 1, 3'000'000, order));
  tasks.push_back(sleepy(s, 2, 1'000'000, order));
  tasks.push_back(sleepy(s, 3, 2'000'000, order));
  auto r = co_await when_all(std::move(tasks));
  co_return r;
}

TEST(WhenAllTest, SuspendingTasksRunConcurrentlyAndKeepTheirOrder) {
  VirtualClock clock(VirtualClock::Mode::kAutoAdvance);
  ScopedVirtualClock use(clock);
  Scheduler s;
  s.install();
  std::vector<int> order;
  const uint64_t t0 = now_ns();
  std::vector<int> r = s.block_on(gather_sleepy(&s, &order));
  EXPECT_EQ(r, (std::vector<int>{1, 2, 3}));      // result order = task order
  EXPECT_EQ(order, (std::vector<int>{2, 3, 1}));  // they finished by their sleeps
  // The sleeps overlapped: the whole took the longest sleep (3 ms), not their sum (6 ms).
  EXPECT_EQ(now_ns() - t0, 3'000'000u);
}

Task<void> gather_void(Scheduler* s, int* counter) {
  std::vector<Task<void>> tasks;
  for (int i = 0; i < 50; ++i) tasks.push_back(count_after_yield(s, counter));
  co_await when_all(std::move(tasks));
}

TEST(WhenAllTest, VoidTasksAllFinishBeforeTheAwaiterResumes) {
  Scheduler s;
  s.install();
  int counter = 0;
  s.block_on(gather_void(&s, &counter));
  EXPECT_EQ(counter, 50);
}

Task<void> gather_none() {
  std::vector<Task<void>> none;
  co_await when_all(std::move(none));
}

TEST(WhenAllTest, EmptyListCompletesAtOnceAndFramesAreReturned) {
  Scheduler s;
  s.install();
  size_t live = frame_pool_stats().live_frames;
  s.block_on(gather_none());
  (void)s.block_on(gather_immediate(100));
  EXPECT_EQ(frame_pool_stats().live_frames, live);
}

}  // namespace
}  // namespace farmem::runtime
