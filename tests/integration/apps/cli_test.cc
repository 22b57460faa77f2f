// The farmem command: bench ops with its embedded local node, reports, status.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.h"

namespace farmem::testing {
namespace {

std::string temp_path(const std::string& suffix) {
  char tmpl[] = "/tmp/farmem-cli-XXXXXX";
  int fd = mkstemp(tmpl);
  close(fd);
  std::remove(tmpl);
  return std::string(tmpl) + suffix;
}

TEST(CliTest, BenchOpsWithEmbeddedNodeAppendsJsonAndCsv) {
  std::string json = temp_path(".json"), csv = temp_path(".csv");
  for (const char* op : {"read", "write", "cas", "faa"}) {
    std::string out;
    int rc = run_command(std::string(FARMEM_CLI_BIN) + " bench ops --duration 0.3 --op " + op +
                             " --depth 4 --span-bytes 1048576 --out " + json,
                         &out);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find(std::string("op=") + op), std::string::npos) << out;
    EXPECT_NE(out.find("Mops/s="), std::string::npos) << out;
    EXPECT_NE(out.find("transport="), std::string::npos) << out;
  }
  ASSERT_EQ(run_command(std::string(FARMEM_CLI_BIN) +
                        " bench ops --duration 0.3 --block-bytes 4096 --out " + csv),
            0);
  std::ifstream jf(json);
  std::string line;
  int lines = 0;
  while (std::getline(jf, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* key : {"op", "threads", "depth", "block_bytes", "mops", "mb_per_s", "p50_us",
                            "p99_us", "connect_ms", "transport"}) {
      EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_GT(j["mops"].get<double>(), 0.0);
    ++lines;
  }
  EXPECT_EQ(lines, 4);
  std::ifstream cf(csv);
  std::string header, row;
  ASSERT_TRUE(std::getline(cf, header));
  ASSERT_TRUE(std::getline(cf, row));
  EXPECT_NE(header.find("mb_per_s"), std::string::npos);
  EXPECT_NE(row.find("4096"), std::string::npos);
  std::remove(json.c_str());
  std::remove(csv.c_str());
}

TEST(CliTest, BenchOpsAgainstAServerListAndStatusShowsIt) {
  ServerOptions o;
  o.tls = "tcp";
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  std::string out;
  ASSERT_EQ(run_command("UCX_TLS=tcp " + std::string(FARMEM_CLI_BIN) +
                            " bench ops --duration 0.3 --depth 2 --threads 2 --servers " +
                            server->address(),
                        &out),
            0)
      << out;
  EXPECT_NE(out.find("tcp"), std::string::npos) << out;
  out.clear();
  ASSERT_EQ(run_command("UCX_TLS=tcp " + std::string(FARMEM_CLI_BIN) + " status --servers " +
                            server->address(),
                        &out),
            0)
      << out;
  EXPECT_NE(out.find(server->address()), std::string::npos) << out;
  EXPECT_NE(out.find("268435456"), std::string::npos) << out;  // capacity
}

TEST(CliTest, StatusReportsAnUnreachableNodeAndFails) {
  std::string out;
  int rc = run_command(std::string(FARMEM_CLI_BIN) + " status --servers 127.0.0.1:1", &out);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("unreachable"), std::string::npos) << out;
}

TEST(CliTest, QuickstartExampleFromTheReadmeRuns) {
  ServerOptions o;
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  std::string out;
  ASSERT_EQ(run_command(std::string(FARMEM_QUICKSTART_BIN) + " " + server->address(), &out), 0)
      << out;
  EXPECT_NE(out.find("read back: hello, far memory"), std::string::npos) << out;
  EXPECT_NE(out.find("cas: found 0, swapped=yes"), std::string::npos) << out;
}

TEST(CliTest, BenchYcsbRunsWorkloadsAndReportsPerOperation) {
  std::string json = temp_path(".json");
  for (const char* w : {"a", "c", "d", "f"}) {
    std::string out;
    // Several coroutines whose gets interleave: the table counts each get's own round trips.
    int rc = run_command(std::string(FARMEM_CLI_BIN) + " bench ycsb --workload " + w +
                             " --records 2000 --duration 0.3 --coroutines 8 --out " + json,
                         &out);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find(std::string("workload=") + w), std::string::npos) << out;
    EXPECT_NE(out.find("rtt/get="), std::string::npos) << out;
  }
  std::ifstream jf(json);
  std::string line;
  int lines = 0;
  while (std::getline(jf, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* key : {"structure", "workload", "records", "threads", "coroutines",
                            "ops_per_s", "p50_us", "p99_us", "ops", "get_round_trips_avg"}) {
      EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_GT(j["ops_per_s"].get<double>(), 0.0);
    EXPECT_TRUE(j["ops"].contains("read"));
    EXPECT_LE(j["get_round_trips_avg"].get<double>(), 2.0);
    ++lines;
  }
  EXPECT_EQ(lines, 4);
  std::remove(json.c_str());
  std::string out;
  EXPECT_EQ(
      run_command(std::string(FARMEM_CLI_BIN) + " bench ycsb --workload e --records 10", &out), 2);
  EXPECT_NE(out.find("scans"), std::string::npos) << out;
}

TEST(CliTest, BadFlagsAreRefused) {
  std::string out;
  EXPECT_NE(run_command(std::string(FARMEM_CLI_BIN) + " bench ops --op scan", &out), 0);
  EXPECT_NE(run_command(std::string(FARMEM_CLI_BIN) + " bench ops --threads 0", &out), 0);
  out.clear();
  EXPECT_NE(run_command(std::string(FARMEM_CLI_BIN) + " bench ops --servers nonsense", &out), 0);
  EXPECT_NE(out.find("host:port"), std::string::npos) << out;
}

}  // namespace
}  // namespace farmem::testing
