// The memory node's door (docs/formats/door.md): junk, half-open and slow connections, cluster
// keys, version mismatch, the session cap, many clients at once, graceful shutdown, and the
// command line. Every wait is a hang guard, never a measurement.
#include "farmem/fabric/door.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "farmem/runtime/scheduler.h"
#include "harness.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Cluster;
namespace w = farmem::wire;

int open_fds(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

int raw_connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads until EOF (or the guard); returns what arrived, and whether EOF came.
std::string read_until_eof(int fd, int guard_ms, bool* eof) {
  timeval tv{0, 20'000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string got;
  *eof = false;
  for (int waited = 0; waited < guard_ms; waited += 20) {
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      got.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      *eof = true;
      break;
    }
  }
  return got;
}

class DoorTest : public ::testing::TestWithParam<Transport> {
 protected:
  std::unique_ptr<ServerProcess> start(std::vector<std::string> extra = {},
                                       const std::string& key_file = "") {
    ServerOptions o;
    o.tls = GetParam().tls;
    o.capacity_bytes = 64ull << 20;
    o.extra_args = std::move(extra);
    if (!key_file.empty())
      o.extra_args.insert(o.extra_args.end(), {"--cluster-key-file", key_file});
    auto s = ServerProcess::start(o);
    EXPECT_NE(s, nullptr);
    return s;
  }
  Result<std::unique_ptr<Cluster>> connect(const ServerProcess& s, const std::string& key = "") {
    auto config = config_for({&s}, GetParam().tls);
    config.options.cluster_key = key;
    return Cluster::connect(config);
  }
  uint64_t refused(const ServerProcess& s) {
    auto c = connect(s);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    if (!c.ok()) return 0;
    auto tc = *(*c)->thread_client();
    auto st = tc->run(tc->stats((*c)->nodes()[0].node_id));
    return st.ok() ? st->refused : 0;
  }
};

TEST_P(DoorTest, JunkConnectionsAreShedAndLeaveNothingBehind) {
  auto server = start();
  ASSERT_NE(server, nullptr);
  // Settle: one real client first, so the node's lazy UCX resources are counted in the
  // baseline.
  ASSERT_TRUE(connect(*server).ok());
  const int fds_before = open_fds(server->pid());
  std::mt19937_64 rng(test_seed());
  constexpr int kJunk = 2000, kAtOnce = 100;
  for (int done = 0; done < kJunk; done += kAtOnce) {
    std::vector<int> fds;
    for (int i = 0; i < kAtOnce; ++i) {
      int fd = raw_connect(server->port());
      ASSERT_GE(fd, 0);
      std::string junk(4096, '\0');
      for (char& ch : junk) ch = static_cast<char>(rng());
      (void)send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
      fds.push_back(fd);
    }
    for (int fd : fds) close(fd);
  }
  // Every junk connection was refused and closed; a real client is served as before.
  uint64_t r = 0;
  for (int waited = 0; waited < 20'000 && r < kJunk; waited += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r = refused(*server);
  }
  EXPECT_GE(r, uint64_t{kJunk});
  auto c = connect(*server);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto tc = *(*c)->thread_client();
  auto a = tc->run(tc->allocate(64));
  ASSERT_TRUE(a.ok());
  int fds_after = open_fds(server->pid());
  EXPECT_LE(fds_after, fds_before + 10) << "before " << fds_before;
}

TEST_P(DoorTest, HalfOpenSilentAndSlowConnectionsAreClosedAtTheDeadline) {
  auto server = start({"--door-timeout-ms", "100"});
  ASSERT_NE(server, nullptr);
  int silent = raw_connect(server->port());
  int partial = raw_connect(server->port());
  ASSERT_GE(silent, 0);
  ASSERT_GE(partial, 0);
  w::DoorHello h{};
  h.magic = w::kDoorMagic;
  h.version = w::kProtocolVersion;
  h.address_bytes = 100;
  ASSERT_EQ(send(partial, &h, sizeof(h), 0), static_cast<ssize_t>(sizeof(h)));  // no address
  bool eof = false;
  EXPECT_EQ(read_until_eof(silent, 10'000, &eof), "");
  EXPECT_TRUE(eof);
  EXPECT_EQ(read_until_eof(partial, 10'000, &eof), "");
  EXPECT_TRUE(eof);
  close(silent);
  close(partial);
  EXPECT_TRUE(connect(*server).ok());
}

TEST_P(DoorTest, ClusterKeyIsRequiredAndAWrongOneIsRefusedClearly) {
  char path[] = "/tmp/farmem-key-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "open sesame\n", 12), 12);
  close(fd);
  auto server = start({}, path);
  ASSERT_NE(server, nullptr);
  auto none = connect(*server);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kPermissionDenied) << none.status().to_string();
  EXPECT_NE(none.status().message().find("requires a cluster key"), std::string_view::npos);
  for (int i = 0; i < 3; ++i) {
    auto wrong = connect(*server, "open says me");
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(wrong.status().message().find("wrong cluster key"), std::string_view::npos);
  }
  auto right = connect(*server, "open sesame");
  ASSERT_TRUE(right.ok()) << right.status().to_string();
  auto tc = *(*right)->thread_client();
  EXPECT_TRUE(tc->run(tc->allocate(64)).ok());
  unlink(path);
  // Three wrong keys, one log line.
  EXPECT_EQ(server->stop(), 0);
  std::string log = server->log();
  size_t lines = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("wrong cluster key") != std::string::npos) ++lines;
  }
  EXPECT_EQ(lines, 1u) << log;
}

TEST_P(DoorTest, AnotherProtocolVersionGetsAClearRefusal) {
  auto server = start();
  ASSERT_NE(server, nullptr);
  int fd = raw_connect(server->port());
  ASSERT_GE(fd, 0);
  w::DoorHello h{};
  h.magic = w::kDoorMagic;
  h.version = w::kProtocolVersion + 1;
  h.address_bytes = 8;
  ASSERT_EQ(send(fd, &h, sizeof(h), 0), static_cast<ssize_t>(sizeof(h)));
  bool eof = false;
  std::string reply = read_until_eof(fd, 10'000, &eof);
  close(fd);
  ASSERT_GE(reply.size(), sizeof(w::DoorWelcome));
  w::DoorWelcome m;
  std::memcpy(&m, reply.data(), sizeof(m));
  EXPECT_EQ(m.status, static_cast<uint16_t>(StatusCode::kVersionMismatch));
  std::string msg = reply.substr(sizeof(m), m.message_bytes);
  EXPECT_NE(msg.find("protocol"), std::string::npos) << msg;
}

TEST_P(DoorTest, SessionCapRefusesTheNextClientUntilOneLeaves) {
  auto server = start({"--max-sessions", "3"});
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<Cluster>> in;
  for (int i = 0; i < 3; ++i) {
    auto c = connect(*server);
    ASSERT_TRUE(c.ok()) << i << ": " << c.status().to_string();
    in.push_back(std::move(*c));
  }
  auto fourth = connect(*server);
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(fourth.status().message().find("max_sessions"), std::string_view::npos);
  in.pop_back();  // its session ends
  std::unique_ptr<Cluster> again;
  for (int waited = 0; waited < 10'000 && again == nullptr; waited += 10) {
    auto c = connect(*server);
    if (c.ok()) {
      again = std::move(*c);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  EXPECT_NE(again, nullptr);
}

TEST_P(DoorTest, ABurstOfClientsIsServedWithoutLosingAny) {
  auto server = start();
  ASSERT_NE(server, nullptr);
  constexpr int kThreads = 10, kPerThread = 10;
  std::atomic<int> ok{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::unique_ptr<Cluster>> held;  // all open at once
      for (int i = 0; i < kPerThread; ++i) {
        auto c = connect(*server);
        if (!c.ok()) {
          errors[t] = c.status().to_string();
          continue;
        }
        auto tc = *(*c)->thread_client();
        if (tc->run(tc->stats((*c)->nodes()[0].node_id)).ok()) ok.fetch_add(1);
        held.push_back(std::move(*c));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kPerThread);
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST_P(DoorTest, SigtermAnswersClientsAndExitsZero) {
  auto server = start();
  ASSERT_NE(server, nullptr);
  auto c = connect(*server);
  ASSERT_TRUE(c.ok());
  auto tc = *(*c)->thread_client();
  auto a = tc->run(tc->allocate(64));
  ASSERT_TRUE(a.ok());
  const int status = server->stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The client is told (goodbye or closed connection), never left hanging.
  uint64_t v = 0;
  Status s;
  for (int waited = 0; waited < 10'000; waited += 5) {
    s = sync_wait(tc->read(*a, &v, 8));
    if (!s.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kPeerFailed)
      << s.to_string();
}

INSTANTIATE_TEST_SUITE_P(Transports, DoorTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

TEST(ServerCommandLineTest, NonsenseIsRefusedWithAClearMessage) {
  struct Bad {
    std::string args, says;
  } cases[] = {
      {"--port -5", "--port"},
      {"--node-id -3", "--node-id"},
      {"--idle-spin-us -7", "--idle-spin-us"},
      {"--port 0 --port-file /nonexistent-dir/port", "does not exist"},
      {"--port 0 --capacity 100TiB", "exceeds the memory this machine can back"},
      {"--port 0 --max-sessions 0", "--max-sessions"},
      {"--port 0 --cluster-key-file /nonexistent-key", "cannot read cluster key file"},
  };
  for (const Bad& b : cases) {
    std::string out;
    int rc = run_command(std::string(FARMEM_SERVER_BIN) + " " + b.args, &out);
    EXPECT_NE(rc, 0) << b.args;
    EXPECT_NE(out.find(b.says), std::string::npos) << b.args << ": " << out;
  }
}

}  // namespace
}  // namespace farmem::testing
