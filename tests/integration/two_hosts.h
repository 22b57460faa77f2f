// TwoHostTest: a fixture with the memory node in a network namespace of its own, reached over a
// veth pair with UCX forced to TCP (namespaces alone would still let UCX use shared memory):
// two hosts on one machine. Skipped, with the reason, where namespaces cannot be created (no
// root, no iproute2); in CI that is a failure (FARMEM_SKIP_OR_FAIL).
// config() is a cluster configuration for the node over the host's end of the pair.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"

namespace farmem::testing {

class TwoHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int id = getpid() % 200 + 20;
    ns_ = "fmns" + std::to_string(getpid());
    host_if_ = "fmh" + std::to_string(getpid());
    node_if_ = "fmn" + std::to_string(getpid());
    host_ip_ = "10.213." + std::to_string(id) + ".1";
    node_ip_ = "10.213." + std::to_string(id) + ".2";
    const int stale = remove_stale_namespaces();
    if (stale > 0) std::printf("removed %d namespaces left by crashed test runs\n", stale);
    std::string out;
    if (run_command("ip netns add " + ns_, &out) != 0) {
      FARMEM_SKIP_OR_FAIL("cannot create a network namespace (needs root and iproute2): " + out);
    }
    created_ = true;
    const std::vector<std::string> steps = {
        "ip link add " + host_if_ + " type veth peer name " + node_if_,
        "ip link set " + node_if_ + " netns " + ns_,
        "ip addr add " + host_ip_ + "/30 dev " + host_if_,
        "ip link set " + host_if_ + " up",
        "ip netns exec " + ns_ + " ip addr add " + node_ip_ + "/30 dev " + node_if_,
        "ip netns exec " + ns_ + " ip link set " + node_if_ + " up",
        "ip netns exec " + ns_ + " ip link set lo up",
    };
    for (const auto& s : steps) {
      out.clear();
      if (run_command(s, &out) != 0) FARMEM_SKIP_OR_FAIL("'" + s + "' failed: " + out);
    }
    ServerOptions o;
    o.tls = "tcp";
    o.netns = ns_;
    o.listen = node_ip_;
    o.net_devices = node_if_;
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
  }

  void TearDown() override {
    server_.reset();
    if (created_) {
      run_command("ip netns del " + ns_);
      run_command("ip link del " + host_if_);
    }
  }

  client::ClusterConfig config(uint32_t op_timeout_ms = 3000) {
    auto c = config_for({server_.get()}, "tcp", op_timeout_ms);
    c.options.net_devices = host_if_;
    return c;
  }

  std::string ns_, host_if_, node_if_, host_ip_, node_ip_;
  bool created_ = false;
  std::unique_ptr<ServerProcess> server_;
};

}  // namespace farmem::testing
