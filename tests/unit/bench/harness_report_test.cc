// The harness's report (farmem/bench/harness/report.h, Bench::report_record/finish_report):
// JSON lines, CSV header and rows, the fields the harness adds, refused file names; and the
// cluster options a run refuses before it starts anything.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "farmem/bench/harness/bench.h"
#include "farmem/bench/harness/cluster.h"
#include "farmem/bench/harness/report.h"

namespace farmem::bench {
namespace {

class ReportTest : public ::testing::Test {
 protected:
  std::string path(const std::string& suffix) {
    std::string p = ::testing::TempDir() + "farmem-report-" + std::to_string(::getpid()) + "-" +
                    std::to_string(files_.size()) + suffix;
    std::remove(p.c_str());
    files_.push_back(p);
    return p;
  }
  void TearDown() override {
    for (const auto& f : files_) std::remove(f.c_str());
  }
  static std::vector<std::string> lines(const std::string& p) {
    std::ifstream in(p);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  std::vector<std::string> files_;
};

TEST_F(ReportTest, JsonGetsOneObjectPerLineInFieldOrder) {
  const std::string p = path(".json");
  nlohmann::ordered_json a;
  a["bench"] = "ops";
  a["mops"] = 1.5;
  a["nested"] = {{"x", 1}};
  ASSERT_TRUE(append_report(p, a).ok());
  nlohmann::ordered_json b;
  b["bench"] = "ycsb";
  ASSERT_TRUE(append_report(p, b).ok());
  const auto got = lines(p);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], R"({"bench":"ops","mops":1.5,"nested":{"x":1}})");
  EXPECT_EQ(got[1], R"({"bench":"ycsb"})");
}

TEST_F(ReportTest, CsvGetsAHeaderOnceAndScalarFieldsOnly) {
  const std::string p = path(".csv");
  nlohmann::ordered_json r;
  r["bench"] = "ops";
  r["block_bytes"] = 4096;
  r["nested"] = {{"x", 1}};     // left out
  r["query"] = "sum 0, where";  // quoted: it has a comma
  r["backoff"] = true;
  ASSERT_TRUE(append_report(p, r).ok());
  ASSERT_TRUE(append_report(p, r).ok());
  const auto got = lines(p);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "bench,block_bytes,query,backoff");
  EXPECT_EQ(got[1], "ops,4096,\"sum 0, where\",true");
  EXPECT_EQ(got[2], got[1]);
}

TEST_F(ReportTest, OtherExtensionsAreRefused) {
  const Status s = append_report(path(".txt"), nlohmann::ordered_json::object());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("must end in .json or .csv"), std::string::npos) << s.to_string();
}

TEST_F(ReportTest, BenchRecordNamesTheBenchAndFinishAddsSeedAndTime) {
  BenchOptions o;
  o.seed = 7;
  o.out = path(".json");
  Bench bench("far frontend", o, {"request"});
  nlohmann::ordered_json r = bench.report_record();
  r["ops_per_s"] = 10;
  ASSERT_EQ(bench.finish_report(r), 0);
  const auto got = lines(o.out);
  ASSERT_EQ(got.size(), 1u);
  const auto j = nlohmann::ordered_json::parse(got[0]);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"bench", "ops_per_s", "seed", "unix_time"}));
  EXPECT_EQ(j["bench"], "far frontend");
  EXPECT_EQ(j["seed"], 7);
  EXPECT_GT(j["unix_time"].get<int64_t>(), 1'600'000'000);
  EXPECT_EQ(bench.result_suffix(), " seed=7");
}

TEST_F(ReportTest, NoOutFileWritesNothing) {
  Bench bench("ops", BenchOptions{}, {"read"});
  EXPECT_EQ(bench.finish_report(bench.report_record()), 0);
}

TEST(ClusterOptionsTest, ConflictingOrIncompleteOptionsAreRefusedBeforeStartingANode) {
  std::unique_ptr<LocalNode> local;
  ClusterOptions both;
  both.servers = "127.0.0.1:1";
  both.config = "cluster.toml";
  EXPECT_EQ(resolve_cluster(both, &local).status().code(), StatusCode::kInvalidArgument);
  ClusterOptions down;
  down.down_nodes = "127.0.0.1:1=3";
  auto r = resolve_cluster(down, &local);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--down-nodes needs"), std::string::npos);
  EXPECT_EQ(local, nullptr);
  ClusterOptions list;
  list.servers = "127.0.0.1:7000,127.0.0.1:7001";
  auto config = resolve_cluster(list, &local);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->memnodes.size(), 2u);
  EXPECT_EQ(local, nullptr);
}

}  // namespace
}  // namespace farmem::bench
