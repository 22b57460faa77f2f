// The paged regions' SIGSTOP and kill -9 rows of the failure matrix (docs/ARCHITECTURE.md), over
// shm and TCP, with a child process (farmem_paged_fault_child) faulting on a region 8x its budget:
// a node stopped for less than the op deadline (the child finishes with correct data), a node
// stopped past it (the child exits with paged::kFaultExitStatus and its line; after SIGCONT the
// node serves a new child), a faulting child stopped and then killed (the node serves others
// and the child's remote memory comes back), and a faulting child stopped past its own deadline
// and continued (it carries on).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include "farmem/paged/page_manager.h"
#include "farmem/runtime/scheduler.h"
#include "harness.h"
#include "paged/fault_exit.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

constexpr int kGuardMs = 60'000;  // hang guards, not measurements
constexpr uint64_t kRegionWords = (2 << 20) / 8;

// The checksum the child prints after `passes` passes (its header states the pattern).
std::string expected_checksum(uint64_t passes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < kRegionWords; ++i) {
    const uint64_t w = i % 512 == 0 ? i + passes + 1 : i + 1;
    h = (h ^ w) * 0x100000001b3ull;
  }
  return "checksum " + std::to_string(h);
}

class PagedStopTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.tls = GetParam().tls;
    node_ = ServerProcess::start(o);
    ASSERT_NE(node_, nullptr);
  }
  // A faulting child: op deadline `timeout_ms`, `passes` passes (0: until a fault fails).
  // With `sequential`, its region has sequential advice (installer threads map read-ahead).
  std::unique_ptr<ChildProcess> child(uint32_t timeout_ms, uint64_t passes, bool hold = false,
                                      bool sequential = false) {
    std::vector<std::string> args = {FARMEM_PAGED_CHILD_BIN, node_->address(), GetParam().tls,
                                     std::to_string(timeout_ms), std::to_string(passes)};
    if (hold) args.push_back("hold");
    std::vector<std::string> env = {"UCX_TLS=" + GetParam().tls};
    if (sequential) env.push_back("FARMEM_CHILD_ADVICE=sequential");
    auto c = ChildProcess::start(args, env);
    EXPECT_NE(c, nullptr);
    return c;
  }
  // Checks that a child that ran `passes` passes ended with exit 0 and the right checksum
  // (`status`: its wait_exit() result, -1 if it hangs).
  static void expect_completed(const ChildProcess& c, int status, uint64_t passes) {
    ASSERT_NE(status, -1) << "the child hangs: " << c.output();
    ASSERT_TRUE(WIFEXITED(status)) << c.output();
    EXPECT_EQ(WEXITSTATUS(status), 0) << c.output();
    EXPECT_NE(c.output().find(expected_checksum(passes)), std::string::npos) << c.output();
  }
  // Runs a child for `passes` passes and checks it ends with exit 0 and the right checksum.
  void expect_child_completes(uint64_t passes) {
    auto c = child(5000, passes);
    ASSERT_NE(c, nullptr);
    expect_completed(*c, c->wait_exit(kGuardMs), passes);
  }
  // Starts a faulting child (op deadline 1 s; `sequential` as in child()), stops the node once
  // the child is ready, and checks the child exits 86 with its line naming the region (in
  // `out`); the node is continued after.
  void expect_node_stop_ends_child(bool sequential, std::string* out) {
    auto c = child(1000, 0, false, sequential);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(c->wait_for_line("ready", kGuardMs), "ready") << c->output();
    node_->signal(SIGSTOP);
    const int status = c->wait_exit(kGuardMs);
    node_->signal(SIGCONT);
    ASSERT_NO_FATAL_FAILURE(expect_fault_exit(*c, status, out));
    EXPECT_NE(out->find("region child-region offset "), std::string::npos) << *out;
  }
  uint64_t used_bytes(client::ThreadClient* tc) {
    auto st = tc->run(tc->stats(0));
    EXPECT_TRUE(st.ok()) << st.status().to_string();
    return st.ok() ? st->used_bytes : 0;
  }

  std::unique_ptr<ServerProcess> node_;
};

