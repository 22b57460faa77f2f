// Shared set-up of the transaction integration tests: two memory nodes (so that every bucket
// has a primary and a backup) over the transport of the parameter, a cluster, a TxnClient on
// the test thread, and helpers to run transactions to completion.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "farmem/txn/transaction.h"
#include "harness.h"

namespace farmem::testing {

class TxnTest : public ::testing::TestWithParam<Transport> {
 protected:
  // Each node's exported bytes.
  virtual uint64_t node_capacity_bytes() const { return 256ull << 20; }
  void SetUp() override {
    for (uint16_t id = 0; id < 2; ++id) {
      ServerOptions o;
      o.tls = GetParam().tls;
      o.node_id = id;
      o.capacity_bytes = node_capacity_bytes();
      servers_.push_back(ServerProcess::start(o));
      ASSERT_NE(servers_.back(), nullptr);
    }
    auto c = client::Cluster::connect(
        config_for({servers_[0].get(), servers_[1].get()}, GetParam().tls));
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cluster_ = std::move(*c);
    c_ = *cluster_->thread_client();
    auto tc = c_->run(txn::TxnClient::create(c_));
    ASSERT_TRUE(tc.ok()) << tc.status().to_string();
    tc_ = std::move(*tc);
  }
  void TearDown() override {
    if (tc_ != nullptr) {
      EXPECT_TRUE(c_->run(tc_->close()).ok());
    }
    tc_.reset();
    cluster_.reset();
    servers_.clear();
  }
  txn::Table make_table(const std::string& name, uint32_t record_bytes, uint64_t capacity) {
    txn::TableOptions o;
    o.record_bytes = record_bytes;
    o.capacity = capacity;
    o.temporary = true;
    auto t = c_->run(txn::Table::create(c_, name, o));
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    return t.ok() ? std::move(*t) : txn::Table{};
  }

  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::unique_ptr<client::Cluster> cluster_;
  client::ThreadClient* c_ = nullptr;
  std::unique_ptr<txn::TxnClient> tc_;
};

inline std::string u64_value(uint64_t v) { return std::string(reinterpret_cast<char*>(&v), 8); }
inline uint64_t value_u64(const std::string& s) {
  uint64_t v = 0;
  std::memcpy(&v, s.data(), std::min<size_t>(8, s.size()));
  return v;
}

}  // namespace farmem::testing
