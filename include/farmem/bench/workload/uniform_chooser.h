// UniformChooser: an item index drawn uniformly from [0, n) (YCSB's UniformLongGenerator).
//
// Precondition: n >= 1 (with n == 0, next() returns 0). Thread safety: next() is const; the
// chooser may be shared, each thread using its own Rng.
#pragma once

#include <cstdint>

#include "farmem/bench/workload/rng.h"

namespace farmem::bench::workload {

class UniformChooser {
 public:
  explicit UniformChooser(uint64_t n) : n_(n) {}

  uint64_t next(Rng& rng) const { return rng.uniform(n_); }
  uint64_t item_count() const { return n_; }

 private:
  uint64_t n_;
};

}  // namespace farmem::bench::workload
