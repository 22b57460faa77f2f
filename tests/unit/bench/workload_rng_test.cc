// Unit tests for the workload Rng (splitmix64 seeding + xoshiro256**) and UniformChooser.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "farmem/bench/workload/rng.h"
#include "farmem/bench/workload/uniform_chooser.h"
#include "test_seed.h"

namespace farmem::bench::workload {
namespace {

using ::farmem::testing::test_seed;

TEST(WorkloadRngTest, Splitmix64MatchesReferenceVectors) {
  // Reference outputs of Vigna's splitmix64.c for seed 1234567.
  uint64_t state = 1234567;
  EXPECT_EQ(splitmix64(state), 6457827717110365317ull);
  EXPECT_EQ(splitmix64(state), 3203168211198807973ull);
  EXPECT_EQ(splitmix64(state), 9817491932198370423ull);
}

TEST(WorkloadRngTest, Xoshiro256StarStarSeededBySplitmixIsStable) {
  // xoshiro256** with its state filled by four splitmix64 outputs from seed 0.
  Rng rng(0);
  EXPECT_EQ(rng.next_u64(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(rng.next_u64(), 0xbf6e1f784956452aull);
  EXPECT_EQ(rng.next_u64(), 0x1a5f849d4933e6e0ull);
}

TEST(WorkloadRngTest, SameSeedSameStreamDifferentSeedsDiffer) {
  Rng a(test_seed()), b(test_seed()), c(test_seed() + 1);
  int equal_to_c = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.next_u64();
    ASSERT_EQ(x, b.next_u64());
    if (x == c.next_u64()) ++equal_to_c;
  }
  EXPECT_EQ(equal_to_c, 0);
}

TEST(WorkloadRngTest, ThreadStreamsAreDistinctAndReproducible) {
  const uint64_t seed = test_seed();
  Rng t0 = Rng::for_thread(seed, 0), t1 = Rng::for_thread(seed, 1);
  Rng t0_again = Rng::for_thread(seed, 0), other_run = Rng::for_thread(seed + 1, 0);
  int same01 = 0, same_runs = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = t0.next_u64();
    ASSERT_EQ(x, t0_again.next_u64());
    if (x == t1.next_u64()) ++same01;
    if (x == other_run.next_u64()) ++same_runs;
  }
  EXPECT_EQ(same01, 0);
  EXPECT_EQ(same_runs, 0);
}

TEST(WorkloadRngTest, NextDoubleIsInUnitIntervalWithMeanOneHalf) {
  Rng rng(test_seed());
  double sum = 0.0, lo = 1.0, hi = 0.0;
  constexpr int kDraws = 200'000;
  for (int i = 0; i < kDraws; ++i) {
    const double d = rng.next_double();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum += d;
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.005);  // sd of the mean is 0.00065
  EXPECT_LT(lo, 1e-4);
  EXPECT_GT(hi, 1 - 1e-4);
}

TEST(WorkloadRngTest, UniformStaysBelowBoundAndCoversIt) {
  Rng rng(test_seed());
  EXPECT_EQ(rng.uniform(0), 0u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(rng.uniform(1), 0u);
  std::vector<int> seen(3, 0);
  for (int i = 0; i < 3000; ++i) {
    const uint64_t v = rng.uniform(3);
    ASSERT_LT(v, 3u);
    ++seen[v];
  }
  for (int count : seen) EXPECT_NEAR(count, 1000, 150);
  const uint64_t big = (1ull << 63) + 12345;
  bool upper_half = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t v = rng.uniform(big);
    ASSERT_LT(v, big);
    upper_half |= v >= (1ull << 62);
  }
  EXPECT_TRUE(upper_half);
}

TEST(WorkloadRngTest, UniformBetweenIsInclusive) {
  Rng rng(test_seed());
  bool saw_lo = false, saw_hi = false;
  for (int i = 0; i < 10'000; ++i) {
    const uint64_t v = rng.uniform_between(1, 100);
    ASSERT_GE(v, 1u);
    ASSERT_LE(v, 100u);
    saw_lo |= v == 1;
    saw_hi |= v == 100;
  }
  EXPECT_TRUE(saw_lo);
  EXPECT_TRUE(saw_hi);
  EXPECT_EQ(rng.uniform_between(5, 5), 5u);
  (void)rng.uniform_between(0, UINT64_MAX);  // the full range must not divide by zero
}

TEST(UniformChooserTest, IsFlatByChiSquare) {
  constexpr uint64_t kBuckets = 100;
  constexpr int kDraws = 1'000'000;
  UniformChooser chooser(kBuckets);
  EXPECT_EQ(chooser.item_count(), kBuckets);
  Rng rng(test_seed());
  std::vector<int> counts(kBuckets, 0);
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t v = chooser.next(rng);
    ASSERT_LT(v, kBuckets);
    ++counts[v];
  }
  const double expected = static_cast<double>(kDraws) / kBuckets;
  double chi2 = 0.0;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  // 99 degrees of freedom: mean 99, sd 14; 170 is five standard deviations out.
  EXPECT_LT(chi2, 170.0);
  for (int c : counts) EXPECT_NEAR(c, expected, 0.05 * expected);
}

TEST(UniformChooserTest, LargeRangeCoversBothEnds) {
  UniformChooser chooser(1'000'000'000);
  Rng rng(test_seed());
  uint64_t lo = UINT64_MAX, hi = 0;
  // Each end is missed with probability 0.999^20000 (about 2e-9) for a given seed.
  for (int i = 0; i < 20'000; ++i) {
    const uint64_t v = chooser.next(rng);
    ASSERT_LT(v, 1'000'000'000u);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_LT(lo, 1'000'000u);
  EXPECT_GT(hi, 999'000'000u);
}

}  // namespace
}  // namespace farmem::bench::workload
