// test_knob(): a positive integer a long run of a test may set in the environment (more kill
// cycles, a longer log to cut), or `fallback` when it is unset, zero or not a number. The
// default is what `make test` runs; the knob is for the long runs an issue asks for.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace farmem::testing {

inline uint64_t test_knob(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  const long long n = v != nullptr ? std::atoll(v) : 0;
  return n > 0 ? static_cast<uint64_t>(n) : fallback;
}

}  // namespace farmem::testing
