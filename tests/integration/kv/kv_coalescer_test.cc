// The client's request coalescer (kv/coalescer.h) against a scripted kv service in an
// in-process memory node (no child processes): the service records every kOps message it gets
// (pool, keys), can hold its replies (to fill the window of messages in flight) and fails whole
// messages on request. Checks: one message per pool handle per round, at most max_batch ops per
// message in order, at most max_in_flight messages per node (the others wait and go out as
// replies come back), and a failed message fails its own operations only.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/kv/coalescer.h"
#include "farmem/memnode/server.h"
#include "farmem/runtime/when_all.h"
#include "harness.h"
#include "kv/service/messages.h"

namespace farmem::testing {
namespace {

namespace w = kv::wire;
using memnode::Request;
using memnode::Responder;
using runtime::Task;

// What the scripted service saw and does; shared with its worker threads.
struct Script {
  struct Message {
    uint64_t pool = 0;
    std::vector<std::string> keys;
  };
  std::mutex mu;
  std::vector<Message> messages;          // (mu) in arrival order
  std::vector<Responder> held;            // (mu) replies held back while `hold`
  std::vector<std::string> held_replies;  // (mu) what they get
  std::atomic<bool> hold{false};

  size_t held_count() {
    std::lock_guard<std::mutex> lock(mu);
    return held.size();
  }
  std::vector<Message> seen() {
    std::lock_guard<std::mutex> lock(mu);
    return messages;
  }
};
Script* g_script = nullptr;

// Answers kOps: every op OK (gets with an empty value), unless a key of the message starts with
// 'x': then the whole message fails with kInternal.
class ScriptedKvWorker final : public memnode::ServiceWorker {
 public:
  void handle(Request& r, Responder responder) override {
    w::KvOpsHeader h{};
    std::vector<kv::service::OpView> ops;
    Status s = kv::service::parse_ops(r.payload, &h, &ops);
    if (!s.ok()) return responder.fail(s);
    Script::Message m{h.pool, {}};
    bool fail = false;
    for (const auto& op : ops) {
      m.keys.emplace_back(op.key);
      fail = fail || op.key.starts_with("x");
    }
    std::string reply(sizeof(w::KvOpsReplyHeader), '\0');
    const w::KvOpsReplyHeader rh{static_cast<uint32_t>(ops.size()), 0};
    std::memcpy(reply.data(), &rh, sizeof(rh));
    for (size_t i = 0; i < ops.size(); ++i) {
      w::KvOpReply op{};
      op.record = 64 * (i + 1);
      op.version = i + 1;
      reply.append(reinterpret_cast<const char*>(&op), sizeof(op));
    }
    std::lock_guard<std::mutex> lock(g_script->mu);
    g_script->messages.push_back(std::move(m));
    if (fail) return responder.fail(Internal("scripted failure"));
    if (g_script->hold.load()) {
      g_script->held.push_back(std::move(responder));
      g_script->held_replies.push_back(std::move(reply));
      return;
    }
    responder.ok(reply);
  }
  // While replies are held, poll() runs every millisecond (it answers them once released).
  uint64_t wake_at_ns() const override {
    return g_script->held_count() > 0 ? farmem::now_ns() + 1'000'000 : 0;
  }
  void poll(uint64_t) override {
    if (g_script->hold.load()) return;
    std::lock_guard<std::mutex> lock(g_script->mu);
    for (size_t i = 0; i < g_script->held.size(); ++i) {
      g_script->held[i].ok(g_script->held_replies[i]);
    }
    g_script->held.clear();
    g_script->held_replies.clear();
  }
};

class ScriptedKvService final : public memnode::Service {
 public:
  std::string_view name() const override { return "scripted-kv"; }
  uint16_t first_opcode() const override { return w::kKvFirstOpcode; }
  uint16_t last_opcode() const override { return w::kKvLastOpcode; }
  std::unique_ptr<memnode::ServiceWorker> start_worker(const memnode::WorkerContext&) override {
    return std::make_unique<ScriptedKvWorker>();
  }
};

// One operation through the coalescer: its own status (the message's, or the reply's).
Task<Status> one_op(kv::Coalescer* c, kv::Lane* lane, w::KvOp op, std::string key) {
  kv::OpSlot slot;
  slot.op = op;
  std::string value;
  slot.value = op == w::KvOp::kGet ? &value : nullptr;
  co_await c->submit(lane, &slot, 0, key, op == w::KvOp::kPut ? "v" : "");
  if (!slot.status.ok()) co_return slot.status;
  co_return slot.reply.status == 0 ? OkStatus() : Internal("op failed on the node");
}

class KvCoalescerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_script = &script_;
    memnode::ServerConfig config;
    config.port = 0;
    config.capacity_bytes = 16 << 20;
    config.workers = 1;
    config.idle_spin_us = 0;
    config.tls = "sm,tcp";
    auto s = memnode::Server::create(config, {std::make_shared<ScriptedKvService>()});
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(*s);
    thread_ = std::thread([this] { (void)server_->run(); });
    client::ClusterConfig cc;
    cc.memnodes.push_back({"127.0.0.1", server_->port()});
    cc.options.tls = "sm,tcp";
    auto c = client::Cluster::connect(cc);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cluster_ = std::move(*c);
    client_ = *cluster_->thread_client();
  }
  void TearDown() override {
    script_.hold = false;
    cluster_.reset();
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    g_script = nullptr;
  }
  kv::CoalescerOptions options(uint32_t max_ops, uint32_t max_in_flight) const {
    kv::CoalescerOptions o;
    o.max_ops = max_ops;
    o.max_in_flight = max_in_flight;
    o.timeout_ns = 30'000'000'000ull;  // a hang guard
    return o;
  }
  // Runs ops (lane index, op, key) in one round (started together), returns their statuses.
  struct Op {
    size_t lane;
    w::KvOp op;
    std::string key;
  };
  std::vector<Status> run(kv::Coalescer* c, std::vector<kv::Lane*> lanes, std::vector<Op> ops,
                          std::vector<Task<Status>> also = {}) {
    std::vector<Task<Status>> tasks;
    for (const Op& o : ops) tasks.push_back(one_op(c, lanes[o.lane], o.op, o.key));
    for (auto& t : also) tasks.push_back(std::move(t));
    return client_->run(runtime::when_all(std::move(tasks)));
  }
  uint16_t node() const { return cluster_->nodes()[0].node_id; }

