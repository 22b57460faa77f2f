// Control plane (allocation, named roots, stats) and bad input, against real memory nodes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "farmem/fabric/wire.h"
#include "farmem/runtime/scheduler.h"
#include "harness.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Cluster;
using client::ThreadClient;
namespace w = farmem::wire;

class ControlTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.tls = GetParam().tls;
    o.capacity_bytes = 64ull << 20;
    o.node_id = 5;
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    auto c = Cluster::connect(config_for({server_.get()}, GetParam().tls, 3000));
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cluster_ = std::move(*c);
    client_ = *cluster_->thread_client();
  }

  // Sends a raw request through the fabric and waits for the reply.
  Status raw(const w::RpcHeader& h, const std::vector<uint8_t>& payload) {
    fabric::Endpoint* ep = client_->endpoint(5);
    fabric::Completion c;
    std::vector<uint8_t> reply(w::kMaxRpcPayloadBytes);
    uint32_t got = 0;
    Status s = ep->post_raw_request(h, payload.data(), payload.size(), reply.data(),
                                    static_cast<uint32_t>(reply.size()), &got, &c, 0);
    if (!s.ok()) return s;
    while (c.remaining > 0) client_->scheduler().poll_once();
    return c.status;
  }

  static w::RpcHeader header(uint16_t opcode, uint32_t payload_bytes) {
    w::RpcHeader h{};
    h.magic = w::kRpcMagic;
    h.version = w::kProtocolVersion;
    h.opcode = opcode;
    h.payload_bytes = payload_bytes;
    return h;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Cluster> cluster_;
  ThreadClient* client_ = nullptr;
};

TEST_P(ControlTest, HandshakeReportsTheConfiguredNodeAndRegion) {
  ASSERT_EQ(cluster_->nodes().size(), 1u);
  EXPECT_EQ(cluster_->nodes()[0].node_id, 5);
  EXPECT_EQ(cluster_->nodes()[0].region_bytes, 64ull << 20);
  EXPECT_FALSE(cluster_->transports().empty());
}

TEST_P(ControlTest, SmallAllocationsAreDistinctAndDoNotOverlap) {
  std::vector<std::pair<uint64_t, uint64_t>> blocks;
  for (uint64_t size : {8u, 64u, 100u, 1000u, 4096u, 16384u, 100000u}) {
    for (int i = 0; i < 20; ++i) {
      auto a = client_->run(client_->allocate(size));
      ASSERT_TRUE(a.ok()) << a.status().to_string();
      EXPECT_EQ(a->node(), 5);
      EXPECT_EQ(a->offset() % 64, 0u);
      blocks.emplace_back(a->offset(), size);
    }
  }
  std::sort(blocks.begin(), blocks.end());
  for (size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_LE(blocks[i - 1].first + blocks[i - 1].second, blocks[i].first) << "overlap";
  }
  EXPECT_GE(blocks.front().first, 4096u) << "the region header is never handed out";
}

TEST_P(ControlTest, FreedMemoryIsReusedAndStatsTrackIt) {
  auto before = client_->run(client_->stats(5));
  ASSERT_TRUE(before.ok());
  auto big = client_->run(client_->allocate(1 << 20));
  ASSERT_TRUE(big.ok());
  auto during = client_->run(client_->stats(5));
  ASSERT_TRUE(during.ok());
  EXPECT_GE(during->used_bytes, before->used_bytes + (1 << 20));
  ASSERT_TRUE(client_->run(client_->free(*big, 1 << 20)).ok());
  auto after = client_->run(client_->stats(5));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->used_bytes, before->used_bytes);
  EXPECT_GT(after->rpcs_served, during->rpcs_served);
  EXPECT_EQ(after->capacity_bytes, 64ull << 20);
  // Small frees go to the thread's free list and are handed out again.
  auto small = client_->run(client_->allocate(48));
  ASSERT_TRUE(small.ok());
  ASSERT_TRUE(client_->run(client_->free(*small, 48)).ok());
  auto again = client_->run(client_->allocate(40));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *small);
}

