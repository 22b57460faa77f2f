// The offload agent's SIGSTOP and kill -9 rows of the failure matrix (docs/ARCHITECTURE.md),
// over shm and TCP, with host processes (farmem_agent_host) faulting on paged regions in agent
// mode: the agent stopped past a host's op deadline (the host exits with
// paged::kFaultExitStatus and its line; after SIGCONT the agent serves a new host with correct
// data), and a host stopped and then killed while the agent serves it (agent and node serve
// other hosts; the host's remote memory comes back).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "agent_fixture.h"
#include "farmem/paged/page_manager.h"
#include "paged/fault_exit.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

constexpr int kGuardMs = 60'000;  // hang guards, not measurements

class AgentStopTest : public AgentTest {
 protected:
  // A host faulting through the agent on a 64-page region (4-page budget), `passes` passes.
  std::unique_ptr<ChildProcess> host(uint64_t passes, uint32_t timeout_ms) {
    auto h = ChildProcess::start(
        {FARMEM_AGENT_HOST_BIN, "--agent", agent_->address(), "--servers", node_->address(),
         "--bytes", std::to_string(64 * paged::kDefaultPageBytes), "--passes",
         std::to_string(passes), "--tls", tls_, "--op-timeout-ms", std::to_string(timeout_ms)},
        {"UCX_TLS=" + tls_});
    EXPECT_NE(h, nullptr);
    return h;
  }
  void expect_host_completes() {
    auto h = host(3, 5000);
    ASSERT_NE(h, nullptr);
    const int status = h->wait_exit(kGuardMs);
    ASSERT_NE(status, -1) << "the host hangs: " << h->output();
    ASSERT_TRUE(WIFEXITED(status)) << h->output();
    EXPECT_EQ(WEXITSTATUS(status), 0) << h->output();
    EXPECT_NE(h->output().find("pass 3\ndone"), std::string::npos) << h->output();
  }
  static size_t count_passes(const ChildProcess& h) {
    const std::string out = h.output();
    size_t n = 0;
    for (size_t at = out.find("pass "); at != std::string::npos; at = out.find("pass ", at + 1)) {
      ++n;
    }
    return n;
  }
  uint64_t node_used_bytes() {
    auto st = tc_->run(tc_->stats(0));
    EXPECT_TRUE(st.ok()) << st.status().to_string();
    return st.ok() ? st->used_bytes : 0;
  }
};

// Row: agent stopped past a faulting host's op deadline: the host exits 86 with its line; after
// SIGCONT the agent serves a new host and reads through it return the node's bytes.
TEST_P(AgentStopTest, AgentStoppedPastTheDeadlineEndsTheHostThenServesANewOne) {
  std::vector<uint8_t> model;
  const GlobalAddress base = fill(8 * kPage, test_seed(), &model);
  // The agent's stop outlasts its own deadline towards the node, too (1 s; below).
  start_agent({"--op-timeout-ms", "1000"});
  auto h = host(100000, 1000);
  ASSERT_NE(h, nullptr);
  ASSERT_FALSE(h->wait_for_line("pass 1", kGuardMs).empty()) << h->output();
  agent_->child().signal(SIGSTOP);
  const int status = h->wait_exit(kGuardMs);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the host's 1 s and 1 s more
  agent_->child().signal(SIGCONT);
  std::string out;
  ASSERT_NO_FATAL_FAILURE(expect_fault_exit(*h, status, &out));
  std::cout << "the host's line: " << out.substr(out.find("farmem paged: fatal:"));
  expect_host_completes();
  read_pages(base, model, 0, 8);
}

// Row: a host stopped while the agent serves it (another host is served meanwhile), continued
// after its own op deadline (it carries on), stopped again and killed: agent and node live and
// serve a new host; the host's memory on the node comes back.
TEST_P(AgentStopTest, HostStoppedThenKilledLeavesAgentAndNodeServing) {
  std::vector<uint8_t> model;
  const GlobalAddress base = fill(8 * kPage, test_seed(), &model);
  start_agent();
  const uint64_t baseline = node_used_bytes();
  auto victim = host(100000, 1000);
  ASSERT_NE(victim, nullptr);
  ASSERT_FALSE(victim->wait_for_line("pass 1", kGuardMs).empty()) << victim->output();
  EXPECT_GE(node_used_bytes(), baseline + 64 * paged::kDefaultPageBytes);  // its region
  victim->signal(SIGSTOP);
  expect_host_completes();
  read_pages(base, model, 0, 8);
  // Continued, it carries on through the agent; then it is stopped again and killed.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past its 1 s deadline
  const size_t passes = count_passes(*victim);
  victim->signal(SIGCONT);
  ASSERT_FALSE(victim->wait_for_line("pass " + std::to_string(passes + 2), kGuardMs).empty())
      << victim->output();
  victim->signal(SIGSTOP);
  victim->signal(SIGKILL);
  const int status = victim->wait_exit(kGuardMs);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  uint64_t used = node_used_bytes();
  for (int w = 0; used != baseline && w < kGuardMs; w += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    used = node_used_bytes();
  }
  EXPECT_EQ(used, baseline);
  expect_host_completes();
  read_pages(base, model, 0, 8);
  EXPECT_TRUE(run(host_->flush()).ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, AgentStopTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