  Script script_;
  std::unique_ptr<memnode::Server> server_;
  std::thread thread_;
  std::unique_ptr<client::Cluster> cluster_;
  client::ThreadClient* client_ = nullptr;
};

TEST_F(KvCoalescerTest, OneMessagePerPoolHandlePerRound) {
  kv::Coalescer c(client_, options(64, 8));
  kv::Lane a(&c, 11, node(), client_->endpoint(node()));
  kv::Lane b(&c, 22, node(), client_->endpoint(node()));
  std::vector<Op> ops;
  for (int i = 0; i < 10; ++i) {
    ops.push_back({static_cast<size_t>(i % 2), i % 3 == 0 ? w::KvOp::kPut : w::KvOp::kGet,
                   "k" + std::to_string(i)});
  }
  for (const Status& s : run(&c, {&a, &b}, ops)) EXPECT_TRUE(s.ok()) << s.to_string();
  auto seen = script_.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].pool, 11u);
  EXPECT_EQ(seen[0].keys, (std::vector<std::string>{"k0", "k2", "k4", "k6", "k8"}));
  EXPECT_EQ(seen[1].pool, 22u);
  EXPECT_EQ(seen[1].keys, (std::vector<std::string>{"k1", "k3", "k5", "k7", "k9"}));
  EXPECT_EQ(c.messages(), 2u);
  EXPECT_EQ(c.ops(), 10u);
}

