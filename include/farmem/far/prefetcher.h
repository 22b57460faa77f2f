// StridePrefetcher: a container's access-pattern detector (AIFM's per-container prefetcher).
//
// record(i) is given each chunk index the container dereferences. After kStableRuns equal
// non-zero strides in a row it asks the cache to fetch the next window() chunks ahead along the
// stride, each chunk once; a different stride resets it. The window is the transport's
// bandwidth-delay product in chunks: the cache's smoothed miss latency times a per-transport
// bandwidth (shared memory 8 B/ns, RDMA 3 B/ns, TCP 1 B/ns), 2..kMaxWindow chunks.
// Prefetches never evict (ThreadCache::prefetch), so they only use free space.
// Thread safety: the container's thread.
#pragma once

#include <algorithm>
#include <cstdint>

namespace farmem::far {

class StridePrefetcher {
 public:
  static constexpr uint32_t kStableRuns = 3;
  static constexpr uint32_t kMaxWindow = 64;

  void set_enabled(bool on) {
    enabled_ = on;
    reset();
  }
  bool enabled() const { return enabled_; }
  // Returns how many chunks to prefetch after `index` (0: none) and where they start:
  // *first = index + stride * k for k = 1..n, skipping those already asked for.
  uint32_t record(int64_t index, uint32_t window, int64_t* first, int64_t* stride) {
    if (!enabled_ || index == last_) return 0;
    const int64_t d = index - last_;
    last_ = index;
    if (d != stride_) {
      stride_ = d;
      runs_ = 1;
      issued_to_ = index;
      return 0;
    }
    if (++runs_ < kStableRuns) return 0;
    const int64_t target = index + stride_ * static_cast<int64_t>(window);
    const int64_t from = (stride_ > 0 ? std::max(issued_to_, index) : std::min(issued_to_, index));
    const int64_t n = (target - from) / stride_;
    if (n <= 0) return 0;
    *first = from + stride_;
    *stride = stride_;
    issued_to_ = target;
    return static_cast<uint32_t>(n);
  }
  void reset() {
    last_ = INT64_MIN / 2;
    stride_ = 0;
    runs_ = 0;
  }
  static uint32_t window_for(uint64_t latency_ns, double bytes_per_ns, uint64_t chunk_bytes) {
    const double w = latency_ns * bytes_per_ns / static_cast<double>(chunk_bytes);
    return std::clamp<uint32_t>(static_cast<uint32_t>(w + 1), 2, kMaxWindow);
  }

 private:
  bool enabled_ = true;
  int64_t last_ = INT64_MIN / 2;
  int64_t stride_ = 0;
  uint32_t runs_ = 0;
  int64_t issued_to_ = 0;
};

}  // namespace farmem::far
