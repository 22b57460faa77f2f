// Unit tests for OpGenerator: operation mixes, key choice per distribution, concurrent inserts,
// determinism and option validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "farmem/bench/workload/op_generator.h"
#include "farmem/bench/workload/rng.h"
#include "farmem/bench/workload/workload_spec.h"
#include "test_seed.h"

namespace farmem::bench::workload {
namespace {

using ::farmem::testing::test_seed;

WorkloadSpec core(const char* name) {
  auto spec = workload_by_name(name);
  EXPECT_TRUE(spec.ok()) << spec.status().to_string();
  return *spec;
}

OpGeneratorOptions options_for(const WorkloadSpec& spec, uint64_t record_count,
                               std::atomic<uint64_t>* counter,
                               Distribution distribution = Distribution::kZipfian) {
  OpGeneratorOptions o;
  o.spec = spec;
  o.record_count = record_count;
  o.distribution = distribution;
  o.key_counter = counter;
  return o;
}

bool same_op(const Op& a, const Op& b) {
  return a.type == b.type && a.key == b.key && a.scan_length == b.scan_length;
}

TEST(OpGeneratorTest, EveryCoreWorkloadHitsItsMix) {
  constexpr int kDraws = 300'000;
  constexpr uint64_t kRecords = 10'000;
  for (Distribution distribution : {Distribution::kZipfian, Distribution::kUniform}) {
    for (const WorkloadSpec& spec : core_workloads()) {
      SCOPED_TRACE("workload " + spec.name + " " + std::string(distribution_name(distribution)));
      std::atomic<uint64_t> counter{kRecords};
      auto gen = OpGenerator::create(options_for(spec, kRecords, &counter, distribution));
      ASSERT_TRUE(gen.ok()) << gen.status().to_string();
      Rng rng(test_seed());
      std::array<int, kOpTypeCount> counts{};
      uint64_t next_insert = kRecords, scan_total = 0;
      uint32_t scan_min = UINT32_MAX, scan_max = 0;
      for (int i = 0; i < kDraws; ++i) {
        const Op op = gen->next(rng);
        ++counts[static_cast<int>(op.type)];
        if (op.type == OpType::kInsert) {
          ASSERT_EQ(op.key, next_insert++);  // one thread: dense, in order
        } else {
          ASSERT_LT(op.key, counter.load());
        }
        if (op.type == OpType::kScan) {
          scan_total += op.scan_length;
          scan_min = std::min(scan_min, op.scan_length);
          scan_max = std::max(scan_max, op.scan_length);
        } else {
          ASSERT_EQ(op.scan_length, 0u);
        }
      }
      EXPECT_EQ(counter.load(), next_insert);
      for (int t = 0; t < kOpTypeCount; ++t) {
        const auto type = static_cast<OpType>(t);
        // sd of a proportion over 3e5 draws is at most 0.0009: 0.006 is 6.5 sd, so no seed
        // fails this by chance.
        EXPECT_NEAR(static_cast<double>(counts[t]) / kDraws, spec.proportion(type), 0.006)
            << op_type_name(type);
        if (spec.proportion(type) == 0.0) {
          EXPECT_EQ(counts[t], 0) << op_type_name(type);
        }
      }
      const int scans = counts[static_cast<int>(OpType::kScan)];
      if (scans > 0) {
        EXPECT_EQ(scan_min, 1u);
        EXPECT_EQ(scan_max, 100u);
        EXPECT_NEAR(static_cast<double>(scan_total) / scans, 50.5, 1.0);
      }
    }
  }
}

TEST(OpGeneratorTest, ChooserFollowsWorkloadAndDistribution) {
  std::atomic<uint64_t> counter{100};
  auto kind = [&](const char* name, Distribution d) {
    auto gen = OpGenerator::create(options_for(core(name), 100, &counter, d));
    EXPECT_TRUE(gen.ok());
    return gen->chooser_kind();
  };
  EXPECT_EQ(kind("a", Distribution::kZipfian), ChooserKind::kScrambledZipfian);
  EXPECT_EQ(kind("e", Distribution::kZipfian), ChooserKind::kScrambledZipfian);
  EXPECT_EQ(kind("d", Distribution::kZipfian), ChooserKind::kLatest);
  EXPECT_EQ(kind("d", Distribution::kUniform), ChooserKind::kUniform);
  EXPECT_EQ(kind("c", Distribution::kUniform), ChooserKind::kUniform);
}

TEST(OpGeneratorTest, ZipfianReadsAreSkewedAndUniformReadsAreFlat) {
  constexpr uint64_t kRecords = 1000;
  constexpr int kDraws = 100'000;
  for (Distribution d : {Distribution::kZipfian, Distribution::kUniform}) {
    auto gen = OpGenerator::create(options_for(core("c"), kRecords, nullptr, d));
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    Rng rng(test_seed());
    std::vector<int> counts(kRecords, 0);
    for (int i = 0; i < kDraws; ++i) ++counts[gen->next(rng).key];
    const int hottest = *std::max_element(counts.begin(), counts.end());
    if (d == Distribution::kZipfian) {
      EXPECT_NEAR(hottest / static_cast<double>(kDraws), 1.0 / zeta(kRecords, 0.99), 0.005);
    } else {
      EXPECT_LT(hottest, 2 * kDraws / static_cast<int>(kRecords));
    }
  }
}

TEST(OpGeneratorTest, ZipfConstantIsApplied) {
  OpGeneratorOptions o = options_for(core("c"), 1000, nullptr);
  o.zipf_theta = 0.5;
  auto gen = OpGenerator::create(o);
  ASSERT_TRUE(gen.ok());
  Rng rng(test_seed());
  std::vector<int> counts(1000, 0);
  for (int i = 0; i < 100'000; ++i) ++counts[gen->next(rng).key];
  const int hottest = *std::max_element(counts.begin(), counts.end());
  EXPECT_NEAR(hottest / 1e5, 1.0 / zeta(1000, 0.5), 0.003);
}

TEST(OpGeneratorTest, WorkloadDReadsPreferRecentInserts) {
  constexpr uint64_t kRecords = 1000;
  std::atomic<uint64_t> counter{kRecords};
  auto gen = OpGenerator::create(options_for(core("d"), kRecords, &counter));
  ASSERT_TRUE(gen.ok());
  Rng rng(test_seed());
  int reads = 0, reads_of_newest_10 = 0;
  for (int i = 0; i < 100'000; ++i) {
    const Op op = gen->next(rng);
    if (op.type != OpType::kRead) continue;
    const uint64_t c = counter.load();
    ASSERT_LT(op.key, c);
    ++reads;
    reads_of_newest_10 += op.key + 10 >= c;
  }
  EXPECT_GT(counter.load(), kRecords + 4000);  // ~5000 inserts happened
  // Zipf(theta 0.99) over ~6000 keys gives the 10 newest ~0.36 of the reads.
  EXPECT_GT(static_cast<double>(reads_of_newest_10) / reads, 0.3);
}

TEST(OpGeneratorTest, VisibleKeyCountBoundsReads) {
  std::atomic<uint64_t> counter{1000}, visible{1000};
  OpGeneratorOptions o = options_for(core("d"), 1000, &counter);
  o.visible_key_count = &visible;
  auto gen = OpGenerator::create(o);
  ASSERT_TRUE(gen.ok());
  Rng rng(test_seed());
  int top_reads = 0;
  for (int i = 0; i < 20'000; ++i) {
    const Op op = gen->next(rng);
    if (op.type == OpType::kInsert) {
      ASSERT_GE(op.key, 1000u);
    } else {
      ASSERT_LT(op.key, 1000u);  // the claimed but unacknowledged inserts are never read
      top_reads += op.key == 999;
    }
  }
  EXPECT_GT(counter.load(), 1500u);
  EXPECT_GT(top_reads, 1000);
}

TEST(OpGeneratorTest, ExpectedNewKeysLetZipfianScansReachInsertedKeys) {
  std::atomic<uint64_t> counter{1000};
  OpGeneratorOptions o = options_for(core("e"), 1000, &counter);
  o.expected_new_keys = 1000;
  auto gen = OpGenerator::create(o);
  ASSERT_TRUE(gen.ok());
  Rng rng(test_seed());
  counter.store(1500);  // other threads inserted 500 keys
  int beyond_loaded = 0;
  for (int i = 0; i < 20'000; ++i) {
    const Op op = gen->next(rng);
    if (op.type == OpType::kInsert) continue;
    ASSERT_LT(op.key, counter.load());
    beyond_loaded += op.key >= 1000;
  }
  EXPECT_GT(beyond_loaded, 1000);

  // Without expected_new_keys only the loaded keys are chosen.
  std::atomic<uint64_t> counter2{1000};
  auto plain = OpGenerator::create(options_for(core("e"), 1000, &counter2));
  ASSERT_TRUE(plain.ok());
  counter2.store(1500);
  for (int i = 0; i < 20'000; ++i) {
    const Op op = plain->next(rng);
    if (op.type != OpType::kInsert) {
      ASSERT_LT(op.key, 1000u);
    }
  }
}

TEST(OpGeneratorTest, InsertsFromTwoThreadsGetDistinctIndices) {
  constexpr uint64_t kRecords = 5000;
  constexpr int kOpsPerThread = 50'000;
  WorkloadSpec insert_heavy = core("d");
  insert_heavy.name = "insert-heavy";
  insert_heavy.read_proportion = 0.5;
  insert_heavy.insert_proportion = 0.5;
  const uint64_t seed = test_seed();  // read once, on the test's thread
  std::atomic<uint64_t> counter{kRecords};
  std::vector<uint64_t> inserted[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      auto gen = OpGenerator::create(options_for(insert_heavy, kRecords, &counter));
      ASSERT_TRUE(gen.ok());
      Rng rng = Rng::for_thread(seed, t);
      for (int i = 0; i < kOpsPerThread; ++i) {
        const Op op = gen->next(rng);
        if (op.type == OpType::kInsert) inserted[t].push_back(op.key);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_GT(inserted[0].size(), 20'000u);
  ASSERT_GT(inserted[1].size(), 20'000u);
  std::vector<uint64_t> all = inserted[0];
  all.insert(all.end(), inserted[1].begin(), inserted[1].end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "duplicate insert key";
  // Dense: exactly [kRecords, counter).
  ASSERT_EQ(counter.load(), kRecords + all.size());
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], kRecords + i);
  // Each thread's own inserts are increasing.
  for (const auto& mine : inserted) EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
}

TEST(OpGeneratorTest, DeterministicUnderFixedSeed) {
  for (const WorkloadSpec& spec : core_workloads()) {
    SCOPED_TRACE(spec.name);
    std::atomic<uint64_t> c1{5000}, c2{5000}, c3{5000};
    auto g1 = OpGenerator::create(options_for(spec, 5000, &c1));
    auto g2 = OpGenerator::create(options_for(spec, 5000, &c2));
    auto g3 = OpGenerator::create(options_for(spec, 5000, &c3));
    ASSERT_TRUE(g1.ok() && g2.ok() && g3.ok());
    Rng r1(test_seed()), r2(test_seed()), r3(test_seed() + 1);
    int differ = 0;
    for (int i = 0; i < 10'000; ++i) {
      const Op a = g1->next(r1);
      ASSERT_TRUE(same_op(a, g2->next(r2))) << "op " << i;
      differ += !same_op(a, g3->next(r3));
    }
    EXPECT_GT(differ, 100);
  }
}

TEST(OpGeneratorTest, RejectsInvalidOptions) {
  std::atomic<uint64_t> counter{100};
  auto expect_invalid = [](const OpGeneratorOptions& o, const char* what) {
    auto gen = OpGenerator::create(o);
    ASSERT_FALSE(gen.ok()) << what;
    EXPECT_EQ(gen.status().code(), StatusCode::kInvalidArgument) << what;
    EXPECT_FALSE(gen.status().message().empty()) << what;
  };
  OpGeneratorOptions o = options_for(core("a"), 0, &counter);
  expect_invalid(o, "record_count 0");

  for (double theta : {0.0, 1.0, 1.5, -0.1}) {
    o = options_for(core("a"), 100, &counter);
    o.zipf_theta = theta;
    expect_invalid(o, "theta");
  }
  o = options_for(core("a"), 100, &counter, Distribution::kUniform);
  o.zipf_theta = 1.0;  // unused by uniform
  EXPECT_TRUE(OpGenerator::create(o).ok());

  expect_invalid(options_for(core("d"), 100, nullptr), "D without a key counter");
  expect_invalid(options_for(core("e"), 100, nullptr), "E without a key counter");
  EXPECT_TRUE(OpGenerator::create(options_for(core("c"), 100, nullptr)).ok());
  expect_invalid(options_for(core("d"), 200, &counter), "counter below record_count");

  o = options_for(core("a"), 100, &counter);
  o.spec.read_proportion = -0.5;
  expect_invalid(o, "negative proportion");
  o = options_for(core("a"), 100, &counter);
  o.spec.read_proportion = o.spec.update_proportion = 0;
  expect_invalid(o, "empty mix");
  o = options_for(core("e"), 100, &counter);
  o.spec.min_scan_length = 10;
  o.spec.max_scan_length = 5;
  expect_invalid(o, "scan min > max");
  o = options_for(core("e"), 100, &counter);
  o.expected_new_keys = UINT64_MAX;
  expect_invalid(o, "key space overflow");
}

TEST(OpGeneratorTest, CustomMixIsNormalised) {
  WorkloadSpec spec;
  spec.name = "custom";
  spec.read_proportion = 3;
  spec.update_proportion = 1;  // 75% / 25%
  spec.scan_proportion = 0;
  auto gen = OpGenerator::create(options_for(spec, 100, nullptr));
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  Rng rng(test_seed());
  int reads = 0;
  for (int i = 0; i < 300'000; ++i) reads += gen->next(rng).type == OpType::kRead;
  EXPECT_NEAR(reads / 3e5, 0.75, 0.006);  // sd 0.0008
}

}  // namespace
}  // namespace farmem::bench::workload
