// LatestChooser: YCSB's SkewedLatestGenerator (workload D), Zipf popularity over recency.
//
// The chooser reads the current key count c from an externally owned std::atomic<uint64_t>
// (the keys that exist are [0, c), inserted in index order) and returns c - 1 - r with r drawn
// from ZipfianChooser(c, theta): the most recently inserted key is the most popular, the one
// before it the second most popular, and so on. When c has changed since the previous draw the
// Zipfian constant is updated incrementally (O(new keys), at most ~1024 pow() calls).
//
// The counter is read with memory_order_acquire on every draw and is never written here; the
// caller owns it, keeps it alive as long as the chooser, and increases it as keys are inserted.
// (YCSB's generator returns keys in [1, c] of its acknowledged insert sequence; here the range
// is [0, c).)
//
// Preconditions: counter != nullptr, *counter >= 1 whenever next() is called (with 0, next()
// returns 0), 0 < theta < 1. Thread safety: the counter may be updated concurrently by any
// thread; the chooser itself is per thread (next() mutates its cached Zipfian state).
#pragma once

#include <atomic>
#include <cstdint>

#include "farmem/bench/workload/rng.h"
#include "farmem/bench/workload/zipfian_chooser.h"

namespace farmem::bench::workload {

class LatestChooser {
 public:
  explicit LatestChooser(const std::atomic<uint64_t>* key_count, double theta = kDefaultZipfTheta)
      : key_count_(key_count), zipf_(at_least_one(key_count), theta) {}

  // A key index in [0, c) for the counter value c read now.
  uint64_t next(Rng& rng) {
    const uint64_t c = key_count_->load(std::memory_order_acquire);
    if (c == 0) return 0;
    if (c != zipf_.item_count()) zipf_.set_item_count(c);
    return c - 1 - zipf_.next(rng);
  }

  const ZipfianChooser& zipfian() const { return zipf_; }

 private:
  static uint64_t at_least_one(const std::atomic<uint64_t>* c) {
    const uint64_t v = c->load(std::memory_order_acquire);
    return v == 0 ? 1 : v;
  }

  const std::atomic<uint64_t>* key_count_;
  ZipfianChooser zipf_;
};

}  // namespace farmem::bench::workload
