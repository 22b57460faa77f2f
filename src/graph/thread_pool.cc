#include "farmem/graph/thread_pool.h"

#include <algorithm>

namespace farmem::graph {

ThreadPool::ThreadPool(uint32_t threads) {
  const uint32_t n = std::max<uint32_t>(threads, 1);
  for (uint32_t i = 1; i < n; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  for (;;) {
    const uint64_t c = next_.fetch_add(1, std::memory_order_relaxed);
    if (c >= chunks_) return;
    const uint64_t begin = c * grain_;
    (*fn_)(c, begin, std::min(n_, begin + grain_));
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_chunks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(uint64_t n, uint64_t grain, const ChunkFn& fn) {
  if (n == 0) return;
  grain = std::max<uint64_t>(grain, 1);
  const uint64_t chunks = ThreadPool::chunks(n, grain);
  if (workers_.empty() || chunks == 1) {
    for (uint64_t c = 0; c < chunks; ++c) fn(c, c * grain, std::min(n, (c + 1) * grain));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    grain_ = grain;
    chunks_ = chunks;
    next_.store(0, std::memory_order_relaxed);
    busy_ = static_cast<uint32_t>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  run_chunks();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return busy_ == 0; });
}

}  // namespace farmem::graph
