#include "farmem/common/histogram.h"

#include <algorithm>
#include <bit>

namespace farmem {

int Histogram::bucket_of(uint64_t v) {
  if (v < static_cast<uint64_t>(kSubBuckets)) return static_cast<int>(v);
  int exp = 63 - std::countl_zero(v);  // v in [2^exp, 2^(exp+1))
  int shift = exp - kSubBits;
  int sub = static_cast<int>((v >> shift) & (kSubBuckets - 1));
  int b = (shift + 1) * kSubBuckets + sub;
  return std::min(b, kBuckets - 1);
}

uint64_t Histogram::bucket_low(int b) {
  if (b < kSubBuckets) return static_cast<uint64_t>(b);
  int shift = b / kSubBuckets - 1;
  uint64_t sub = static_cast<uint64_t>(b % kSubBuckets);
  return (static_cast<uint64_t>(kSubBuckets) | sub) << shift;
}

void Histogram::record(uint64_t v) {
  ++buckets_[bucket_of(v)];
  ++count_;
  sum_ += v;
  max_ = std::max(max_, v);
}

void Histogram::merge(const Histogram& o) {
  for (int i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  max_ = std::max(max_, o.max_);
}

void Histogram::reset() { *this = Histogram(); }

uint64_t Histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count_ - 1)) + 1;
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      uint64_t lo = bucket_low(b);
      uint64_t hi = b + 1 < kBuckets ? bucket_low(b + 1) : lo;
      return std::min(max_, lo + (hi - lo) / 2);
    }
  }
  return max_;
}

}  // namespace farmem
