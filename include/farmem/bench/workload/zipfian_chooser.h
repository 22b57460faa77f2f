// ZipfianChooser: YCSB's ZipfianGenerator, a Zipf-distributed item index in [0, n).
//
// Item i (0-based rank) is drawn with probability close to (i + 1)^-theta / zeta(n, theta);
// item 0 is the most popular. The algorithm is Gray et al., "Quickly generating billion-record
// synthetic databases" (SIGMOD 1994), as in YCSB: one uniform double and at most one pow() per
// draw. Items 0 and 1 get exactly their Zipf probability; higher ranks follow Gray's continuous
// approximation (for n = 1000, theta = 0.99 the top-10 share is 0.398 instead of 0.382).
//
// zeta(n, theta) is computed once at construction in O(min(n, 1024)) time: the first terms are
// summed exactly and the tail by Euler-Maclaurin, which matches the plain sum to better than 1e-12
// relative for any n up to 2^64. set_item_count() grows the item space incrementally, as YCSB does
// for workload D (YCSB recomputes eta with the original item count there, a known bug; this class
// uses the current one).
//
// Preconditions: n >= 1 (0 is treated as 1) and 0 < theta < 1 (YCSB's default is 0.99). A theta
// outside (0, 1) asserts in debug builds and is replaced by kDefaultZipfTheta in release builds.
// Thread safety: next() is const, so threads may share a chooser (each with its own Rng) as long
// as nobody calls set_item_count() concurrently; construction is cheap, so one per thread is
// simplest.
#pragma once

#include <cmath>
#include <cstdint>

#include "farmem/bench/workload/rng.h"

namespace farmem::bench::workload {

inline constexpr double kDefaultZipfTheta = 0.99;

// sum_{i=1}^{n} i^-theta. Precondition: 0 < theta < 1 (any theta > 0, theta != 1, works).
double zeta(uint64_t n, double theta);
// sum_{i=from+1}^{to} i^-theta, i.e. zeta(to) - zeta(from) without cancellation. 0 if to <= from.
double zeta_between(uint64_t from, uint64_t to, double theta);

class ZipfianChooser {
 public:
  explicit ZipfianChooser(uint64_t n, double theta = kDefaultZipfTheta);

  // An item index in [0, item_count()).
  uint64_t next(Rng& rng) const {
    const double u = rng.next_double();
    const double uz = u * zetan_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + half_pow_theta_) return 1;
    const double base = eta_ * u - eta_ + 1.0;  // >= (2/n)^(1-theta) > 0 up to rounding
    const double n = static_cast<double>(n_);
    const double x = n * std::pow(base > 0.0 ? base : 0.0, alpha_);
    // x < n except by rounding at u -> 1 (or n near 2^64, where n rounds up); clamp both.
    if (!(x < n)) return n_ - 1;
    const auto ret = static_cast<uint64_t>(x);
    return ret < n_ ? ret : n_ - 1;
  }

  // Changes the item space to [0, n). Growing adds the new zeta terms (O(min(delta, 1024)));
  // shrinking recomputes zeta. n == 0 is treated as 1.
  void set_item_count(uint64_t n);

  uint64_t item_count() const { return n_; }
  double theta() const { return theta_; }
  double zetan() const { return zetan_; }
  // The ideal Zipf probability of `rank`, (rank + 1)^-theta / zeta(n, theta).
  double probability(uint64_t rank) const;
  // The probability this generator (Gray's approximation) gives to ranks [0, k); exact.
  double generated_mass_below(uint64_t k) const;

 private:
  void update_eta();

  uint64_t n_;
  double theta_;
  double alpha_;           // 1 / (1 - theta)
  double zetan_;           // zeta(n, theta)
  double half_pow_theta_;  // 0.5^theta, so zeta(2, theta) = 1 + half_pow_theta_
  double eta_;
};

}  // namespace farmem::bench::workload
