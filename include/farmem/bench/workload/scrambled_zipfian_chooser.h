// ScrambledZipfianChooser: YCSB's ScrambledZipfianGenerator, Zipf popularity spread over the keys.
//
// A rank r is drawn from ZipfianChooser(n, theta) and mapped to the item XXH3_64(r) mod n, so the
// hot items are scattered over [0, n) instead of clustered at the low indices (which would make
// them share B+tree leaves, cache lines or hash buckets). The mapping is a hash, not a
// permutation: a few ranks collide (their keys merge, some keys are never drawn), as in YCSB, so
// the sorted frequency profile equals the Zipfian one up to those collisions.
//
// Difference from YCSB: YCSB draws the rank from a fixed 10^10-item Zipfian for every n (the
// hottest key then gets ~3.8% of draws at theta 0.99, whatever n); here the rank space is n, so
// the skew is that of a Zipfian over n items, as most disaggregated-memory papers use.
//
// Preconditions: as ZipfianChooser (n >= 1, 0 < theta < 1). Thread safety: next() is const; the
// chooser may be shared by threads that each use their own Rng.
#pragma once

#include <cstdint>

#include "farmem/bench/workload/rng.h"
#include "farmem/bench/workload/zipfian_chooser.h"

namespace farmem::bench::workload {

class ScrambledZipfianChooser {
 public:
  explicit ScrambledZipfianChooser(uint64_t n, double theta = kDefaultZipfTheta)
      : zipf_(n, theta) {}

  // An item index in [0, item_count()).
  uint64_t next(Rng& rng) const { return item_of_rank(zipf_.next(rng)); }

  // The item that Zipf rank `rank` maps to: XXH3_64(8-byte little-endian rank) mod n.
  uint64_t item_of_rank(uint64_t rank) const;

  uint64_t item_count() const { return zipf_.item_count(); }
  const ZipfianChooser& zipfian() const { return zipf_; }

 private:
  ZipfianChooser zipf_;
};

}  // namespace farmem::bench::workload
