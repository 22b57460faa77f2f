// Served one-sided operations (TCP) are coalesced per thread and node: what the coroutines of one
// scheduler round post travels in as few kMemOps messages as the limits allow, in program order,
// within the lane's window, and a stopped node fails them with deadline errors, not hangs.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "farmem/common/virtual_clock.h"
#include "farmem/runtime/scheduler.h"
#include "harness.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Batch;
using client::Cluster;
using client::ThreadClient;
using runtime::Task;

class ServedLaneTest : public ::testing::Test {
 protected:
  void start(uint32_t in_flight, uint32_t op_timeout_ms = 5000) {
    ServerOptions o;
    o.tls = "tcp";
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    client::ClusterConfig config = config_for({server_.get()}, "tcp", op_timeout_ms);
    config.options.served_in_flight = in_flight;
    auto c = Cluster::connect(config);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cluster_ = std::move(*c);
    client_ = *cluster_->thread_client();
    node_ = cluster_->nodes().front().node_id;
    ASSERT_TRUE(client_->served(node_)) << "over UCX_TLS=tcp one-sided operations are served";
    auto a = client_->run(client_->allocate_on(node_, 64 << 10, 64));
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    base_ = *a;
  }
  void TearDown() override {
    cluster_.reset();
    server_.reset();
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Cluster> cluster_;
  ThreadClient* client_ = nullptr;
  uint16_t node_ = 0;
  GlobalAddress base_;
};

Task<void> read_word(ThreadClient* c, GlobalAddress a, uint64_t* out, Status* st) {
  *st = co_await c->read(a, out, 8);
}

Task<void> faa_word(ThreadClient* c, GlobalAddress a, uint64_t* old_value, Status* st) {
  *st = co_await c->faa(a, 1, old_value);
}

TEST_F(ServedLaneTest, ReadsOfOneRoundShareOneMessage) {
  start(8);
  constexpr int kWords = 200;
  std::vector<uint64_t> words(kWords);
  for (int i = 0; i < kWords; ++i) words[i] = 1000 + i;
  ASSERT_TRUE(sync_wait(client_->write(base_, words.data(), kWords * 8)).ok());
  const uint64_t messages_before = client_->served_messages();
  const uint64_t ops_before = client_->served_ops();
  std::vector<uint64_t> got(kWords, 0);
  std::vector<Status> st(kWords);
  for (int i = 0; i < kWords; ++i) {
    ASSERT_TRUE(
        client_->scheduler().spawn(read_word(client_, base_ + 8 * i, &got[i], &st[i])).ok());
  }
  client_->scheduler().run_until_idle();
  for (int i = 0; i < kWords; ++i) {
    ASSERT_TRUE(st[i].ok()) << i << ": " << st[i].to_string();
    EXPECT_EQ(got[i], 1000u + i) << i;
  }
  EXPECT_EQ(client_->served_ops() - ops_before, uint64_t{kWords});
  EXPECT_EQ(client_->served_messages() - messages_before, 1u)
      << "200 reads posted in one round fit one message";
}

TEST_F(ServedLaneTest, AtomicsOfOneRoundRunInProgramOrderAcrossMessages) {
  start(8);
  // 600 FAAs in one round need three messages (256 operations each at most); the node performs
  // them in the order they were posted, so the old values are 0..599 in spawn order.
  constexpr int kOps = 600;
  std::vector<uint64_t> old(kOps, ~0ull);
  std::vector<Status> st(kOps);
  const uint64_t messages_before = client_->served_messages();
  for (int i = 0; i < kOps; ++i) {
    ASSERT_TRUE(client_->scheduler().spawn(faa_word(client_, base_, &old[i], &st[i])).ok());
  }
  client_->scheduler().run_until_idle();
  for (int i = 0; i < kOps; ++i) {
    ASSERT_TRUE(st[i].ok()) << i << ": " << st[i].to_string();
    ASSERT_EQ(old[i], uint64_t(i)) << "operation " << i << " ran out of program order";
  }
  EXPECT_EQ(client_->served_messages() - messages_before, 3u);
  uint64_t v = 0;
  ASSERT_TRUE(sync_wait(client_->read(base_, &v, 8)).ok());
  EXPECT_EQ(v, uint64_t{kOps});
}

Task<void> churn(ThreadClient* c, GlobalAddress a, int rounds, size_t* max_in_flight, Status* st) {
  for (int i = 0; i < rounds; ++i) {
    uint64_t old = 0;
    Batch b(*c);
    (void)b.faa(a, 1, &old);
    uint64_t seen = 0;
    (void)b.read(a + 8, &seen, 8);
    Status s = co_await b.wait();
    *max_in_flight = std::max(*max_in_flight, c->served_lane(a.node())->in_flight());
    if (!s.ok()) {
      *st = s;
      co_return;
    }
  }
}

TEST_F(ServedLaneTest, WindowBoundsMessagesInFlightAndEveryBatchCompletes) {
  start(2);
  constexpr int kCoroutines = 128;
  constexpr int kRounds = 20;
  std::vector<Status> st(kCoroutines);
  size_t max_in_flight = 0;
  const uint64_t messages_before = client_->served_messages();
  for (int i = 0; i < kCoroutines; ++i) {
    ASSERT_TRUE(
        client_->scheduler().spawn(churn(client_, base_, kRounds, &max_in_flight, &st[i])).ok());
  }
  client_->scheduler().run_until_idle();
  for (const Status& s : st) ASSERT_TRUE(s.ok()) << s.to_string();
  uint64_t v = 0;
  ASSERT_TRUE(sync_wait(client_->read(base_, &v, 8)).ok());
  EXPECT_EQ(v, uint64_t{kCoroutines * kRounds});
  EXPECT_LE(max_in_flight, 2u);
  EXPECT_LT(client_->served_messages() - messages_before, uint64_t{kCoroutines * kRounds})
      << "batches waiting for the window share messages";
}

TEST_F(ServedLaneTest, StoppedNodeFailsWaitingOperationsWithDeadlineErrors) {
  start(1, 1500);
  server_->signal(SIGSTOP);
  VirtualClock clock(VirtualClock::Mode::kManual, steady_now_ns());
  constexpr int kOps = 600;  // three messages: one in flight, two waiting for the window
  std::vector<uint64_t> old(kOps, 0);
  std::vector<Status> st(kOps);
  {
    ScopedVirtualClock guard(clock);
    for (int i = 0; i < kOps; ++i) {
      ASSERT_TRUE(client_->scheduler().spawn(faa_word(client_, base_, &old[i], &st[i])).ok());
    }
    for (int round = 0; round < 100'000 && client_->scheduler().live_coroutines() > 0; ++round) {
      client_->scheduler().poll_once();
      clock.advance(10'000'000);
    }
    ASSERT_EQ(client_->scheduler().live_coroutines(), 0u) << "operations on a stopped node hung";
  }
  for (int i = 0; i < kOps; ++i) {
    EXPECT_TRUE(st[i].code() == StatusCode::kTimedOut || st[i].code() == StatusCode::kPeerFailed)
        << i << ": " << st[i].to_string();
  }
  server_->signal(SIGCONT);
}

}  // namespace
}  // namespace farmem::testing
