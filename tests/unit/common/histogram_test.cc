// Unit tests for the log-linear latency Histogram.
#include "farmem/common/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "test_seed.h"

namespace farmem {
namespace {

using ::farmem::testing::test_seed;

// Relative error allowed between a quantile estimate and the exact order statistic.
constexpr double kMaxRelativeError = 0.04;

uint64_t ExactQuantile(std::vector<uint64_t> sorted, double q) {
  std::sort(sorted.begin(), sorted.end());
  size_t rank = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1));
  return sorted[rank];
}

void ExpectWithinRelativeError(uint64_t actual, uint64_t expected) {
  double err = std::fabs(static_cast<double>(actual) - static_cast<double>(expected)) /
               static_cast<double>(std::max<uint64_t>(expected, 1));
  EXPECT_LE(err, kMaxRelativeError) << "actual " << actual << " expected " << expected;
}

TEST(HistogramTest, EmptyHistogramReportsZeros) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.quantile(0.0), 0u);
  EXPECT_EQ(h.quantile(0.5), 0u);
  EXPECT_EQ(h.quantile(1.0), 0u);
}

TEST(HistogramTest, SmallValuesAreRecordedExactly) {
  Histogram h;
  for (uint64_t v = 0; v < 32; ++v) {
    EXPECT_EQ(Histogram::bucket_of(v), static_cast<int>(v));
    EXPECT_EQ(Histogram::bucket_low(static_cast<int>(v)), v);
  }
  h.record(7);
  EXPECT_EQ(h.quantile(0.5), 7u);
  EXPECT_EQ(h.max(), 7u);
}

TEST(HistogramTest, BucketLowIsAtMostTheValueAndWithinOneSubBucket) {
  std::mt19937_64 rng(test_seed());
  for (int i = 0; i < 10000; ++i) {
    uint64_t v = rng() >> (rng() % 64);
    if (v >= (1ull << Histogram::kMaxExp)) continue;
    int b = Histogram::bucket_of(v);
    ASSERT_GE(b, 0);
    ASSERT_LT(b, Histogram::kBuckets);
    uint64_t lo = Histogram::bucket_low(b);
    EXPECT_LE(lo, v);
    if (b + 1 < Histogram::kBuckets) {
      EXPECT_GT(Histogram::bucket_low(b + 1), v);
    }
  }
}

TEST(HistogramTest, BucketsAreMonotonic) {
  for (int b = 1; b < Histogram::kBuckets; ++b) {
    ASSERT_LT(Histogram::bucket_low(b - 1), Histogram::bucket_low(b)) << "bucket " << b;
  }
}

TEST(HistogramTest, HugeValuesLandInTheLastBucket) {
  EXPECT_EQ(Histogram::bucket_of(UINT64_MAX), Histogram::kBuckets - 1);
  Histogram h;
  h.record(UINT64_MAX / 4);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.max(), UINT64_MAX / 4);
  EXPECT_LE(h.quantile(1.0), h.max());
}

TEST(HistogramTest, CountMeanAndMaxTrackRecordedValues) {
  Histogram h;
  h.record(100);
  h.record(200);
  h.record(600);
  EXPECT_EQ(h.count(), 3u);
  EXPECT_EQ(h.max(), 600u);
  EXPECT_DOUBLE_EQ(h.mean(), 300.0);
}

TEST(HistogramTest, UniformDistributionQuantilesWithinFourPercent) {
  Histogram h;
  std::vector<uint64_t> values;
  for (uint64_t v = 1; v <= 100000; ++v) {
    values.push_back(v);
    h.record(v);
  }
  for (double q : {0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0}) {
    SCOPED_TRACE(q);
    ExpectWithinRelativeError(h.quantile(q), ExactQuantile(values, q));
  }
  EXPECT_LE(h.quantile(1.0), h.max());
  EXPECT_EQ(h.max(), 100000u);
}

TEST(HistogramTest, LogNormalLatencyQuantilesWithinFourPercent) {
  std::mt19937_64 rng(test_seed());
  std::lognormal_distribution<double> dist(std::log(20'000.0), 1.0);  // ~20 us median
  Histogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = static_cast<uint64_t>(dist(rng)) + 1;
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.0, 0.05, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    SCOPED_TRACE(q);
    ExpectWithinRelativeError(h.quantile(q), ExactQuantile(values, q));
  }
  EXPECT_EQ(h.max(), values.back());
}

TEST(HistogramTest, QuantileClampsOutOfRangeArguments) {
  Histogram h;
  for (uint64_t v = 1000; v <= 2000; ++v) h.record(v);
  EXPECT_EQ(h.quantile(-1.0), h.quantile(0.0));
  EXPECT_EQ(h.quantile(2.0), h.quantile(1.0));
  ExpectWithinRelativeError(h.quantile(0.0), 1000);
  ExpectWithinRelativeError(h.quantile(1.0), 2000);
}

TEST(HistogramTest, QuantileNeverExceedsMax) {
  Histogram h;
  h.record(1'000'001);  // midpoint of its bucket lies above the value
  EXPECT_LE(h.quantile(0.5), 1'000'001u);
  EXPECT_LE(h.quantile(1.0), 1'000'001u);
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  Histogram a, b, all;
  std::mt19937_64 rng(test_seed());
  for (int i = 0; i < 5000; ++i) {
    uint64_t v = rng() % 1'000'000;
    (i % 2 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (double q : {0.0, 0.1, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(a.quantile(q), all.quantile(q));
}

TEST(HistogramTest, MergingAnEmptyHistogramChangesNothing) {
  Histogram a, empty;
  a.record(500);
  a.record(1500);
  a.merge(empty);
  EXPECT_EQ(a.count(), 2u);
  EXPECT_EQ(a.max(), 1500u);
  EXPECT_DOUBLE_EQ(a.mean(), 1000.0);
  Histogram into_empty;
  into_empty.merge(a);
  EXPECT_EQ(into_empty.count(), 2u);
  EXPECT_EQ(into_empty.quantile(1.0), a.quantile(1.0));
}

TEST(HistogramTest, ResetEmptiesTheHistogram) {
  Histogram h;
  h.record(123456);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.quantile(0.5), 0u);
  h.record(10);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.quantile(0.5), 10u);
}

}  // namespace
}  // namespace farmem
