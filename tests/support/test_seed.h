// test_seed(): the one seed of every randomized test, so that a failure can be replayed.
//
// The seed is FARMEM_TEST_SEED (decimal, or hexadecimal with 0x) when set, "random" for a fresh
// seed from std::random_device, or kDefaultTestSeed otherwise; it is the same for every call in
// the process. The first call within each test prints
//   [   SEED   ] Suite.Test seed=<n> (replay: FARMEM_TEST_SEED=<n>)
// and a failing test that called it prints the replay line again after its failures. A test that
// needs several independent streams derives them from this one seed (seed + 1, Rng::for_thread).
// A malformed FARMEM_TEST_SEED aborts the test binary with a message.
//
// Known-answer tests (reference vectors of a generator) keep their literal seeds.
// Thread safety: callable from any thread of a test.
#pragma once

#include <cstdint>

namespace farmem::testing {

inline constexpr uint64_t kDefaultTestSeed = 20240601;

uint64_t test_seed();

}  // namespace farmem::testing
