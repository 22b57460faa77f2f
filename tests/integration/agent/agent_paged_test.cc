// Paged regions in agent mode: pages fault in through farmem-agent and are written back
// through it under a small local budget; a killed agent ends the faulting process with
// paged::kFaultExitStatus.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "agent_fixture.h"
#include "farmem/agent/page_source.h"
#include "farmem/paged/page_manager.h"
#include "farmem/runtime/scheduler.h"
#include "paged/fault_exit.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

class AgentPagedTest : public AgentTest {};

// Random writes and reads of a region 8x the local budget, against a plain-memory model; the
// bytes reach the memory node after a flush of the region and one of the agent.
TEST_P(AgentPagedTest, RegionThroughTheAgentMatchesAModel) {
  start_agent({"--no-adaptive"});
  paged::PageManagerOptions mo;
  mo.local_bytes = 16 * paged::kDefaultPageBytes;
  auto manager = paged::PageManager::create(*direct_, mo);
  ASSERT_TRUE(manager.ok()) << manager.status().to_string();
  paged::RegionOptions ro;
  ro.source = agent::make_agent_source(*agent_cluster_);
  const uint64_t bytes = 64 * paged::kDefaultPageBytes;
  auto region = (*manager)->allocate(bytes, ro);
  ASSERT_TRUE(region.ok()) << region.status().to_string();
  auto* mem = static_cast<uint64_t*>((*region)->data());
  std::vector<uint64_t> model(bytes / 8, 0);
  std::mt19937_64 rng(test_seed());
  for (int i = 0; i < 4000; ++i) {
    const uint64_t at = rng() % model.size();
    if (rng() % 2 == 0) {
      const uint64_t v = rng();
      mem[at] = v;
      model[at] = v;
    } else {
      ASSERT_EQ(mem[at], model[at]) << "word " << at;
    }
  }
  for (uint64_t i = 0; i < model.size(); ++i) ASSERT_EQ(mem[i], model[i]) << "word " << i;
  ASSERT_TRUE((*region)->flush().ok());
  ASSERT_TRUE(run(host_->flush()).ok());
  const paged::RemoteLayout& layout = (*region)->layout();
  std::vector<uint64_t> page(paged::kDefaultPageBytes / 8);
  for (uint64_t p = 0; p < layout.page_count; ++p) {
    ASSERT_TRUE(
        sync_wait(tc_->read(layout.page_address(p), page.data(), paged::kDefaultPageBytes)).ok());
    ASSERT_EQ(0, std::memcmp(page.data(), model.data() + p * page.size(), paged::kDefaultPageBytes))
        << "page " << p;
  }
  const paged::RegionStats rs = (*region)->stats();
  EXPECT_GT(rs.evictions, 0u);
  EXPECT_GT(rs.bytes_written_back, 0u);
  std::vector<paged::PathTraffic> traffic;
  ro.source->traffic(&traffic);
  ASSERT_EQ(traffic.size(), 1u);
  EXPECT_EQ(traffic[0].path, "host->agent");
  EXPECT_GT(traffic[0].bytes, rs.bytes_fetched);
  const auto st = stats();
  EXPECT_GE(st.host_reads * paged::kDefaultPageBytes, rs.bytes_fetched);
  ASSERT_TRUE((*manager)->free(*region).ok());
}

// kill -9 of the agent under a process faulting through it: that process exits with the
// paged module's fault status (no fallback to direct, no hang).
TEST_P(AgentPagedTest, KilledAgentEndsTheFaultingProcess) {
  start_agent();
  auto host = ChildProcess::start(
      {FARMEM_AGENT_HOST_BIN, "--agent", agent_->address(), "--servers", node_->address(),
       "--bytes", std::to_string(64 * paged::kDefaultPageBytes), "--passes", "100000", "--tls",
       tls_, "--op-timeout-ms", "1000"},
      {"UCX_TLS=" + tls_});
  ASSERT_NE(host, nullptr);
  ASSERT_FALSE(host->wait_for_line("pass 1", 30000).empty()) << host->output();
  agent_->child().signal(SIGKILL);
  const int status = host->wait_exit(30000);
  std::string out;
  ASSERT_NO_FATAL_FAILURE(expect_fault_exit(*host, status, &out));
}

// Two processes map the same file-preloaded region (one shared remote copy) through one agent:
// the second reads every page from the entries the first one's reads staged.
TEST_P(AgentPagedTest, ProcessesSharingAFileShareTheAgentsEntries) {
  char tmpl[] = "/tmp/farmem-agent-preload-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  constexpr uint64_t kBytes = 2ull << 20;
  std::vector<uint8_t> content(kBytes);
  std::mt19937_64 rng(test_seed());
  for (auto& b : content) b = static_cast<uint8_t>(rng());
  {
    std::ofstream f(dir + "/input.bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(kBytes));
  }
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : content) h = (h ^ b) * 0x100000001b3ull;
  tc_ = nullptr;
  direct_.reset();
  ServerOptions o;
  o.tls = tls_;
  o.extra_args = {"--preload-dir", dir};
  node_ = ServerProcess::start(o);
  ASSERT_NE(node_, nullptr);
  start_agent({"--no-adaptive"});
  const std::vector<std::string> args = {
      FARMEM_AGENT_HOST_BIN, "--agent", agent_->address(), "--servers", node_->address(), "--file",
      "input.bin",           "--hold",  "--tls",           tls_};
  auto a = ChildProcess::start(args, {"UCX_TLS=" + tls_});
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->wait_for_line("checksum", 60000), "checksum " + std::to_string(h)) << a->output();
  ASSERT_TRUE(run(host_->flush()).ok());  // the entries a's reads staged are in
  const auto before = stats();
  auto b = ChildProcess::start(args, {"UCX_TLS=" + tls_});
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->wait_for_line("checksum", 60000), "checksum " + std::to_string(h)) << b->output();
  const auto after = stats();
  EXPECT_GE(after.dynamic_hits - before.dynamic_hits, kBytes / paged::kDefaultPageBytes);
  EXPECT_EQ(after.node_reads, before.node_reads);
  a.reset();
  b.reset();
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Transports, AgentPagedTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
