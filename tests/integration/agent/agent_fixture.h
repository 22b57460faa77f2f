// The agent tests' fixture: one memory node, a farmem-agent in front of it, a host client.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "farmem/agent/client.h"
#include "farmem/client/cluster.h"
#include "farmem/runtime/scheduler.h"
#include "harness.h"

namespace farmem::testing {

constexpr uint32_t kPage = 64 * 1024;

// A farmem-agent child process in front of the given memory nodes.
class AgentProcess {
 public:
  static std::unique_ptr<AgentProcess> start(const std::vector<const ServerProcess*>& nodes,
                                             const std::string& tls,
                                             const std::vector<std::string>& extra = {}) {
    std::string list;
    for (const ServerProcess* n : nodes) {
      if (!list.empty()) list.push_back(',');
      list.append(n->address());
    }
    std::vector<std::string> args = {FARMEM_AGENT_BIN, "--servers", list, "--tls", tls};
    args.insert(args.end(), extra.begin(), extra.end());
    auto a = std::make_unique<AgentProcess>();
    a->child_ = ChildProcess::start(args, {"UCX_TLS=" + tls});
    if (a->child_ == nullptr) return nullptr;
    const std::string line = a->child_->wait_for_line("farmem-agent: listening on ", 20000);
    if (line.empty()) {
      ADD_FAILURE() << "agent did not start: " << a->child_->output();
      return nullptr;
    }
    const size_t colon = line.find(':', std::strlen("farmem-agent: listening on "));
    a->port_ = static_cast<uint16_t>(std::stoul(line.substr(colon + 1)));
    return a;
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  ChildProcess& child() { return *child_; }

 private:
  std::unique_ptr<ChildProcess> child_;
  uint16_t port_ = 0;
};

class AgentTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    tls_ = GetParam().tls;
    ServerOptions o;
    o.tls = tls_;
    o.capacity_bytes = 128ull << 20;
    node_ = ServerProcess::start(o);
    ASSERT_NE(node_, nullptr);
    auto direct = client::Cluster::connect(config_for({node_.get()}, tls_));
    ASSERT_TRUE(direct.ok()) << direct.status().to_string();
    direct_ = std::move(*direct);
    auto tc = direct_->thread_client();
    ASSERT_TRUE(tc.ok());
    tc_ = *tc;
  }
  void TearDown() override {
    host_.reset();
    agent_cluster_.reset();
    agent_.reset();
    direct_.reset();
    node_.reset();
  }

  // Allocates `bytes` (entry-aligned) on the memory node and fills them with a seeded pattern.
  GlobalAddress fill(uint64_t bytes, uint64_t seed, std::vector<uint8_t>* model) {
    auto a = tc_->run(tc_->allocate_on(0, bytes + (1ull << 20), 4096));
    EXPECT_TRUE(a.ok()) << a.status().to_string();
    // Round up to a multiple of 1 MiB (the default entry size) inside the allocation.
    const uint64_t off = (a->offset() + (1ull << 20) - 1) & ~((1ull << 20) - 1);
    const GlobalAddress base(0, off);
    model->resize(bytes);
    std::mt19937_64 rng(seed);
    for (auto& b : *model) b = static_cast<uint8_t>(rng());
    for (uint64_t o = 0; o < bytes; o += kPage) {
      EXPECT_TRUE(runtime::sync_wait(tc_->write(base + o, model->data() + o, kPage)).ok());
    }
    return base;
  }

  void start_agent(const std::vector<std::string>& extra = {}, uint32_t op_timeout_ms = 5000) {
    agent_ = AgentProcess::start({node_.get()}, tls_, extra);
    ASSERT_NE(agent_, nullptr);
    auto cfg = client::ClusterConfig::from_server_list(agent_->address());
    ASSERT_TRUE(cfg.ok());
    cfg->options.tls = tls_;
    cfg->options.op_timeout_ms = op_timeout_ms;
    auto c = client::Cluster::connect(*cfg);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    agent_cluster_ = std::move(*c);
    auto h = agent::AgentClient::create(*agent_cluster_);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    host_ = std::move(*h);
  }

  agent::wire::StatsResponse stats() {
    auto s = run(host_->stats());
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? *s : agent::wire::StatsResponse{};
  }
  template <typename T>
  T run(runtime::Task<T> t) {
    return host_->thread_client().run(std::move(t));
  }
  // Reads pages [first, first + n) of `base` through the agent, one at a time, checking them.
  void read_pages(GlobalAddress base, const std::vector<uint8_t>& model, uint64_t first,
                  uint64_t n) {
    std::vector<uint8_t> buf(kPage);
    for (uint64_t p = first; p < first + n; ++p) {
      ASSERT_TRUE(run(host_->read(base + p * kPage, buf.data(), kPage)).ok());
      ASSERT_EQ(0, std::memcmp(buf.data(), model.data() + p * kPage, kPage)) << "page " << p;
    }
  }

  std::string tls_;
  std::unique_ptr<ServerProcess> node_;
  std::unique_ptr<client::Cluster> direct_;
  client::ThreadClient* tc_ = nullptr;
  std::unique_ptr<AgentProcess> agent_;
  std::unique_ptr<client::Cluster> agent_cluster_;
  std::unique_ptr<agent::AgentClient> host_;
};

}  // namespace farmem::testing
