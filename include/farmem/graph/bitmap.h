// Bitmap: one bit per index over a buffer from a GraphMemory (GAPBS's frontier bitmaps and
// Brandes' successor bits). Bits start clear; clear() zeroes them in parallel.
// Thread safety: get() from any thread; set() when no other thread writes the same word;
// set_atomic() from any thread; clear() from the algorithm's thread (it drives the pool).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "farmem/graph/memory.h"
#include "farmem/graph/thread_pool.h"

namespace farmem::graph {

class Bitmap {
 public:
  Bitmap() = default;
  explicit Bitmap(Array<uint64_t> words) : words_(std::move(words)) {}

  bool get(uint64_t i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  void set(uint64_t i) const { words_[i >> 6] |= bit(i); }
  void set_atomic(uint64_t i) const {
    std::atomic_ref<uint64_t>(words_[i >> 6]).fetch_or(bit(i), std::memory_order_relaxed);
  }
  uint64_t word(uint64_t w) const { return words_[w]; }
  uint64_t words() const { return words_.size(); }
  void clear(ThreadPool& pool) const {
    uint64_t* w = words_.data();
    pool.parallel_for(words_.size(), 1 << 14, [&](uint64_t, uint64_t b, uint64_t e) {
      std::memset(w + b, 0, (e - b) * sizeof(uint64_t));
    });
  }
  void swap(Bitmap& o) noexcept { std::swap(words_, o.words_); }

 private:
  static uint64_t bit(uint64_t i) { return uint64_t{1} << (i & 63); }
  Array<uint64_t> words_;
};

// A clear bitmap of `bits` bits from `memory`.
inline Result<Bitmap> allocate_bitmap(GraphMemory& memory, uint64_t bits, std::string_view what,
                                      Access access = Access::kRandom) {
  auto words = allocate_array<uint64_t>(memory, (bits + 63) / 64, what, access);
  FARMEM_TRY(words);
  return Bitmap(std::move(*words));
}

}  // namespace farmem::graph
