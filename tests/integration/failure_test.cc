// A memory node that dies, stops, or was never there: clients get errors within their
// deadline, never a hang. Bad server configuration is refused at start.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "harness.h"

namespace farmem::testing {
namespace {

using client::Cluster;
using client::ThreadClient;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class FailureTest : public ::testing::TestWithParam<Transport> {};

TEST_P(FailureTest, KilledServerTurnsOperationsIntoPeerFailure) {
  ServerOptions o;
  o.tls = GetParam().tls;
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  constexpr uint32_t kTimeoutMs = 2000;
  auto c = Cluster::connect(config_for({server.get()}, GetParam().tls, kTimeoutMs));
  ASSERT_TRUE(c.ok());
  ThreadClient* tc = *(*c)->thread_client();
  auto a = tc->run(tc->allocate(64));
  ASSERT_TRUE(a.ok());
  uint64_t v = 1;
  ASSERT_TRUE(tc->write_sync(*a, &v, 8).ok());

  server->signal(SIGKILL);
  auto killed = Clock::now();
  // Keep operating: one-sided reads over shared memory may still succeed until the client
  // notices (keepalive); every call must return, and an error must come soon.
  Status first_error;
  int ops = 0;
  while (seconds_since(killed) < 20) {
    Status s = tc->read_sync(*a, &v, 8);
    ++ops;
    if (!s.ok()) {
      first_error = s;
      break;
    }
  }
  double waited = seconds_since(killed);
  ASSERT_FALSE(first_error.ok()) << "no error 20 s after SIGKILL (" << ops << " ops)";
  EXPECT_EQ(first_error.code(), StatusCode::kPeerFailed) << first_error.to_string();
  EXPECT_LT(waited, 10.0);
  // Later operations and RPCs fail fast with the same kind of error.
  auto t = Clock::now();
  Status again = tc->read_sync(*a, &v, 8);
  EXPECT_EQ(again.code(), StatusCode::kPeerFailed);
  auto st = tc->run(tc->stats((*c)->nodes()[0].node_id));
  EXPECT_FALSE(st.ok());
  EXPECT_LT(seconds_since(t), 1.0);
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
  uint16_t node = (*c)->nodes()[0].node_id;
  auto a = tc->run(tc->allocate(64));
  ASSERT_TRUE(a.ok());

  server->signal(SIGSTOP);
  // An RPC needs the node's CPU: it must end with a deadline error.
  auto t = Clock::now();
  auto st = tc->run(tc->stats(node));
  double waited = seconds_since(t);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.status().code() == StatusCode::kTimedOut ||
              st.status().code() == StatusCode::kPeerFailed)
      << st.status().to_string();
  EXPECT_GE(waited, kTimeoutMs / 1000.0 * 0.9);
  EXPECT_LT(waited, kTimeoutMs / 1000.0 + 3.0);
  if (GetParam().name == "tcp") {
    // Over TCP one-sided operations need the node's worker too.
    uint64_t v = 0;
    t = Clock::now();
    Status s = tc->read_sync(*a, &v, 8);
    EXPECT_FALSE(s.ok());
    EXPECT_LT(seconds_since(t), kTimeoutMs / 1000.0 + 3.0);
  }
  server->signal(SIGCONT);
}

TEST_P(FailureTest, ConnectingToNothingFailsWithinTheConnectTimeout) {
  client::ClusterConfig config;
  config.memnodes.push_back(*parse_host_port("127.0.0.1:1"));
  config.options.tls = GetParam().tls;
  config.options.connect_timeout_ms = 2000;
  auto t = Clock::now();
  auto c = Cluster::connect(config);
  ASSERT_FALSE(c.ok());
  // Nobody listening: refused at once (kUnavailable); a silent address: kTimedOut.
  EXPECT_TRUE(c.status().code() == StatusCode::kUnavailable ||
              c.status().code() == StatusCode::kTimedOut)
      << c.status().to_string();
  EXPECT_LT(seconds_since(t), 5.0);
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