TEST_P(ControlTest, OutOfMemoryIsAClearError) {
  auto a = client_->run(client_->allocate(1ull << 30));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(a.status().message().find("exports only"), std::string_view::npos)
      << a.status().to_string();
}

TEST_P(ControlTest, NamedRootsArePublishedFoundReplacedAndRemoved) {
  GlobalAddress a(5, 8192), b(5, 16384);
  ASSERT_TRUE(client_->run(client_->publish_root("tables/users", a)).ok());
  auto dup = client_->run(client_->publish_root("tables/users", b));
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);
  // Another process finds it by name.
  auto other = Cluster::connect(config_for({server_.get()}, GetParam().tls));
  ASSERT_TRUE(other.ok());
  ThreadClient* oc = *(*other)->thread_client();
  auto found = oc->run(oc->lookup_root("tables/users"));
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, a);
  ASSERT_TRUE(client_->run(client_->publish_root("tables/users", b, /*replace=*/true)).ok());
  EXPECT_EQ(*oc->run(oc->lookup_root("tables/users")), b);
  ASSERT_TRUE(oc->run(oc->remove_root("tables/users")).ok());
  auto gone = client_->run(client_->lookup_root("tables/users"));
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->run(client_->remove_root("tables/users")).code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->run(client_->lookup_root("")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->run(client_->lookup_root(std::string(129, 'x'))).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(ControlTest, BadAddressesAreRejectedBeforePosting) {
  uint64_t v = 0;
  Status oob = sync_wait(client_->read(GlobalAddress(5, (64ull << 20) - 4), &v, 8));
  EXPECT_EQ(oob.code(), StatusCode::kOutOfRange) << oob.to_string();
  Status past = sync_wait(client_->write(GlobalAddress(5, 1ull << 40), &v, 8));
  EXPECT_EQ(past.code(), StatusCode::kOutOfRange);
  Status node = sync_wait(client_->read(GlobalAddress(9, 4096), &v, 8));
  EXPECT_EQ(node.code(), StatusCode::kNotFound);
  Status unaligned = sync_wait(client_->cas(GlobalAddress(5, 4100), 0, 1, &v));
  EXPECT_EQ(unaligned.code(), StatusCode::kInvalidArgument);
  Status empty = sync_wait(client_->read(GlobalAddress(5, 4096), &v, 0));
  EXPECT_EQ(empty.code(), StatusCode::kInvalidArgument);
  // The connection is still good.
  auto a = client_->run(client_->allocate(64));
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(sync_wait(client_->write(*a, &v, 8)).ok());
}

TEST_P(ControlTest, FreeOfUnknownOffsetIsRefusedAndLosesNothing) {
  auto a = client_->run(client_->allocate_on(5, 1 << 16));
  ASSERT_TRUE(a.ok());
  uint64_t marker = 0xFEEDFACE;
  ASSERT_TRUE(sync_wait(client_->write(*a, &marker, 8)).ok());
  Status bogus = client_->run(client_->free_on(GlobalAddress(5, a->offset() + 64)));
  EXPECT_EQ(bogus.code(), StatusCode::kNotFound) << bogus.to_string();
  uint64_t got = 0;
  ASSERT_TRUE(sync_wait(client_->read(*a, &got, 8)).ok());
  EXPECT_EQ(got, marker);
  EXPECT_TRUE(client_->run(client_->free_on(*a)).ok());
  EXPECT_EQ(client_->run(client_->free_on(*a)).code(), StatusCode::kNotFound);
}

TEST_P(ControlTest, MalformedAndOversizedRpcsGetErrorRepliesAndServerKeepsServing) {
  // Unknown opcode.
  EXPECT_EQ(raw(header(999, 0), {}).code(), StatusCode::kInvalidArgument);
  // Header announces a different payload size than what arrives.
  EXPECT_EQ(raw(header(static_cast<uint16_t>(w::Opcode::kEcho), 100), {1, 2, 3}).code(),
            StatusCode::kProtocolError);
  // Bad magic.
  w::RpcHeader bad = header(static_cast<uint16_t>(w::Opcode::kEcho), 0);
  bad.magic = 0x12345678;
  EXPECT_EQ(raw(bad, {}).code(), StatusCode::kProtocolError);
  // Truncated alloc request.
  EXPECT_EQ(raw(header(static_cast<uint16_t>(w::Opcode::kAlloc), 3), {1, 2, 3}).code(),
            StatusCode::kInvalidArgument);
  // Root request whose name length lies.
  std::vector<uint8_t> root(sizeof(w::RootRequest) + 4, 'a');
  w::RootRequest rr{0, 200, 0, 0};
  std::memcpy(root.data(), &rr, sizeof(rr));
  EXPECT_EQ(raw(header(static_cast<uint16_t>(w::Opcode::kRootLookup), root.size()), root).code(),
            StatusCode::kInvalidArgument);
  // Oversized: the client refuses to send it...
  std::vector<uint8_t> huge(w::kMaxRpcPayloadBytes + 1, 0);
  uint32_t got = 0;
  Status refused = client_->run(client_->rpc(5, static_cast<uint16_t>(w::Opcode::kEcho),
                                             huge.data(), huge.size(), nullptr, 0, &got));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  // ...and the server refuses it when sent anyway.
  EXPECT_EQ(raw(header(static_cast<uint16_t>(w::Opcode::kEcho), huge.size()), huge).code(),
            StatusCode::kInvalidArgument);
  // Same client still served, and another client too.
  char echo[] = "still here";
  char back[sizeof(echo)] = {};
  ASSERT_TRUE(client_
                  ->run(client_->rpc(5, static_cast<uint16_t>(w::Opcode::kEcho), echo, sizeof(echo),
                                     back, sizeof(back), &got))
                  .ok());
  EXPECT_STREQ(back, echo);
  auto other = Cluster::connect(config_for({server_.get()}, GetParam().tls));
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE((*(*other)->thread_client())->run((*(*other)->thread_client())->stats(5)).ok());
}

TEST_P(ControlTest, ProtocolVersionMismatchIsRefusedWithAMessage) {
  w::RpcHeader h = header(static_cast<uint16_t>(w::Opcode::kEcho), 0);
  h.version = w::kProtocolVersion + 1;
  Status s = raw(h, {});
  EXPECT_EQ(s.code(), StatusCode::kVersionMismatch);
  EXPECT_NE(s.message().find("protocol"), std::string_view::npos) << s.to_string();
}

TEST_P(ControlTest, DuplicateNodeIdsAreRefusedAtConnect) {
  ServerOptions o;
  o.tls = GetParam().tls;
  o.capacity_bytes = 1 << 20;
  o.node_id = 5;
  auto twin = ServerProcess::start(o);
  ASSERT_NE(twin, nullptr);
  auto c = Cluster::connect(config_for({server_.get(), twin.get()}, GetParam().tls));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("unique"), std::string_view::npos);
}