TEST_F(KvCoalescerTest, AMessageTakesAtMostMaxBatchOpsInOrder) {
  kv::Coalescer c(client_, options(4, 8));
  kv::Lane a(&c, 11, node(), client_->endpoint(node()));
  std::vector<Op> ops;
  for (int i = 0; i < 10; ++i) ops.push_back({0, w::KvOp::kGet, "k" + std::to_string(i)});
  for (const Status& s : run(&c, {&a}, ops)) EXPECT_TRUE(s.ok()) << s.to_string();
  auto seen = script_.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].keys, (std::vector<std::string>{"k0", "k1", "k2", "k3"}));
  EXPECT_EQ(seen[1].keys, (std::vector<std::string>{"k4", "k5", "k6", "k7"}));
  EXPECT_EQ(seen[2].keys, (std::vector<std::string>{"k8", "k9"}));
}

// Waits (bounded) until the service holds `n` messages, checks the client's window, releases.
Task<Status> watch_window(kv::Coalescer* c, client::ThreadClient* client, Script* script,
                          uint16_t node, size_t n) {
  for (int i = 0; i < 30'000 && script->held_count() < n; ++i) {
    co_await client->scheduler().sleep_for_ns(1'000'000);
  }
  Status s = OkStatus();
  if (script->held_count() != n) s = Internal("the service never held the expected messages");
  if (s.ok() && (c->in_flight(node) != n || c->messages() != n)) {
    s = Internal("the window was not full, or more messages than it allows were posted");
  }
  script->hold = false;  // the service answers what it holds, then everything at once
  co_return s;
}

TEST_F(KvCoalescerTest, AtMostMaxInFlightMessagesPerNodeTheRestWait) {
  kv::Coalescer c(client_, options(1, 2));
  kv::Lane a(&c, 11, node(), client_->endpoint(node()));
  kv::Lane b(&c, 22, node(), client_->endpoint(node()));
  script_.hold = true;
  std::vector<Op> ops;
  for (int i = 0; i < 6; ++i) ops.push_back({static_cast<size_t>(i % 2), w::KvOp::kGet, "k"});
  std::vector<Task<Status>> watcher;
  watcher.push_back(watch_window(&c, client_, &script_, node(), 2));
  auto st = run(&c, {&a, &b}, ops, std::move(watcher));
  for (const Status& s : st) EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(script_.seen().size(), 6u);  // one op per message: all six went out, two at a time
  EXPECT_EQ(c.in_flight(node()), 0u);
}

TEST_F(KvCoalescerTest, AFailedMessageFailsItsOwnOperationsOnly) {
  kv::Coalescer c(client_, options(2, 8));
  kv::Lane a(&c, 11, node(), client_->endpoint(node()));
  kv::Lane b(&c, 22, node(), client_->endpoint(node()));
  // Lane a: [k0 k1] [x2 k3] [k4]; lane b: [x5] (a message fails when a key starts with 'x').
  std::vector<Op> ops = {{0, w::KvOp::kGet, "k0"}, {0, w::KvOp::kPut, "k1"},
                         {0, w::KvOp::kGet, "x2"}, {0, w::KvOp::kErase, "k3"},
                         {0, w::KvOp::kGet, "k4"}, {1, w::KvOp::kGet, "x5"}};
  auto st = run(&c, {&a, &b}, ops);
  ASSERT_EQ(st.size(), 6u);
  for (size_t i : {0u, 1u, 4u}) EXPECT_TRUE(st[i].ok()) << i << ": " << st[i].to_string();
  for (size_t i : {2u, 3u, 5u}) {
    EXPECT_EQ(st[i].code(), StatusCode::kInternal) << i << ": " << st[i].to_string();
  }
  EXPECT_EQ(script_.seen().size(), 4u);
  // The lanes go on after a failure.
  st = run(&c, {&a, &b}, {{0, w::KvOp::kGet, "k6"}, {1, w::KvOp::kGet, "k7"}});
  for (const Status& s : st) EXPECT_TRUE(s.ok()) << s.to_string();
}

}  // namespace
}  // namespace farmem::testing
