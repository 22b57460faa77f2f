// The service door's worker facilities, with a probe service in an in-process memory node:
// forwarding to another worker (answered through the session's worker), session ends heard on
// every worker, a watched fd waking a sleeping worker, and a service's wake-up time.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/memnode/server.h"
#include "harness.h"

namespace farmem::testing {
namespace {

using memnode::Request;
using memnode::Responder;

constexpr uint16_t kWhere = 400;   // [target worker] -> {worker, session_worker}
constexpr uint16_t kWaitFd = 401;  // answered when a watched eventfd becomes readable
constexpr uint16_t kWakeMe = 402;  // answered from poll() 20 ms later (wake_at_ns)

std::atomic<int> g_eventfd{-1};
std::atomic<int> g_session_ends[2];

class ProbeWorker final : public memnode::ServiceWorker {
 public:
  explicit ProbeWorker(const memnode::WorkerContext& c) : c_(c) {}
  void handle(Request& r, Responder responder) override {
    if (r.header.opcode == kWhere) {
      const uint32_t target = r.payload.empty() ? c_.worker_index : r.payload[0];
      if (target != c_.worker_index) return c_.forward(target, std::move(r), std::move(responder));
      uint32_t out[2] = {r.worker, r.session_worker};
      return responder.ok(out, sizeof(out));
    }
    if (r.header.opcode == kWaitFd) {
      fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      Status s = c_.watch_fd(fd_);
      if (!s.ok()) return responder.fail(s);
      waiting_fd_ = std::move(responder);
      g_eventfd.store(fd_);
      return;
    }
    due_ns_ = c_.now_ns() + 20'000'000;
    waiting_time_ = std::move(responder);
  }
  void poll(uint64_t now_ns) override {
    if (fd_ >= 0) {
      uint64_t v = 0;
      if (::read(fd_, &v, sizeof(v)) == sizeof(v)) {
        c_.unwatch_fd(fd_);
        ::close(fd_);
        fd_ = -1;
        waiting_fd_.ok(&v, sizeof(v));
      }
    }
    if (due_ns_ != 0 && now_ns >= due_ns_) {
      due_ns_ = 0;
      waiting_time_.ok("late");
    }
  }
  uint64_t wake_at_ns() const override { return due_ns_; }
  void on_session_end(uint64_t) override { g_session_ends[c_.worker_index % 2].fetch_add(1); }

 private:
  memnode::WorkerContext c_;
  int fd_ = -1;
  Responder waiting_fd_{nullptr, 0, {}};
  uint64_t due_ns_ = 0;
  Responder waiting_time_{nullptr, 0, {}};
};

class ProbeService final : public memnode::Service {
 public:
  std::string_view name() const override { return "probe"; }
  uint16_t first_opcode() const override { return kWhere; }
  uint16_t last_opcode() const override { return kWakeMe; }
  std::unique_ptr<memnode::ServiceWorker> start_worker(const memnode::WorkerContext& c) override {
    return std::make_unique<ProbeWorker>(c);
  }
};

class ServiceDoorTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    memnode::ServerConfig config;
    config.port = 0;
    config.capacity_bytes = 16 << 20;
    config.workers = 2;
    config.idle_spin_us = 0;  // sleep at once when idle
    config.tls = GetParam().tls;
    auto s = memnode::Server::create(config, {std::make_shared<ProbeService>()});
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(*s);
    thread_ = std::thread([this] { (void)server_->run(); });
    client::ClusterConfig cc;
    cc.memnodes.push_back({"127.0.0.1", server_->port()});
    cc.options.tls = GetParam().tls;
    cc.options.op_timeout_ms = 900;  // below the 1 s idle sleep: answers must come from a wake-up
    auto c = client::Cluster::connect(cc);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cluster_ = std::move(*c);
    client_ = *cluster_->thread_client();
  }
  void TearDown() override {
    cluster_.reset();
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  Status call(uint16_t opcode, const std::string& request, std::string* reply) {
    reply->assign(64, '\0');
    uint32_t got = 0;
    Status s = client_->run(
        client_->rpc(0, opcode, request.data(), request.size(), reply->data(), 64, &got));
    reply->resize(s.ok() ? got : 0);
    return s;
  }

  std::unique_ptr<memnode::Server> server_;
  std::thread thread_;
  std::unique_ptr<client::Cluster> cluster_;
  client::ThreadClient* client_ = nullptr;
};

TEST_P(ServiceDoorTest, ForwardedRequestsRunOnTheTargetAndAnswerThroughTheSessionsWorker) {
  std::string reply;
  ASSERT_TRUE(call(kWhere, "", &reply).ok());
  uint32_t where[2];
  std::memcpy(where, reply.data(), 8);
  const uint32_t home = where[0];
  EXPECT_EQ(where[1], home);
  for (int i = 0; i < 100; ++i) {
    const uint8_t target = static_cast<uint8_t>(i % 2);
    ASSERT_TRUE(call(kWhere, std::string(1, static_cast<char>(target)), &reply).ok());
    std::memcpy(where, reply.data(), 8);
    EXPECT_EQ(where[0], target);
    EXPECT_EQ(where[1], home);
  }
  EXPECT_EQ(call(kWhere, std::string(1, 7), &reply).code(), StatusCode::kInternal);
  // The session's end reaches both workers.
  const int before0 = g_session_ends[0].load(), before1 = g_session_ends[1].load();
  cluster_.reset();
  for (int i = 0; i < 2000; ++i) {  // hang guard, 10 s
    if (g_session_ends[0].load() > before0 && g_session_ends[1].load() > before1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GT(g_session_ends[0].load(), before0);
  EXPECT_GT(g_session_ends[1].load(), before1);
}

TEST_P(ServiceDoorTest, AWatchedDescriptorWakesASleepingWorker) {
  g_eventfd.store(-1);
  std::thread writer([] {
    int fd = -1;
    for (int i = 0; i < 2000 && (fd = g_eventfd.load()) < 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the worker is asleep by now
    uint64_t v = 42;
    if (fd >= 0) {
      EXPECT_EQ(::write(fd, &v, sizeof(v)), 8);
    }
  });
  std::string reply;
  Status s = call(kWaitFd, "", &reply);
  writer.join();
  ASSERT_TRUE(s.ok()) << s.to_string();
  uint64_t v = 0;
  std::memcpy(&v, reply.data(), 8);
  EXPECT_EQ(v, 42u);
}

TEST_P(ServiceDoorTest, AServicesWakeUpTimeEndsTheWorkersSleep) {
  std::string reply;
  Status s = call(kWakeMe, "", &reply);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(reply, "late");
}

INSTANTIATE_TEST_SUITE_P(Transports, ServiceDoorTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