// A listed node named down (client option down_nodes) is not connected (nothing listens at
// its address here), keeps its id for root placement, and everything addressed to it fails at
// once with kUnavailable naming it.
TEST_P(ControlTest, DownNodesAreSkippedAndFailAtOnce) {
  client::ClusterConfig cfg = config_for({server_.get()}, GetParam().tls, 3000);
  auto gone = parse_host_port("127.0.0.1:1");
  ASSERT_TRUE(gone.ok());
  cfg.memnodes.push_back(*gone);
  cfg.options.down_nodes.push_back(client::DownNode{*gone, 9});
  auto c = Cluster::connect(cfg);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_EQ((*c)->nodes().size(), 2u);
  EXPECT_TRUE((*c)->nodes()[1].down);
  EXPECT_TRUE((*c)->is_down(9));
  ThreadClient* tc = *(*c)->thread_client();
  uint64_t word = 0;
  Status r = sync_wait(tc->read(GlobalAddress(9, 4096), &word, 8));
  EXPECT_EQ(r.code(), StatusCode::kUnavailable) << r.to_string();
  EXPECT_NE(r.message().find("127.0.0.1:1"), std::string_view::npos) << r.to_string();
  EXPECT_EQ(tc->run(tc->stats(9)).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(tc->node_status(9).code(), StatusCode::kUnavailable);
  for (int i = 0; i < 8; ++i) {  // round-robin allocation passes the down node by
    auto a = tc->run(tc->allocate(64));
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    EXPECT_EQ(a->node(), 5);
  }
  int on_down = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string name = "root-" + std::to_string(i);
    Status p = tc->run(tc->publish_root(name, GlobalAddress(5, 4096)));
    if ((*c)->root_node(name) == 9) {
      ++on_down;
      EXPECT_EQ(p.code(), StatusCode::kUnavailable) << p.to_string();
    } else {
      EXPECT_TRUE(p.ok()) << p.to_string();
    }
  }
  EXPECT_GT(on_down, 0);  // the down node keeps its share of the roots
  // A live node may not report an id given to a down node.
  cfg.options.down_nodes[0].node_id = 5;
  auto clash = Cluster::connect(cfg);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.status().code(), StatusCode::kInvalidArgument) << clash.status().to_string();
}

