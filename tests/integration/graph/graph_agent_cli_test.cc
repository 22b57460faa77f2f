// `farmem graph run --backend far --agent ADDR --cache off|static|dynamic` through the real
// command, a farmem-server (preloading the graph) and a farmem-agent in front of it, over shared
// memory and TCP: every algorithm's output is identical to the local backend's with each cache
// mode, the record carries the agent's figures, and kill -9 of the agent under a run ends it
// with paged::kFaultExitStatus and one fatal line (no hang, no output).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "farmem/paged/page_manager.h"
#include "harness.h"

namespace farmem::testing {
namespace {

class GraphAgentCliTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    tls_ = GetParam().tls;
    dir_ = std::filesystem::temp_directory_path() /
           ("farmem-graph-agent-" + std::to_string(::getpid()) + "-" + GetParam().name);
    std::filesystem::create_directories(dir_);
    ServerOptions o;
    o.tls = tls_;
    o.capacity_bytes = 512ull << 20;
    o.extra_args = {"--preload-dir", dir_.string(), "--idle-spin-us", "0"};
    node_ = ServerProcess::start(o);
    ASSERT_NE(node_, nullptr);
    agent_ = ChildProcess::start({FARMEM_AGENT_BIN, "--servers", node_->address(), "--tls", tls_,
                                  "--idle-spin-us", "0", "--op-timeout-ms", "2000"},
                                 {"UCX_TLS=" + tls_});
    ASSERT_NE(agent_, nullptr);
    const std::string line = agent_->wait_for_line("farmem-agent: listening on ", 20000);
    ASSERT_FALSE(line.empty()) << agent_->output();
    const size_t colon = line.find(':', std::strlen("farmem-agent: listening on "));
    agent_address_ = "127.0.0.1:" + std::to_string(std::stoul(line.substr(colon + 1)));
  }
  void TearDown() override {
    agent_.reset();
    node_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  int farmem(const std::string& args, std::string* out) {
    out->clear();
    return run_command("UCX_TLS=" + tls_ + " " + FARMEM_CLI_BIN + " graph " + args, out);
  }
  std::string far_args(const std::string& cache) const {
    return " --backend far --servers " + node_->address() + " --agent " + agent_address_ +
           " --cache " + cache + " --local-memory 10% --page-bytes 4KiB";
  }
  static std::string slurp(const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  std::string tls_;
  std::filesystem::path dir_;
  std::unique_ptr<ServerProcess> node_;
  std::unique_ptr<ChildProcess> agent_;
  std::string agent_address_;
};

TEST_P(GraphAgentCliTest, EveryAlgorithmThroughTheAgentMatchesLocal) {
  std::string out;
  ASSERT_EQ(farmem("generate --kron 12 --degree 8 --seed 5 --out " + path("g.fmg"), &out), 0)
      << out;
  for (const char* algorithm : {"bfs", "pr", "cc", "radii", "bc"}) {
    const std::string local = path(std::string(algorithm) + "-local.txt");
    ASSERT_EQ(farmem(std::string("run ") + algorithm + " --graph " + path("g.fmg") +
                         " --trials 1 --output " + local,
                     &out),
              0)
        << out;
    const std::string reference = slurp(local);
    ASSERT_EQ(std::count(reference.begin(), reference.end(), '\n'), 4096);
    for (const char* cache : {"off", "static", "dynamic"}) {
      const std::string values = path(std::string(algorithm) + "-" + cache + ".txt");
      const std::string args = std::string("run ") + algorithm + " --graph " + path("g.fmg") +
                               " --trials 2 --output " + values + " --out " + path("runs.json") +
                               far_args(cache);
      ASSERT_EQ(farmem(args, &out), 0) << args << "\n" << out;
      EXPECT_NE(out.find("the memory nodes preloaded"), std::string::npos) << out;
      EXPECT_EQ(slurp(values), reference) << algorithm << " with cache " << cache;
    }
  }
  std::ifstream runs(path("runs.json"));
  std::string line;
  int records = 0;
  uint64_t static_hits = 0, dynamic_hits = 0;
  while (std::getline(runs, line)) {
    auto j = nlohmann::json::parse(line);
    ASSERT_TRUE(j["agent_stats"].is_object()) << line;
    EXPECT_FALSE(j["agent_stats"].contains("error")) << line;
    EXPECT_TRUE(j["agent_cache_hit_rate"].is_number()) << line;
    for (const char* p : {"host->agent", "agent->memnode", "host->memnode"}) {
      ASSERT_TRUE(j["traffic"].contains(p)) << p << " missing in " << line;
    }
    EXPECT_GT(j["traffic"]["host->agent"]["bytes"].get<uint64_t>(), 0u) << line;
    EXPECT_EQ(j["traffic"]["host->memnode"]["bytes"].get<uint64_t>(), 0u) << line;
    const std::string cache = j["cache"];
    // (With dynamic caching the graph's entries staged by earlier runs may serve every read: the
    // preloaded copy is shared, and so are the agent's entries of it.)
    if (cache != "dynamic") {
      EXPECT_GT(j["traffic"]["agent->memnode"]["bytes"].get<uint64_t>(), 0u) << line;
    }
    if (cache != "static") {
      EXPECT_EQ(j["agent_stats"]["static_hits"].get<uint64_t>(), 0u) << line;
    }
    if (cache != "dynamic") {
      EXPECT_EQ(j["agent_stats"]["dynamic_hits"].get<uint64_t>(), 0u) << line;
    }
    if (cache == "static") static_hits += j["agent_stats"]["static_hits"].get<uint64_t>();
    if (cache == "dynamic") dynamic_hits += j["agent_stats"]["dynamic_hits"].get<uint64_t>();
    ++records;
  }
  EXPECT_EQ(records, 15);
  // Under a 10% budget vertex pages are evicted and fetched again (static hits), and
  // the graph's sections are read in entries the agent stages (dynamic hits).
  EXPECT_GT(static_hits, 0u);
  EXPECT_GT(dynamic_hits, 0u);
}

TEST_P(GraphAgentCliTest, KilledAgentEndsTheRunWithTheFaultStatus) {
  std::string out;
  ASSERT_EQ(farmem("generate --kron 12 --degree 8 --seed 5 --out " + path("g.fmg"), &out), 0)
      << out;
  auto run =
      ChildProcess::start({FARMEM_CLI_BIN, "graph",          "run",     "pr",           "--graph",
                           path("g.fmg"),  "--trials",       "1000",    "--backend",    "far",
                           "--servers",    node_->address(), "--agent", agent_address_, "--cache",
                           "off",          "--local-memory", "10%",     "--page-bytes", "4KiB",
                           "--output",     path("never.txt")},
                          {"UCX_TLS=" + tls_});
  ASSERT_NE(run, nullptr);
  ASSERT_FALSE(run->wait_for_line("graph: trial 2/", 60000).empty()) << run->output();
  agent_->signal(SIGKILL);
  const int status = run->wait_exit(30000);
  ASSERT_NE(status, -1) << "the run did not exit: " << run->output();
  ASSERT_TRUE(WIFEXITED(status)) << run->output();
  EXPECT_EQ(WEXITSTATUS(status), paged::kFaultExitStatus) << run->output();
  const std::string o = run->output();
  size_t fatal = 0;
  for (size_t at = o.find("fatal"); at != std::string::npos; at = o.find("fatal", at + 1)) ++fatal;
  EXPECT_EQ(fatal, 1u) << o;
  EXPECT_TRUE(o.find("farmem paged: fatal") != std::string::npos ||
              o.find("farmem graph: fatal") != std::string::npos)
      << o;
  EXPECT_FALSE(std::filesystem::exists(path("never.txt")));
}

INSTANTIATE_TEST_SUITE_P(Transports, GraphAgentCliTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
