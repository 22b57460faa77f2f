// Shared set-up of the far-memory integration tests: one memory node per test (over the
// transport of the parameter), a cluster, and a ObjectManager + ThreadCache on the test thread.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "farmem/far/object_manager.h"
#include "farmem/far/thread_cache.h"
#include "harness.h"

namespace farmem::testing {

class FarTest : public ::testing::TestWithParam<Transport> {
 protected:
  void start(uint64_t local_bytes, uint64_t segment_bytes = 0, uint32_t op_timeout_ms = 5000,
             uint32_t space_wait_ms = 0) {
    ServerOptions o;
    o.tls = GetParam().tls;
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    auto c = client::Cluster::connect(config_for({server_.get()}, GetParam().tls, op_timeout_ms));
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cluster_ = std::move(*c);
    c_ = *cluster_->thread_client();
    far::ObjectManagerOptions mo;
    mo.local_bytes = local_bytes;
    mo.segment_bytes = segment_bytes;
    mo.space_wait_ms = space_wait_ms;
    auto m = far::ObjectManager::create(mo);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    manager_ = std::move(*m);
    cache_ = std::make_unique<far::ThreadCache>(manager_.get(), c_);
  }
  void TearDown() override {
    cache_.reset();
    manager_.reset();
    cluster_.reset();
    server_.reset();
  }
  bool tcp() const { return GetParam().name == "tcp"; }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Cluster> cluster_;
  client::ThreadClient* c_ = nullptr;
  std::unique_ptr<far::ObjectManager> manager_;
  std::unique_ptr<far::ThreadCache> cache_;
};

}  // namespace farmem::testing