// Row: node stopped for less than the op deadline under a faulting child, then continued.
TEST_P(PagedStopTest, NodeStoppedWithinTheDeadlineThenContinued) {
  constexpr uint64_t kPasses = 100;
  auto c = child(30'000, kPasses);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->wait_for_line("pass 1", kGuardMs), "pass 1") << c->output();
  node_->signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // far below the 30 s deadline
  const bool overlapped = c->running();
  node_->signal(SIGCONT);
  ASSERT_NO_FATAL_FAILURE(expect_completed(*c, c->wait_exit(kGuardMs), kPasses));
  EXPECT_TRUE(overlapped) << "the child finished before the node was continued";
}

// Row: node stopped past the op deadline: the child exits 86 with its one line; after SIGCONT
// the node serves a new faulting child.
TEST_P(PagedStopTest, NodeStoppedPastTheDeadlineEndsTheChildThenServesANewOne) {
  std::string out;
  ASSERT_NO_FATAL_FAILURE(expect_node_stop_ends_child(false, &out));
  EXPECT_NE(out.find("node 0"), std::string::npos) << out;
  std::cout << "the child's line: " << out.substr(out.find("farmem paged: fatal:"));
  expect_child_completes(3);
}

// Row: the same with the child reading ahead (sequential advice: installer threads busy
// mapping read-ahead groups when the node stops answering).
TEST_P(PagedStopTest, NodeStoppedPastTheDeadlineEndsASequentialReader) {
  std::string out;
  ASSERT_NO_FATAL_FAILURE(expect_node_stop_ends_child(true, &out));
}

// Row: a faulting child holding a region is stopped (the node serves another child meanwhile),
// then killed: the node lives, serves a client, and the child's remote memory comes back.
TEST_P(PagedStopTest, ChildStoppedThenKilledGivesItsMemoryBack) {
  auto cluster = client::Cluster::connect(config_for({node_.get()}, GetParam().tls));
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  client::ThreadClient* tc = *(*cluster)->thread_client();
  const uint64_t baseline = used_bytes(tc);
  auto victim = child(5000, 2, /*hold=*/true);
  ASSERT_NE(victim, nullptr);
  ASSERT_EQ(victim->wait_for_line("holding", kGuardMs), "holding") << victim->output();
  EXPECT_NE(victim->output().find(expected_checksum(2)), std::string::npos) << victim->output();
  EXPECT_GE(used_bytes(tc), baseline + (2 << 20));
  victim->signal(SIGSTOP);
  expect_child_completes(3);
  victim->signal(SIGKILL);
  const int status = victim->wait_exit(kGuardMs);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  uint64_t used = used_bytes(tc);
  for (int w = 0; used != baseline && w < kGuardMs; w += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    used = used_bytes(tc);
  }
  EXPECT_EQ(used, baseline);
  // The node still serves: a fresh allocation round-trips.
  auto a = tc->run(tc->allocate(4096));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  const uint64_t v = 0x5eed;
  uint64_t r = 0;
  ASSERT_TRUE(sync_wait(tc->write(*a, &v, sizeof v)).ok());
  ASSERT_TRUE(sync_wait(tc->read(*a, &r, sizeof r)).ok());
  EXPECT_EQ(r, v);
}

// Row: the faulting child itself stopped for longer than its op deadline, then continued: it
// carries on (its deadlines count its own stop as nobody's silence) and ends with correct data.
TEST_P(PagedStopTest, ChildStoppedPastItsDeadlineThenContinuedCarriesOn) {
  constexpr uint64_t kPasses = 60;
  auto c = child(1000, kPasses);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->wait_for_line("pass 1", kGuardMs), "pass 1") << c->output();
  for (int i = 0; i < 2 && c->running(); ++i) {
    c->signal(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past its 1 s deadline
    c->signal(SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  expect_completed(*c, c->wait_exit(kGuardMs), kPasses);
}

INSTANTIATE_TEST_SUITE_P(Transports, PagedStopTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
