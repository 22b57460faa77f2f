// Unit tests for the per-thread coroutine FramePool.
#include "farmem/runtime/frame_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/task.h"
#include "test_seed.h"

namespace farmem::runtime {
namespace {

using ::farmem::testing::test_seed;

Task<int> Leaf(int v) { co_return v; }

Task<int> Branch(Scheduler* s, int v) {
  int a = co_await Leaf(v);
  co_await s->yield();
  int b = co_await Leaf(v);
  co_return a + b;
}

Task<void> Worker(Scheduler* s, int v, long* sum) {
  int r = co_await Branch(s, v);
  *sum += r;
}

// Runs one cycle of `n` spawned coroutines, each awaiting nested tasks across a yield.
long SpawnCycle(Scheduler* s, int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) EXPECT_TRUE(s->spawn(Worker(s, i, &sum)).ok());
  s->run_until_idle();
  return sum;
}

TEST(FramePoolTest, LiveFramesReturnToTheirStartValueAfterTasksFinish) {
  Scheduler s;
  size_t start = frame_pool_stats().live_frames;
  long sum = SpawnCycle(&s, 500);
  EXPECT_EQ(sum, 2L * (499L * 500L / 2));
  EXPECT_EQ(frame_pool_stats().live_frames, start);
}

TEST(FramePoolTest, SuspendedTasksHoldLiveFrames) {
  Scheduler s;
  size_t start = frame_pool_stats().live_frames;
  long sum = 0;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s.spawn(Worker(&s, 1, &sum)).ok());
  s.poll_once();  // every worker is now parked at its yield
  // Each parked worker holds its detached wrapper, the Worker frame and the Branch frame.
  EXPECT_GE(frame_pool_stats().live_frames, start + 30);
  s.run_until_idle();
  EXPECT_EQ(sum, 20);
  EXPECT_EQ(frame_pool_stats().live_frames, start);
}

TEST(FramePoolTest, RepeatedSpawnCyclesDoNotGrowSlabBytes) {
  Scheduler s;
  SpawnCycle(&s, 1000);  // warm the pool
  size_t slab_after_warmup = frame_pool_stats().slab_bytes;
  size_t live_after_warmup = frame_pool_stats().live_frames;
  EXPECT_GT(slab_after_warmup, 0u);
  for (int cycle = 0; cycle < 20; ++cycle) {
    SpawnCycle(&s, 1000);
    ASSERT_EQ(frame_pool_stats().slab_bytes, slab_after_warmup) << "cycle " << cycle;
    ASSERT_EQ(frame_pool_stats().live_frames, live_after_warmup) << "cycle " << cycle;
  }
}

TEST(FramePoolTest, FreedFrameIsReusedForTheSameSizeClass) {
  void* a = frame_alloc(100);
  frame_free(a, 100);
  void* b = frame_alloc(120);  // same 64-byte class (65..128)
  EXPECT_EQ(a, b);
  frame_free(b, 120);
}

TEST(FramePoolTest, AllocationCountsAsALiveFrameUntilFreed) {
  FramePoolStats before = frame_pool_stats();
  void* p = frame_alloc(64);
  EXPECT_EQ(frame_pool_stats().live_frames, before.live_frames + 1);
  frame_free(p, 64);
  EXPECT_EQ(frame_pool_stats().live_frames, before.live_frames);
}

TEST(FramePoolTest, LargeFramesBypassThePool) {
  FramePoolStats before = frame_pool_stats();
  void* p = frame_alloc(kMaxPooledBytes + 1);
  ASSERT_NE(p, nullptr);
  std::memset(p, 0xAB, kMaxPooledBytes + 1);
  FramePoolStats during = frame_pool_stats();
  EXPECT_EQ(during.large_frames, before.large_frames + 1);
  EXPECT_EQ(during.live_frames, before.live_frames);
  EXPECT_EQ(during.slab_bytes, before.slab_bytes);
  frame_free(p, kMaxPooledBytes + 1);
  EXPECT_EQ(frame_pool_stats().large_frames, before.large_frames);
}

TEST(FramePoolTest, LargestPooledSizeStaysInThePool) {
  FramePoolStats before = frame_pool_stats();
  void* p = frame_alloc(kMaxPooledBytes);
  EXPECT_EQ(frame_pool_stats().large_frames, before.large_frames);
  EXPECT_EQ(frame_pool_stats().live_frames, before.live_frames + 1);
  std::memset(p, 0xCD, kMaxPooledBytes);
  frame_free(p, kMaxPooledBytes);
}

TEST(FramePoolTest, LiveFramesAreAlignedAndDoNotOverlap) {
  std::mt19937_64 rng(test_seed());
  std::uniform_int_distribution<size_t> size_dist(1, kMaxPooledBytes);
  std::map<uintptr_t, size_t> live;  // address -> bytes
  std::vector<std::pair<void*, size_t>> frames;
  for (int i = 0; i < 2000; ++i) {
    size_t bytes = size_dist(rng);
    void* p = frame_alloc(bytes);
    ASSERT_NE(p, nullptr);
    auto addr = reinterpret_cast<uintptr_t>(p);
    EXPECT_EQ(addr % alignof(std::max_align_t), 0u) << "frame of " << bytes << " bytes";
    auto next = live.lower_bound(addr);
    if (next != live.end()) {
      ASSERT_LE(addr + bytes, next->first) << "overlaps a later frame";
    }
    if (next != live.begin()) {
      auto prev = std::prev(next);
      ASSERT_LE(prev->first + prev->second, addr) << "overlaps an earlier frame";
    }
    live.emplace(addr, bytes);
    std::memset(p, i & 0xFF, bytes);
    frames.emplace_back(p, bytes);
  }
  // Contents survive until freed (no frame was handed out twice).
  for (size_t i = 0; i < frames.size(); ++i) {
    auto* bytes = static_cast<unsigned char*>(frames[i].first);
    ASSERT_EQ(bytes[0], i & 0xFF);
    ASSERT_EQ(bytes[frames[i].second - 1], i & 0xFF);
  }
  for (auto& [p, bytes] : frames) frame_free(p, bytes);
}

TEST(FramePoolTest, EachThreadHasItsOwnPool) {
  FramePoolStats main_before = frame_pool_stats();
  FramePoolStats in_thread_start, in_thread_live;
  std::thread t([&] {
    in_thread_start = frame_pool_stats();
    void* p = frame_alloc(256);
    in_thread_live = frame_pool_stats();
    frame_free(p, 256);
  });
  t.join();
  EXPECT_EQ(in_thread_start.live_frames, 0u);
  EXPECT_EQ(in_thread_start.slab_bytes, 0u);
  EXPECT_EQ(in_thread_live.live_frames, 1u);
  EXPECT_GT(in_thread_live.slab_bytes, 0u);
  EXPECT_EQ(frame_pool_stats().live_frames, main_before.live_frames);
  EXPECT_EQ(frame_pool_stats().slab_bytes, main_before.slab_bytes);
}

}  // namespace
}  // namespace farmem::runtime
