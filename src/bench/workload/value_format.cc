#include "farmem/bench/workload/value_format.h"

#include "farmem/bench/workload/rng.h"

namespace farmem::bench::workload {
namespace {

uint64_t filler_seed(uint64_t index, uint64_t version) {
  uint64_t a = index ^ 0x5851F42D4C957F2Dull;
  uint64_t b = version ^ 0x14057B7EF767814Full;
  uint64_t mixed = splitmix64(a) ^ (splitmix64(b) * 0x9E3779B97F4A7C15ull);
  return splitmix64(mixed);
}

uint64_t load_le64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

void store_le64(uint64_t v, char* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>(v >> (8 * i));
}

// Where the filler begins: after the header when the value has room for one.
size_t filler_start(size_t value_bytes) {
  return value_bytes >= kValueHeaderBytes ? kValueHeaderBytes : 0;
}

}  // namespace

void fill_value(uint64_t index, uint64_t version, size_t value_bytes, char* out) {
  const size_t start = filler_start(value_bytes);
  if (start != 0) {
    store_le64(index, out, 8);
    store_le64(version, out + 8, 8);
  }
  uint64_t state = filler_seed(index, version);
  for (size_t pos = start; pos < value_bytes; pos += 8) {
    const size_t n = value_bytes - pos < 8 ? value_bytes - pos : 8;
    store_le64(splitmix64(state), out + pos, n);
  }
}

bool check_value(uint64_t index, uint64_t version, size_t value_bytes, const char* value) {
  const size_t start = filler_start(value_bytes);
  if (start != 0 && (load_le64(value) != index || load_le64(value + 8) != version)) return false;
  uint64_t state = filler_seed(index, version);
  for (size_t pos = start; pos < value_bytes; pos += 8) {
    const size_t n = value_bytes - pos < 8 ? value_bytes - pos : 8;
    const uint64_t word = splitmix64(state);
    for (size_t i = 0; i < n; ++i) {
      if (value[pos + i] != static_cast<char>(word >> (8 * i))) return false;
    }
  }
  return true;
}

bool read_value_header(const char* value, size_t value_bytes, uint64_t* index, uint64_t* version) {
  if (value_bytes < kValueHeaderBytes) return false;
  *index = load_le64(value);
  *version = load_le64(value + 8);
  return true;
}

}  // namespace farmem::bench::workload
