// Typed options of the benchmarks: the name tables a command line accepts and a report prints
// (farmem/bench/harness/names.h and each benchmark's table), and the defaults each benchmark
// starts from (those of the farmem CLI's flags).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "farmem/bench/agent.h"
#include "farmem/bench/ops.h"
#include "farmem/bench/paged.h"
#include "farmem/bench/txn.h"
#include "farmem/bench/ycsb.h"

namespace farmem::bench {
namespace {

TEST(EnumNamesTest, ParseNameTakesExactSpellingsOnly) {
  EXPECT_EQ(parse_name(kOneSidedOpNames, "faa"), OneSidedOp::kFaa);
  EXPECT_EQ(parse_name(kOneSidedOpNames, "inc"), OneSidedOp::kInc);
  EXPECT_FALSE(parse_name(kOneSidedOpNames, "FAA").has_value());
  EXPECT_FALSE(parse_name(kOneSidedOpNames, "scan").has_value());
  EXPECT_FALSE(parse_name(kOneSidedOpNames, "").has_value());
}

TEST(EnumNamesTest, EveryValueHasItsNameBack) {
  for (const auto& n : kYcsbStructureNames) {
    EXPECT_EQ(name_of(kYcsbStructureNames, n.value), n.name);
    EXPECT_EQ(parse_name(kYcsbStructureNames, n.name), n.value);
  }
  for (const auto& n : kTxnWorkloadNames) EXPECT_EQ(name_of(kTxnWorkloadNames, n.value), n.name);
  EXPECT_EQ(name_of(kPagedBenchModeNames, PagedBenchMode::kScan), "scan");
  EXPECT_EQ(name_of(kAgentReadPatternNames, AgentReadPattern::kSeq), "seq");
}

TEST(EnumNamesTest, AliasesParseToTheirValueAndPrintAsTheFirstName) {
  // YCSB workloads accept capitals (as the CLI always did) and print in lower case.
  EXPECT_EQ(parse_name(kYcsbWorkloadNames, "E"), YcsbWorkload::kE);
  EXPECT_EQ(parse_name(kYcsbWorkloadNames, "e"), YcsbWorkload::kE);
  EXPECT_EQ(name_of(kYcsbWorkloadNames, YcsbWorkload::kE), "e");
  EXPECT_FALSE(parse_name(kYcsbWorkloadNames, "g").has_value());
}

TEST(EnumNamesTest, AllNamesKeepTheTableOrder) {
  EXPECT_EQ(all_names(kOneSidedOpNames),
            (std::vector<std::string>{"read", "write", "cas", "faa", "inc"}));
  EXPECT_EQ(all_names(kYcsbWorkloadNames),
            (std::vector<std::string>{"a", "b", "c", "d", "e", "f", "w", "A", "B", "C", "D", "E",
                                      "F", "W"}));
}

TEST(BenchOptionsTest, DefaultsAreTheFlagsDefaults) {
  const OpsOptions ops;
  EXPECT_EQ(ops.bench.duration_s, 5);
  EXPECT_EQ(ops.bench.threads, 1u);
  EXPECT_EQ(ops.bench.seed, kDefaultBenchSeed);
  EXPECT_EQ(ops.op, OneSidedOp::kRead);
  EXPECT_EQ(ops.depth, 16u);
  EXPECT_EQ(ops.block_bytes, 8u);
  EXPECT_EQ(ops.span_bytes, 64ull << 20);
  EXPECT_FALSE(ops.throttle.has_value());
  EXPECT_FALSE(ops.backoff.has_value());
  EXPECT_FALSE(ops.direct.has_value());
  const YcsbOptions ycsb;
  EXPECT_EQ(ycsb.bench.duration_s, 10);
  EXPECT_EQ(ycsb.structure, YcsbStructure::kHash);
  EXPECT_EQ(ycsb.workload, YcsbWorkload::kA);
  EXPECT_EQ(ycsb.records, 1000000u);
  EXPECT_EQ(ycsb.distribution, workload::Distribution::kZipfian);
  EXPECT_EQ(ycsb.kv_mode, kv::KvMode::kAuto);
  EXPECT_TRUE(ycsb.coalesce);
  EXPECT_EQ(ycsb.bench.cluster.local_idle_spin_us, -1);
  const TxnBenchOptions txn;
  EXPECT_EQ(txn.workload, TxnWorkloadKind::kSmallBank);
  EXPECT_EQ(txn.bench.duration_s, 5);
  EXPECT_EQ(txn.tpcc_items, 100000u);
}

}  // namespace
}  // namespace farmem::bench