TEST_P(ControlTest, RootsSpreadOverSeveralNodes) {
  ServerOptions o;
  o.tls = GetParam().tls;
  o.capacity_bytes = 1 << 20;
  o.node_id = 6;
  auto second = ServerProcess::start(o);
  ASSERT_NE(second, nullptr);
  auto c = Cluster::connect(config_for({server_.get(), second.get()}, GetParam().tls));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ThreadClient* tc = *(*c)->thread_client();
  std::set<uint16_t> homes;
  for (int i = 0; i < 32; ++i) {
    std::string name = "root-" + std::to_string(i);
    ASSERT_TRUE(tc->run(tc->publish_root(name, GlobalAddress(6, 4096 + 64 * i))).ok());
    homes.insert((*c)->root_node(name));
  }
  EXPECT_EQ(homes.size(), 2u);
  for (int i = 0; i < 32; ++i) {
    auto a = tc->run(tc->lookup_root("root-" + std::to_string(i)));
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->offset(), 4096u + 64 * i);
  }
}

TEST_P(ControlTest, NodeWithSeveralWorkersServesEveryClientThread) {
  ServerOptions o;
  o.tls = GetParam().tls;
  o.capacity_bytes = 8 << 20;
  o.node_id = 7;
  o.extra_args = {"--workers", "3"};
  auto multi = ServerProcess::start(o);
  ASSERT_NE(multi, nullptr);
  auto c = Cluster::connect(config_for({multi.get()}, GetParam().tls));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_EQ((*c)->nodes()[0].worker_count, 3u);
  ThreadClient* main_client = *(*c)->thread_client();
  auto counter = main_client->run(main_client->allocate(64));
  ASSERT_TRUE(counter.ok());
  uint64_t zero = 0;
  ASSERT_TRUE(sync_wait(main_client->write(*counter, &zero, 8)).ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      ThreadClient* tc = *(*c)->thread_client();
      for (int i = 0; i < 50; ++i) {
        uint64_t old = 0;
        if (!sync_wait(tc->faa(*counter, 1, &old)).ok()) failures.fetch_add(1);
        // RPCs land on this thread's worker.
        if (i % 10 == 0 && !tc->run(tc->stats(7)).ok()) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  uint64_t total = 0;
  ASSERT_TRUE(sync_wait(main_client->read(*counter, &total, 8)).ok());
  EXPECT_EQ(total, 200u);
  auto st = main_client->run(main_client->stats(7));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->worker_count, 3);
  EXPECT_EQ(st->connections, 5u);  // one endpoint per client thread
}

INSTANTIATE_TEST_SUITE_P(Transports, ControlTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
