// Shared set-up of the paged-region integration tests: memory nodes over the transport of the
// parameter, a cluster, and a paged::PageManager.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "farmem/paged/page_manager.h"
#include "harness.h"

namespace farmem::testing {

class PagedTest : public ::testing::TestWithParam<Transport> {
 protected:
  // Starts `nodes` memory nodes (extra server arguments for each) and the manager.
  void start(const paged::PageManagerOptions& mo, size_t nodes = 1,
             std::vector<std::string> server_args = {}, uint32_t op_timeout_ms = 5000) {
    std::vector<const ServerProcess*> list;
    for (size_t i = 0; i < nodes; ++i) {
      ServerOptions o;
      o.tls = GetParam().tls;
      o.node_id = static_cast<uint16_t>(i);
      o.extra_args = server_args;
      o.capacity_bytes = server_capacity_bytes_;
      servers_.push_back(ServerProcess::start(o));
      ASSERT_NE(servers_.back(), nullptr);
      list.push_back(servers_.back().get());
    }
    auto c = client::Cluster::connect(config_for(list, GetParam().tls, op_timeout_ms));
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cluster_ = std::move(*c);
    auto m = paged::PageManager::create(*cluster_, mo);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    manager_ = std::move(*m);
  }
  void TearDown() override {
    manager_.reset();
    cluster_.reset();
    servers_.clear();
  }
  bool tcp() const { return GetParam().name == "tcp"; }

  uint64_t server_capacity_bytes_ = ServerOptions{}.capacity_bytes;  // of each node start() starts
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::unique_ptr<client::Cluster> cluster_;
  std::unique_ptr<paged::PageManager> manager_;
};

}  // namespace farmem::testing
