// The agent across hosts: the memory node in a network namespace of its own behind a veth pair
// (TCP), the agent and the host process outside it. The veth counters show the memory-node
// traffic the agent causes, beside the host<->agent traffic it reports: reads of a pinned range
// cross the veth once, however often hosts read it.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "agent_fixture.h"
#include "farmem/runtime/scheduler.h"
#include "test_seed.h"
#include "two_hosts.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

uint64_t veth_counter(const std::string& dev, const std::string& name) {
  std::ifstream f("/sys/class/net/" + dev + "/statistics/" + name);
  uint64_t v = 0;
  f >> v;
  return v;
}

class AgentNetnsTest : public TwoHostTest {};

TEST_F(AgentNetnsTest, StaticCacheKeepsReadsOffTheMemoryNodeLink) {
  constexpr uint64_t kBytes = 4ull << 20;
  auto direct = client::Cluster::connect(config());
  ASSERT_TRUE(direct.ok()) << direct.status().to_string();
  auto tc = (*direct)->thread_client();
  ASSERT_TRUE(tc.ok());
  auto mem = (*tc)->run((*tc)->allocate_on(0, kBytes + (1ull << 20), 4096));
  ASSERT_TRUE(mem.ok());
  const GlobalAddress base(0, (mem->offset() + (1ull << 20) - 1) & ~((1ull << 20) - 1));
  std::vector<uint8_t> model(kBytes);
  std::mt19937_64 rng(test_seed());
  for (auto& b : model) b = static_cast<uint8_t>(rng());
  for (uint64_t o = 0; o < kBytes; o += kPage) {
    ASSERT_TRUE(sync_wait((*tc)->write(base + o, model.data() + o, kPage)).ok());
  }

  auto agent = ChildProcess::start({FARMEM_AGENT_BIN, "--servers", server_->address(), "--tls",
                                    "tcp", "--node-net-devices", host_if_, "--no-dynamic"},
                                   {"UCX_TLS=tcp"});
  ASSERT_NE(agent, nullptr);
  const std::string line = agent->wait_for_line("farmem-agent: listening on ", 20000);
  ASSERT_FALSE(line.empty()) << agent->output();
  const size_t colon = line.find(':', std::strlen("farmem-agent: listening on "));
  const std::string address =
      "127.0.0.1:" + line.substr(colon + 1, line.find(' ', colon) - colon - 1);
  auto cfg = client::ClusterConfig::from_server_list(address);
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  cfg->options.tls = "tcp";
  auto agent_cluster = client::Cluster::connect(*cfg);
  ASSERT_TRUE(agent_cluster.ok()) << agent_cluster.status().to_string();
  auto host = agent::AgentClient::create(**agent_cluster);
  ASSERT_TRUE(host.ok());
  auto read_all = [&](int passes) {
    std::vector<uint8_t> page(kPage);
    for (int p = 0; p < passes; ++p) {
      for (uint64_t o = 0; o < kBytes; o += kPage) {
        ASSERT_TRUE((*host)->thread_client().run((*host)->read(base + o, page.data(), kPage)).ok());
        ASSERT_EQ(0, std::memcmp(page.data(), model.data() + o, kPage));
      }
    }
  };
  const uint64_t rx0 = veth_counter(host_if_, "rx_bytes");
  read_all(1);
  const uint64_t rx1 = veth_counter(host_if_, "rx_bytes");
  ASSERT_TRUE((*host)->thread_client().run((*host)->pin_static(base, kBytes)).ok());
  const uint64_t rx2 = veth_counter(host_if_, "rx_bytes");
  const uint64_t host_before = (*host)->traffic().bytes_in;
  read_all(3);
  const uint64_t rx3 = veth_counter(host_if_, "rx_bytes");
  const uint64_t host_bytes = (*host)->traffic().bytes_in - host_before;
  std::printf(
      "veth %s rx: %llu bytes for one uncached pass, %llu for the pin, %llu for three "
      "pinned passes (host<-agent %llu bytes)\n",
      host_if_.c_str(), static_cast<unsigned long long>(rx1 - rx0),
      static_cast<unsigned long long>(rx2 - rx1), static_cast<unsigned long long>(rx3 - rx2),
      static_cast<unsigned long long>(host_bytes));
  EXPECT_GE(rx1 - rx0, kBytes);
  EXPECT_GE(rx2 - rx1, kBytes);
  EXPECT_LT(rx3 - rx2, kBytes / 4);  // heartbeats only
  EXPECT_EQ(host_bytes, 3 * kBytes);
  host->reset();
  agent_cluster->reset();
}

}  // namespace
}  // namespace farmem::testing
