// A memory node that dies, stops, or was never there: clients get errors within their
// deadline, never a hang. Bad server configuration is refused at start.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "farmem/common/virtual_clock.h"
#include "farmem/runtime/scheduler.h"
#include "harness.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Cluster;
using client::ThreadClient;
using runtime::Task;
Task<Status> read_task(ThreadClient* c, GlobalAddress a, uint64_t* v) {
  Status s = co_await c->read(a, v, 8);
  co_return s;
}

class FailureTest : public ::testing::TestWithParam<Transport> {};

// Outcomes only: loops are bounded by hang guards, and deadlines are driven by a virtual clock
// where a test needs one to pass.

TEST_P(FailureTest, KilledServerTurnsOperationsIntoPeerFailure) {
  ServerOptions o;
  o.tls = GetParam().tls;
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  auto c = Cluster::connect(config_for({server.get()}, GetParam().tls, 2000));
  ASSERT_TRUE(c.ok());
  ThreadClient* tc = *(*c)->thread_client();
  auto a = tc->run(tc->allocate(64));
  ASSERT_TRUE(a.ok());
  uint64_t v = 1;
  ASSERT_TRUE(sync_wait(tc->write(*a, &v, 8)).ok());

  server->signal(SIGKILL);
  // Keep operating: direct reads over shared memory may succeed until the client notices (its
  // door connection's EOF); every call returns, and the first error is kPeerFailed.
  Status first_error;
  for (int ops = 0; ops < 10'000'000 && first_error.ok(); ++ops) {
    first_error = sync_wait(tc->read(*a, &v, 8));
  }
  ASSERT_FALSE(first_error.ok()) << "no error after ten million reads of a killed node";
  EXPECT_EQ(first_error.code(), StatusCode::kPeerFailed) << first_error.to_string();
  // Later operations and RPCs fail with the same kind of error.
  EXPECT_EQ(sync_wait(tc->read(*a, &v, 8)).code(), StatusCode::kPeerFailed);
  EXPECT_EQ(tc->run(tc->stats((*c)->nodes()[0].node_id)).status().code(), StatusCode::kPeerFailed);
  EXPECT_EQ(tc->node_status((*c)->nodes()[0].node_id).code(), StatusCode::kPeerFailed);
}

TEST_P(FailureTest, StoppedServerGivesDeadlineErrorsNotHangs) {
  ServerOptions o;
  o.tls = GetParam().tls;
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  constexpr uint32_t kTimeoutMs = 1500;
  auto c = Cluster::connect(config_for({server.get()}, GetParam().tls, kTimeoutMs));
  ASSERT_TRUE(c.ok());
  ThreadClient* tc = *(*c)->thread_client();
  const uint16_t node = (*c)->nodes()[0].node_id;
  auto a = tc->run(tc->allocate(64));
  ASSERT_TRUE(a.ok());

  server->signal(SIGSTOP);
  // An RPC needs the node's CPU: it ends with a deadline error (kTimedOut), or with the
  // heartbeat's verdict (kPeerFailed: no pong for op_timeout_ms), once virtual time passes the
  // deadline, however long that takes in real time.
  VirtualClock clock(VirtualClock::Mode::kManual, steady_now_ns());
  {
    ScopedVirtualClock guard(clock);
    auto st = drive(tc, tc->stats(node), &clock, 10'000'000, 100'000);
    ASSERT_TRUE(st.has_value()) << "the RPC to a stopped node never ended";
    ASSERT_FALSE(st->ok());
    EXPECT_TRUE(st->status().code() == StatusCode::kTimedOut ||
                st->status().code() == StatusCode::kPeerFailed)
        << st->status().to_string();
    if (GetParam().name == "tcp") {
      // Over TCP one-sided operations need the node's worker too.
      uint64_t v = 0;
      auto r = drive(tc, read_task(tc, *a, &v), &clock, 10'000'000, 100'000);
      ASSERT_TRUE(r.has_value());
      EXPECT_FALSE(r->ok());
    }
  }
  server->signal(SIGCONT);
}

TEST_P(FailureTest, ConnectingToNothingIsRefused) {
  client::ClusterConfig config;
  config.memnodes.push_back(*parse_host_port("127.0.0.1:1"));
  config.options.tls = GetParam().tls;
  config.options.connect_timeout_ms = 2000;
  auto c = Cluster::connect(config);
  ASSERT_FALSE(c.ok());
  // Nobody listening: refused at once (kUnavailable); a silent address: kTimedOut.
  EXPECT_TRUE(c.status().code() == StatusCode::kUnavailable ||
              c.status().code() == StatusCode::kTimedOut)
      << c.status().to_string();
}

INSTANTIATE_TEST_SUITE_P(Transports, FailureTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

TEST(ServerConfigTest, BadConfigurationIsRefusedWithAClearMessage) {
  std::string out;
  EXPECT_EQ(run_command(std::string(FARMEM_SERVER_BIN) + " --capacity 12", &out), 2);
  EXPECT_NE(out.find("below the 64 KiB minimum"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run_command(std::string(FARMEM_SERVER_BIN) + " --capacity lots", &out), 2);
  EXPECT_NE(out.find("not a size"), std::string::npos) << out;
  out.clear();
  EXPECT_NE(run_command(std::string(FARMEM_SERVER_BIN) + " --workers 99 --port 0", &out), 0);
  EXPECT_NE(out.find("workers"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run_command(std::string(FARMEM_SERVER_BIN) + " --config /nonexistent.toml", &out), 2);
  EXPECT_NE(out.find("nonexistent"), std::string::npos) << out;
}

TEST(ServerConfigTest, PortInUseIsAClearStartupError) {
  ServerOptions o;
  auto first = ServerProcess::start(o);
  ASSERT_NE(first, nullptr);
  std::string out;
  int rc = run_command(std::string(FARMEM_SERVER_BIN) + " --listen 127.0.0.1 --port " +
                           std::to_string(first->port()),
                       &out);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("listen on 127.0.0.1"), std::string::npos) << out;
}

TEST(ServerLifecycleTest, SigtermStopsTheServerCleanly) {
  ServerOptions o;
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  int status = server->stop();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace farmem::testing
