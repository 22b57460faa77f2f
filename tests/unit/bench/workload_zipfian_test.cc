// Unit tests for zeta(), ZipfianChooser, ScrambledZipfianChooser and LatestChooser.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "farmem/bench/workload/latest_chooser.h"
#include "farmem/bench/workload/rng.h"
#include "farmem/bench/workload/scrambled_zipfian_chooser.h"
#include "farmem/bench/workload/zipfian_chooser.h"
#include "test_seed.h"

namespace farmem::bench::workload {
namespace {

using ::farmem::testing::test_seed;

// sum_{i=1}^{n} i^-theta, accumulated in long double, smallest terms first.
long double reference_zeta(uint64_t n, double theta) {
  long double sum = 0;
  for (uint64_t i = n; i >= 1; --i) sum += std::pow(static_cast<double>(i), -theta);
  return sum;
}

std::vector<uint64_t> histogram(uint64_t n, int draws, const std::function<uint64_t()>& draw) {
  std::vector<uint64_t> counts(n, 0);
  for (int i = 0; i < draws; ++i) {
    const uint64_t v = draw();
    if (v >= n) {
      ADD_FAILURE() << "draw " << v << " outside [0, " << n << ")";
      return counts;
    }
    ++counts[v];
  }
  return counts;
}

TEST(ZipfianZetaTest, MatchesDirectSummation) {
  for (double theta : {0.2, 0.5, 0.8, 0.99}) {
    for (uint64_t n :
         {1ull, 2ull, 3ull, 10ull, 1000ull, 1024ull, 1025ull, 2049ull, 5000ull, 200'000ull}) {
      const long double expected = reference_zeta(n, theta);
      EXPECT_NEAR(zeta(n, theta), static_cast<double>(expected), 1e-12 * expected)
          << "n=" << n << " theta=" << theta;
    }
  }
  const long double million = reference_zeta(1'000'000, 0.99);
  EXPECT_NEAR(zeta(1'000'000, 0.99), static_cast<double>(million), 1e-12 * million);
  EXPECT_EQ(zeta(0, 0.99), 0.0);
  EXPECT_DOUBLE_EQ(zeta(2, 0.99), 1.0 + std::pow(0.5, 0.99));
}

TEST(ZipfianZetaTest, MatchesYcsbConstantForTenBillionItems) {
  // YCSB's ScrambledZipfianGenerator hard-codes zeta(10^10, 0.99) = 26.46902820178302 (computed
  // by a plain double sum, so good to ~1e-9 relative).
  EXPECT_NEAR(zeta(10'000'000'000ull, 0.99), 26.46902820178302, 26.47 * 1e-8);
}

TEST(ZipfianZetaTest, BetweenIsTheDifferenceOfPrefixSums) {
  const double theta = 0.99;
  for (auto [a, b] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, 10}, {10, 11}, {100, 5000}, {1000, 200'000}, {5000, 6000}, {123456, 199999}}) {
    const double expected =
        static_cast<double>(reference_zeta(b, theta) - reference_zeta(a, theta));
    EXPECT_NEAR(zeta_between(a, b, theta), expected, 1e-11 * expected) << a << ".." << b;
  }
  EXPECT_EQ(zeta_between(10, 10, theta), 0.0);
  EXPECT_EQ(zeta_between(10, 5, theta), 0.0);
}

TEST(ZipfianChooserTest, FrequenciesFollowZipf) {
  constexpr uint64_t kN = 1000;
  constexpr int kDraws = 1'000'000;
  const double theta = 0.99;
  ZipfianChooser zipf(kN, theta);
  EXPECT_EQ(zipf.item_count(), kN);
  EXPECT_DOUBLE_EQ(zipf.theta(), theta);
  const double z = static_cast<double>(reference_zeta(kN, theta));
  EXPECT_NEAR(zipf.zetan(), z, 1e-12 * z);

  Rng rng(test_seed());
  const auto counts = histogram(kN, kDraws, [&] { return zipf.next(rng); });
  auto freq = [&](uint64_t i) { return static_cast<double>(counts[i]) / kDraws; };

  // Items 0 and 1 have their exact Zipf probability (1/zeta and 2^-theta/zeta).
  EXPECT_NEAR(freq(0), 1.0 / z, 0.02 / z);
  EXPECT_NEAR(freq(1), std::pow(0.5, theta) / z, 0.03 * std::pow(0.5, theta) / z);
  EXPECT_NEAR(zipf.probability(0), 1.0 / z, 1e-12);

  // The cumulative mass of the top k ranks matches the generator's closed form tightly and the
  // ideal Zipf law loosely (Gray's approximation gives ranks >= 2 slightly more mass).
  double running = 0.0;
  uint64_t next_k = 0;
  for (uint64_t k : {2ull, 3ull, 5ull, 10ull, 100ull, 500ull}) {
    for (; next_k < k; ++next_k) running += freq(next_k);
    double ideal = 0.0;
    for (uint64_t i = 0; i < k; ++i) ideal += zipf.probability(i);
    EXPECT_NEAR(running, zipf.generated_mass_below(k), 0.004) << "top " << k;
    EXPECT_NEAR(running, ideal, 0.05 * ideal) << "top " << k;
  }
  // Top-10 share: ideal 0.382, generated 0.398.
  double top10 = 0.0;
  for (uint64_t i = 0; i < 10; ++i) top10 += freq(i);
  EXPECT_GT(top10, 0.37);
  EXPECT_LT(top10, 0.41);

  // Popularity decreases with rank, and the tail is reached.
  EXPECT_GT(counts[0], counts[1]);
  EXPECT_GT(counts[1], counts[2]);
  EXPECT_GT(counts[2], counts[10]);
  EXPECT_GT(counts[10], counts[100]);
  EXPECT_GT(counts[100], counts[900]);
  EXPECT_GT(counts[999], 0u);
}

TEST(ZipfianChooserTest, LowerThetaIsFlatter) {
  ZipfianChooser skewed(1000, 0.99), flat(1000, 0.5);
  Rng a(test_seed()), b(test_seed());
  int zero_skewed = 0, zero_flat = 0;
  for (int i = 0; i < 100'000; ++i) {
    zero_skewed += skewed.next(a) == 0;
    zero_flat += flat.next(b) == 0;
  }
  EXPECT_NEAR(zero_flat / 1e5, 1.0 / zeta(1000, 0.5), 0.003);
  EXPECT_GT(zero_skewed, 3 * zero_flat);
}

TEST(ZipfianChooserTest, TinyItemCounts) {
  Rng rng(test_seed());
  ZipfianChooser one(1);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(one.next(rng), 0u);
  ZipfianChooser two(2);
  int zeros = 0;
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t v = two.next(rng);
    ASSERT_LT(v, 2u);
    zeros += v == 0;
  }
  EXPECT_NEAR(zeros / 1e5, 1.0 / zeta(2, 0.99), 0.01);
  ZipfianChooser three(3);
  std::vector<int> c(3, 0);
  for (int i = 0; i < 100'000; ++i) ++c[three.next(rng)];
  EXPECT_GT(c[0], c[1]);
  EXPECT_GT(c[1], c[2]);
  EXPECT_GT(c[2], 0);
}

TEST(ZipfianChooserTest, GrowsIncrementallyLikeAFreshChooser) {
  ZipfianChooser zipf(1000);
  for (uint64_t n = 1001; n <= 3000; ++n) zipf.set_item_count(n);  // one insert at a time
  EXPECT_EQ(zipf.item_count(), 3000u);
  EXPECT_NEAR(zipf.zetan(), zeta(3000, 0.99), 1e-12 * zipf.zetan());
  zipf.set_item_count(100'000'000);  // a large jump uses Euler-Maclaurin
  EXPECT_NEAR(zipf.zetan(), zeta(100'000'000, 0.99), 1e-12 * zipf.zetan());
  zipf.set_item_count(5000);
  EXPECT_NEAR(zipf.zetan(), zeta(5000, 0.99), 1e-12 * zipf.zetan());
  zipf.set_item_count(0);
  EXPECT_EQ(zipf.item_count(), 1u);

  // After growth the draws cover the new range with the new skew, exactly as a fresh chooser.
  ZipfianChooser grown(1000), fresh(5000);
  grown.set_item_count(5000);
  Rng a(test_seed()), b(test_seed());
  uint64_t beyond_old = 0;
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t v = grown.next(a);
    ASSERT_EQ(v, fresh.next(b));
    ASSERT_LT(v, 5000u);
    beyond_old += v >= 1000;
  }
  const double expected_beyond = 1.0 - fresh.generated_mass_below(1000);
  EXPECT_NEAR(beyond_old / 1e5, expected_beyond, 0.01);
}

TEST(ZipfianChooserTest, HugeItemCountConstructsQuicklyAndStaysInRange) {
  ZipfianChooser zipf(1ull << 40);
  Rng rng(test_seed());
  uint64_t max_seen = 0;
  for (int i = 0; i < 10'000; ++i) {
    const uint64_t v = zipf.next(rng);
    ASSERT_LT(v, 1ull << 40);
    max_seen = std::max(max_seen, v);
  }
  EXPECT_GT(max_seen, 1ull << 30);
}

TEST(ZipfianChooserTest, DeterministicUnderFixedSeed) {
  ZipfianChooser zipf(100'000);
  Rng a(test_seed()), b(test_seed());
  for (int i = 0; i < 10'000; ++i) ASSERT_EQ(zipf.next(a), zipf.next(b));
}

TEST(ScrambledZipfianChooserTest, KeepsTheZipfProfileButSpreadsHotItems) {
  constexpr uint64_t kN = 1000;
  constexpr int kDraws = 1'000'000;
  ScrambledZipfianChooser scrambled(kN, 0.99);
  EXPECT_EQ(scrambled.item_count(), kN);
  Rng rng(test_seed());
  auto counts = histogram(kN, kDraws, [&] { return scrambled.next(rng); });

  // The hottest key is where rank 0 maps, with rank 0's frequency (plus the ~1/n of other ranks
  // that collide into it).
  const uint64_t hottest = std::max_element(counts.begin(), counts.end()) - counts.begin();
  EXPECT_EQ(hottest, scrambled.item_of_rank(0));
  const double z = zeta(kN, 0.99);
  EXPECT_NEAR(static_cast<double>(counts[hottest]) / kDraws, 1.0 / z, 0.03 / z);

  // Sorted by popularity, the frequencies follow the Zipfian profile up to hash collisions.
  // Collisions merge ranks into one key, so the k hottest keys hold at least the mass of the k
  // hottest ranks and a little more, the more the deeper into the tail (~1/n per merged rank).
  std::vector<uint64_t> sorted = counts;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const ZipfianChooser& zipf = scrambled.zipfian();
  double top = 0.0;
  for (uint64_t k = 0; k < 100; ++k) {
    top += static_cast<double>(sorted[k]) / kDraws;
    const double ideal = zipf.generated_mass_below(k + 1);
    if (k + 1 == 2 || k + 1 == 10) {
      EXPECT_NEAR(top, ideal, 0.01) << "top " << k + 1;
    } else if (k + 1 == 100) {
      EXPECT_GT(top, ideal - 0.005);
      EXPECT_LT(top, ideal + 0.06);
    }
  }
  // About 1/e of the keys receive no rank at all (balls into bins), none in plain Zipfian.
  const auto never = std::count(counts.begin(), counts.end(), 0u);
  EXPECT_GT(never, 300);
  EXPECT_LT(never, 440);

  // The 10 hottest keys are scattered, not the 10 lowest indices.
  std::vector<uint64_t> order(kN);
  for (uint64_t i = 0; i < kN; ++i) order[i] = i;
  std::partial_sort(order.begin(), order.begin() + 10, order.end(),
                    [&](uint64_t x, uint64_t y) { return counts[x] > counts[y]; });
  const auto [lo, hi] = std::minmax_element(order.begin(), order.begin() + 10);
  EXPECT_GT(*hi - *lo, kN / 2);
  int low_indices = 0;
  for (int i = 0; i < 10; ++i) low_indices += order[i] < 10;
  EXPECT_LE(low_indices, 1);
}

TEST(ScrambledZipfianChooserTest, IsTheHashOfAZipfianRank) {
  ScrambledZipfianChooser scrambled(54321, 0.9);
  ZipfianChooser zipf(54321, 0.9);
  Rng a(test_seed()), b(test_seed());
  for (int i = 0; i < 10'000; ++i) {
    const uint64_t v = scrambled.next(a);
    ASSERT_LT(v, 54321u);
    ASSERT_EQ(v, scrambled.item_of_rank(zipf.next(b)));
  }
  // Distinct ranks mostly land on distinct items.
  std::set<uint64_t> items;
  for (uint64_t r = 0; r < 1000; ++r) items.insert(scrambled.item_of_rank(r));
  EXPECT_GT(items.size(), 980u);
}

TEST(LatestChooserTest, PrefersTheMostRecentKeys) {
  std::atomic<uint64_t> count{1000};
  LatestChooser latest(&count, 0.99);
  Rng rng(test_seed());
  constexpr int kDraws = 200'000;
  auto counts = histogram(1000, kDraws, [&] { return latest.next(rng); });
  const double z = zeta(1000, 0.99);
  EXPECT_EQ(std::max_element(counts.begin(), counts.end()) - counts.begin(), 999);
  EXPECT_NEAR(static_cast<double>(counts[999]) / kDraws, 1.0 / z, 0.03 / z);
  EXPECT_GT(counts[998], counts[997]);
  EXPECT_GT(counts[990], counts[500]);
  uint64_t newest_tenth = 0;
  for (uint64_t i = 900; i < 1000; ++i) newest_tenth += counts[i];
  EXPECT_NEAR(static_cast<double>(newest_tenth) / kDraws,
              latest.zipfian().generated_mass_below(100), 0.01);
}

TEST(LatestChooserTest, FollowsTheCounterAsKeysAreInserted) {
  std::atomic<uint64_t> count{1000};
  LatestChooser latest(&count);
  Rng rng(test_seed());
  count.store(2000);  // 1000 inserts by other threads
  auto counts = histogram(2000, 100'000, [&] { return latest.next(rng); });
  EXPECT_EQ(std::max_element(counts.begin(), counts.end()) - counts.begin(), 1999);
  EXPECT_EQ(latest.zipfian().item_count(), 2000u);
  EXPECT_NEAR(latest.zipfian().zetan(), zeta(2000, 0.99), 1e-12 * zeta(2000, 0.99));
  uint64_t new_keys = 0;
  for (uint64_t i = 1000; i < 2000; ++i) new_keys += counts[i];
  EXPECT_GT(new_keys, 90'000u);  // ~95% of draws fall on the newest half

  // One insert at a time: the newest key is always allowed and the range never overshoots.
  for (int i = 0; i < 1000; ++i) {
    const uint64_t c = count.fetch_add(1) + 1;
    const uint64_t v = latest.next(rng);
    ASSERT_LT(v, c);
  }
  EXPECT_EQ(latest.zipfian().item_count(), 3000u);
  EXPECT_NEAR(latest.zipfian().zetan(), zeta(3000, 0.99), 1e-12 * zeta(3000, 0.99));
}

TEST(LatestChooserTest, SingleKeyAndEmptyCounter) {
  std::atomic<uint64_t> count{1};
  LatestChooser latest(&count);
  Rng rng(test_seed());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(latest.next(rng), 0u);
  count.store(0);
  EXPECT_EQ(latest.next(rng), 0u);
  std::atomic<uint64_t> empty{0};
  LatestChooser from_empty(&empty);
  EXPECT_EQ(from_empty.next(rng), 0u);
  empty.store(10);
  EXPECT_LT(from_empty.next(rng), 10u);
}

}  // namespace
}  // namespace farmem::bench::workload
