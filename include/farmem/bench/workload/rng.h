// Rng: a fast, seeded 64-bit pseudo-random generator for workload generation.
//
// The generator is xoshiro256** (Blackman and Vigna); its 256-bit state is filled from the seed
// by splitmix64, so any seed (including 0) is valid and nearby seeds give unrelated streams. It
// is not cryptographic. The same seed always yields the same sequence on every platform.
//
// Use one Rng per thread: Rng::for_thread(seed, thread_index) derives independent per-thread
// streams from one run seed, so a whole multi-threaded run is reproducible from a single number.
//
// Thread safety: none; an Rng is a small value owned by one thread.
#pragma once

#include <cstdint>

namespace farmem::bench::workload {

// One step of splitmix64 over `state` (advances it). Also used to derive seeds.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) {
    uint64_t sm = seed;
    for (uint64_t& word : s_) word = splitmix64(sm);
    // splitmix64 is a bijection of a counter, so four consecutive outputs are never all zero.
  }

  // A generator for thread `thread_index` of a run seeded with `seed`; distinct indices give
  // unrelated streams.
  static Rng for_thread(uint64_t seed, uint64_t thread_index) {
    uint64_t sm = thread_index ^ 0xD1B54A32D192ED03ull;
    return Rng(seed ^ splitmix64(sm));
  }

  // Uniform over all 2^64 values.
  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n) by multiply-high (Lemire); the bias is at most n / 2^64. Returns 0 when
  // n == 0.
  uint64_t uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64);
  }

  // Uniform in [lo, hi], both inclusive. Precondition: lo <= hi.
  uint64_t uniform_between(uint64_t lo, uint64_t hi) {
    const uint64_t span = hi - lo + 1;  // 0 only for the full 64-bit range
    return span == 0 ? next_u64() : lo + uniform(span);
  }

  // Uniform in [0, 1) with 53 random bits.
  double next_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  uint64_t s_[4];
};

}  // namespace farmem::bench::workload
