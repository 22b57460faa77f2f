// A log-linear latency histogram (HdrHistogram-like, ~3% relative error), fixed size, no
// allocation after construction. Records values in nanoseconds up to ~1 hour.
// Thread safety: not thread-safe; keep one per thread and merge() at report time.
#pragma once

#include <array>
#include <cstdint>

namespace farmem {

class Histogram {
 public:
  // 5 sub-bucket bits: 32 linear sub-buckets per power of two.
  static constexpr int kSubBits = 5;
  static constexpr int kSubBuckets = 1 << kSubBits;
  static constexpr int kMaxExp = 42;  // 2^42 ns ~ 73 minutes
  static constexpr int kBuckets = (kMaxExp + 1) * kSubBuckets;

  void record(uint64_t value_ns);
  void merge(const Histogram& other);
  void reset();
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  // q in [0, 1]; returns a representative value (bucket midpoint) in ns, 0 when empty.
  uint64_t quantile(double q) const;

  static int bucket_of(uint64_t v);
  static uint64_t bucket_low(int b);

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace farmem
