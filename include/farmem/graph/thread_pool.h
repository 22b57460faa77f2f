// ThreadPool: N threads (the caller plus N-1 workers) running parallel loops over index ranges.
//
// parallel_for(n, grain, fn) splits [0, n) into chunks of `grain` indices (the last may be
// shorter) and calls fn(chunk, begin, end) once per chunk, on any of the threads; chunks are
// taken dynamically, so load balances, but the chunking depends only on n and grain, never on
// the thread count: a reduction that keeps one partial per chunk and sums them in chunk order is
// deterministic. Returns when every chunk has run.
//
// Preconditions: one parallel_for at a time (the pool is driven by one thread, the one that
// built it); fn does not throw and does not call parallel_for.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace farmem::graph {

class ThreadPool {
 public:
  using ChunkFn = std::function<void(uint64_t chunk, uint64_t begin, uint64_t end)>;

  explicit ThreadPool(uint32_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  uint32_t threads() const { return static_cast<uint32_t>(workers_.size()) + 1; }
  static uint64_t chunks(uint64_t n, uint64_t grain) { return (n + grain - 1) / grain; }
  void parallel_for(uint64_t n, uint64_t grain, const ChunkFn& fn);

 private:
  void worker_loop();
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;  // guarded by mu_
  uint32_t busy_ = 0;        // workers still in the current job, guarded by mu_
  bool stop_ = false;        // guarded by mu_
  // The current job (written before generation_ is bumped, read by workers after).
  const ChunkFn* fn_ = nullptr;
  uint64_t n_ = 0, grain_ = 1, chunks_ = 0;
  std::atomic<uint64_t> next_{0};
};

}  // namespace farmem::graph
