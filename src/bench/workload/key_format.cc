#include "farmem/bench/workload/key_format.h"

#include <cassert>
#include <cstring>

namespace farmem::bench::workload {
namespace {

// Added before mixing so that index 0 does not map to 0 (fmix64(0) == 0): the only index whose
// key prefix is all zero is 2^64 - kOffset (about 7.1e18).
constexpr uint64_t kOffset = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kMul1 = 0xFF51AFD7ED558CCDull;
constexpr uint64_t kMul2 = 0xC4CEB9FE1A85EC53ull;

// The inverse of an odd number modulo 2^64 by Newton's iteration (each step doubles the correct
// low bits; x = a is correct to 3 bits).
constexpr uint64_t inverse_mod_2_64(uint64_t a) {
  uint64_t x = a;
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}
constexpr uint64_t kInvMul1 = inverse_mod_2_64(kMul1);
constexpr uint64_t kInvMul2 = inverse_mod_2_64(kMul2);
static_assert(kMul1 * kInvMul1 == 1 && kMul2 * kInvMul2 == 1);

void store_le64(uint64_t v, char* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>(v >> (8 * i));
}

}  // namespace

uint64_t scramble_index(uint64_t x) {
  x += kOffset;
  x ^= x >> 33;
  x *= kMul1;
  x ^= x >> 33;
  x *= kMul2;
  x ^= x >> 33;
  return x;
}

uint64_t unscramble_index(uint64_t x) {
  // x ^= x >> 33 is its own inverse because 2 * 33 >= 64.
  x ^= x >> 33;
  x *= kInvMul2;
  x ^= x >> 33;
  x *= kInvMul1;
  x ^= x >> 33;
  return x - kOffset;
}

void format_key(uint64_t index, size_t key_bytes, char* out) {
  assert(key_bytes >= kMinKeyBytes && "keys shorter than 8 bytes are not unique");
  const uint64_t h = scramble_index(index);
  if (key_bytes < kMinKeyBytes) {
    store_le64(h, out, key_bytes);
    return;
  }
  store_le64(h, out, 8);
  std::memset(out + 8, 0, key_bytes - 8);
}

std::string make_key(uint64_t index, size_t key_bytes) {
  std::string key(key_bytes, '\0');
  format_key(index, key_bytes, key.data());
  return key;
}

uint64_t key_index(const char* key) {
  uint64_t h = 0;
  for (int i = 0; i < 8; ++i) {
    h |= static_cast<uint64_t>(static_cast<unsigned char>(key[i])) << (8 * i);
  }
  return unscramble_index(h);
}

Status validate_key_bytes(size_t key_bytes) {
  if (key_bytes < kMinKeyBytes) {
    return InvalidArgument("key size must be at least 8 bytes, got " + std::to_string(key_bytes));
  }
  return OkStatus();
}

}  // namespace farmem::bench::workload
