// The offload agent (farmem-agent) between real host and memory-node processes, over shared
// memory and TCP: the data it forwards, task aggregation, the static and dynamic caches, the
// adaptive switch, several host processes sharing it, and a killed agent.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "agent_fixture.h"
#include "farmem/runtime/scheduler.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

// Reads return the node's bytes; writes through the agent are seen by later reads through the
// agent at once and, after a flush, by direct reads at the node.
TEST_P(AgentTest, ReadsAndWritesThroughTheAgent) {
  std::vector<uint8_t> model;
  const GlobalAddress base = fill(4ull << 20, test_seed(), &model);
  start_agent();
  read_pages(base, model, 0, 8);
  std::vector<uint8_t> page(kPage);
  std::mt19937_64 rng(test_seed() + 1);
  for (int i = 0; i < 20; ++i) {
    const uint64_t p = rng() % 64;
    const uint64_t at = rng() % (kPage - 100);
    for (int k = 0; k < 100; ++k) model[p * kPage + at + k] = static_cast<uint8_t>(rng());
    ASSERT_TRUE(run(host_->write(base + p * kPage + at, model.data() + p * kPage + at, 100)).ok());
    ASSERT_TRUE(run(host_->read(base + p * kPage, page.data(), kPage)).ok());
    ASSERT_EQ(0, std::memcmp(page.data(), model.data() + p * kPage, kPage)) << "page " << p;
  }
  // A whole page written in two pieces.
  for (auto& b : page) b = static_cast<uint8_t>(rng());
  std::memcpy(model.data() + 3 * kPage, page.data(), kPage);
  ASSERT_TRUE(run(host_->write(base + 3 * kPage, page.data(), kPage)).ok());
  ASSERT_TRUE(run(host_->flush()).ok());
  std::vector<uint8_t> all(model.size());
  for (uint64_t o = 0; o < model.size(); o += kPage) {
    ASSERT_TRUE(sync_wait(tc_->read(base + o, all.data() + o, kPage)).ok());
  }
  EXPECT_EQ(all, model);
  read_pages(base, model, 0, 64);
  const auto st = stats();
  EXPECT_EQ(st.writes_pending, 0u);
  EXPECT_GE(st.node_writes, 21u);
  EXPECT_GE(st.host_messages_in, st.host_reads);
}

// Many concurrent requests of two hosts, held while the agent is stopped, reach the memory node
// in fewer Batches than requests (task aggregation); with aggregation off, one Batch each.
TEST_P(AgentTest, AggregatesConcurrentRequests) {
  std::vector<uint8_t> model;
  const GlobalAddress base = fill(4ull << 20, test_seed(), &model);
  for (bool aggregate : {true, false}) {
    SCOPED_TRACE(aggregate ? "aggregation on" : "aggregation off");
    host_.reset();
    agent_cluster_.reset();
    agent_.reset();
    std::vector<std::string> flags = {"--no-dynamic"};
    if (!aggregate) flags.push_back("--no-aggregation");
    start_agent(flags);
    constexpr uint32_t kReads = 48;
    std::vector<std::vector<uint8_t>> bufs(kReads, std::vector<uint8_t>(4096));
    std::vector<GlobalAddress> addrs;
    std::vector<void*> dsts;
    for (uint32_t i = 0; i < kReads; ++i) {
      addrs.push_back(base + i * kPage);
      dsts.push_back(bufs[i].data());
    }
    agent_->child().signal(SIGSTOP);
    std::thread cont([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      agent_->child().signal(SIGCONT);
    });
    std::vector<Status> r = run(host_->read_many(addrs, dsts, 4096));
    cont.join();
    for (uint32_t i = 0; i < kReads; ++i) {
      ASSERT_TRUE(r[i].ok()) << r[i].to_string();
      ASSERT_EQ(0, std::memcmp(bufs[i].data(), model.data() + i * kPage, 4096));
    }
    const auto st = stats();
    EXPECT_EQ(st.host_reads, kReads);
    EXPECT_EQ(st.node_reads, kReads);
    if (aggregate) {
      EXPECT_LT(st.node_batches, kReads);
      EXPECT_GT(st.aggregated_reads, 0u);
    } else {
      EXPECT_EQ(st.node_batches, kReads);
      EXPECT_EQ(st.aggregated_reads, 0u);
    }
    std::printf("aggregation %s: %llu reads in %llu batches over %llu rounds\n",
                aggregate ? "on" : "off", static_cast<unsigned long long>(st.node_reads),
                static_cast<unsigned long long>(st.node_batches),
                static_cast<unsigned long long>(st.rounds));
  }
}

// Two memory nodes behind one agent: concurrent reads of both are grouped per node (at least
// one Batch per node, fewer than one per read) and each returns its own node's bytes.
TEST_P(AgentTest, AggregatesPerMemoryNode) {
  ServerOptions o;
  o.tls = tls_;
  o.node_id = 1;
  o.capacity_bytes = 64ull << 20;
  auto second = ServerProcess::start(o);
  ASSERT_NE(second, nullptr);
  auto both = client::Cluster::connect(config_for({node_.get(), second.get()}, tls_));
  ASSERT_TRUE(both.ok()) << both.status().to_string();
  auto tc = (*both)->thread_client();
  ASSERT_TRUE(tc.ok());
  constexpr uint32_t kReads = 32;
  std::vector<GlobalAddress> addrs;
  std::vector<std::vector<uint8_t>> want(kReads, std::vector<uint8_t>(4096));
  std::mt19937_64 rng(test_seed());
  for (uint16_t node : {0, 1}) {
    auto a = (*tc)->run((*tc)->allocate_on(node, kReads / 2 * 4096, 4096));
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    for (uint32_t i = 0; i < kReads / 2; ++i) {
      auto& w = want[addrs.size()];
      for (auto& b : w) b = static_cast<uint8_t>(rng());
      addrs.push_back(*a + i * 4096);
      ASSERT_TRUE(sync_wait((*tc)->write(addrs.back(), w.data(), w.size())).ok());
    }
  }
  agent_ = AgentProcess::start({node_.get(), second.get()}, tls_, {"--no-dynamic"});
  ASSERT_NE(agent_, nullptr);
  auto cfg = client::ClusterConfig::from_server_list(agent_->address());
  ASSERT_TRUE(cfg.ok());
  cfg->options.tls = tls_;
  auto c = client::Cluster::connect(*cfg);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  agent_cluster_ = std::move(*c);
  auto h = agent::AgentClient::create(*agent_cluster_);
  ASSERT_TRUE(h.ok());
  host_ = std::move(*h);
  std::vector<std::vector<uint8_t>> got(kReads, std::vector<uint8_t>(4096));
  std::vector<void*> dsts;
  for (auto& g : got) dsts.push_back(g.data());
  agent_->child().signal(SIGSTOP);
  std::thread cont([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    agent_->child().signal(SIGCONT);
  });
  std::vector<Status> r = run(host_->read_many(addrs, dsts, 4096));
  cont.join();
  for (uint32_t i = 0; i < kReads; ++i) {
    ASSERT_TRUE(r[i].ok()) << r[i].to_string();
    EXPECT_EQ(got[i], want[i]) << "read " << i;
  }
  const auto st = stats();
  EXPECT_EQ(st.node_reads, kReads);
  EXPECT_GE(st.node_batches, 2u);
  EXPECT_LT(st.node_batches, kReads);
  host_.reset();
  agent_cluster_.reset();
  agent_.reset();
}

// A pinned range is held whole: every read of it hits and none reaches the memory node.
TEST_P(AgentTest, StaticCacheServesEveryRead) {
  std::vector<uint8_t> model;
  const GlobalAddress base = fill(2ull << 20, test_seed(), &model);
  start_agent({"--no-dynamic"});
  ASSERT_TRUE(run(host_->pin_static(base, 2ull << 20)).ok());
  const auto before = stats();
  EXPECT_EQ(before.static_bytes, 2ull << 20);
  read_pages(base, model, 0, 32);
  const auto after = stats();
  EXPECT_EQ(after.static_hits - before.static_hits, 32u);
  EXPECT_EQ(after.node_reads, before.node_reads);
  // A write updates the pinned copy and the node.
  std::vector<uint8_t> page(kPage, 0x5a);
  std::memcpy(model.data() + 5 * kPage, page.data(), kPage);
  ASSERT_TRUE(run(host_->write(base + 5 * kPage, page.data(), kPage)).ok());
  read_pages(base, model, 5, 1);
  ASSERT_TRUE(run(host_->flush()).ok());
  std::vector<uint8_t> got(kPage);
  ASSERT_TRUE(sync_wait(tc_->read(base + 5 * kPage, got.data(), kPage)).ok());
  EXPECT_EQ(got, page);
  // A range inside pinned entries pins nothing more; an empty one is refused.
  ASSERT_TRUE(run(host_->pin_static(base + kPage, kPage)).ok());
  EXPECT_EQ(stats().static_bytes, 2ull << 20);
  EXPECT_EQ(run(host_->pin_static(base, 0)).code(), StatusCode::kInvalidArgument);
}

// Dynamic caching stages the entries a scan touches; once staged, the scan hits.
TEST_P(AgentTest, DynamicCacheHitsAfterStaging) {
  std::vector<uint8_t> model;
  const GlobalAddress base = fill(4ull << 20, test_seed(), &model);
  start_agent({"--no-adaptive", "--cache-bytes", "16MiB"});
  read_pages(base, model, 0, 64);
  ASSERT_TRUE(run(host_->flush()).ok());  // waits for the staging workers
  const auto before = stats();
  EXPECT_GE(before.staged_entries, 4u);  // and the next entry, prefetched on the ascending scan
  read_pages(base, model, 0, 64);
  const auto after = stats();
  EXPECT_EQ(after.dynamic_hits - before.dynamic_hits, 64u);
  EXPECT_EQ(after.node_reads, before.node_reads);
  std::printf("dynamic cache: %llu hits, %llu misses, %llu entries staged\n",
              static_cast<unsigned long long>(after.dynamic_hits),
              static_cast<unsigned long long>(after.dynamic_misses),
              static_cast<unsigned long long>(after.staged_entries));
  // Writes reach cached entries (copy-on-write) and the node.
  std::vector<uint8_t> page(kPage, 0x33);
  std::memcpy(model.data() + 17 * kPage, page.data(), kPage);
  ASSERT_TRUE(run(host_->write(base + 17 * kPage, page.data(), kPage)).ok());
  read_pages(base, model, 16, 2);
}

// Random reads over a range much larger than the cache make staging cost more than it saves:
// the model turns dynamic caching off; a sequential scan afterwards turns it back on.
TEST_P(AgentTest, AdaptiveSwitchFollowsTheWorkload) {
  std::vector<uint8_t> model;
  const uint64_t bytes = 48ull << 20;
  const GlobalAddress base = fill(bytes, test_seed(), &model);
  start_agent({"--cache-bytes", "4MiB", "--model-window", "32"});
  std::mt19937_64 rng(test_seed());
  std::vector<uint8_t> buf(kPage);
  for (int i = 0; i < 96; ++i) {
    const uint64_t p = rng() % (bytes / kPage);
    ASSERT_TRUE(run(host_->read(base + p * kPage, buf.data(), kPage)).ok());
    ASSERT_EQ(0, std::memcmp(buf.data(), model.data() + p * kPage, kPage));
  }
  const auto random = stats();
  EXPECT_EQ(random.dynamic_enabled, 0u);
  EXPECT_GE(random.dynamic_switches, 1u);
  read_pages(base, model, 0, 96);
  // Switched back on (while off, the model judges the scan from the access ring alone; once on,
  // hits depend on how fast staging runs, so the final state is not asserted).
  const auto seq = stats();
  EXPECT_GE(seq.dynamic_switches, 2u);
}

// Two host processes read the same remote range through one agent at once and both get the
// right bytes; the entries their reads staged then serve a third pass without the node.
TEST_P(AgentTest, TwoHostProcessesShareTheAgent) {
  std::vector<uint8_t> model;
  const uint64_t bytes = 4ull << 20;
  const GlobalAddress base = fill(bytes, test_seed(), &model);
  start_agent({"--no-adaptive"});
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : model) h = (h ^ b) * 0x100000001b3ull;
  const std::vector<std::string> args = {FARMEM_AGENT_HOST_BIN,
                                         "--agent",
                                         agent_->address(),
                                         "--address",
                                         std::to_string(base.pack()),
                                         "--bytes",
                                         std::to_string(bytes),
                                         "--tls",
                                         tls_};
  auto a = ChildProcess::start(args, {"UCX_TLS=" + tls_});
  auto b = ChildProcess::start(args, {"UCX_TLS=" + tls_});
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->wait_for_line("checksum", 60000), "checksum " + std::to_string(h)) << a->output();
  EXPECT_EQ(b->wait_for_line("checksum", 60000), "checksum " + std::to_string(h)) << b->output();
  ASSERT_TRUE(run(host_->flush()).ok());
  const auto before = stats();
  EXPECT_EQ(before.host_reads, 2 * bytes / kPage);
  auto c = ChildProcess::start(args, {"UCX_TLS=" + tls_});
  EXPECT_EQ(c->wait_for_line("checksum", 60000), "checksum " + std::to_string(h)) << c->output();
  const auto after = stats();
  EXPECT_EQ(after.dynamic_hits - before.dynamic_hits, bytes / kPage);
  EXPECT_EQ(after.node_reads, before.node_reads);
}

// Malformed requests get clear errors and the agent keeps serving.
TEST_P(AgentTest, RefusesBadRequests) {
  std::vector<uint8_t> model;
  const GlobalAddress base = fill(1ull << 20, test_seed(), &model);
  start_agent();
  client::ThreadClient& c = host_->thread_client();
  const uint16_t agent_node = agent_cluster_->nodes()[0].node_id;
  auto raw = [&](uint16_t op, std::vector<uint8_t> payload) {
    std::vector<uint8_t> reply(agent::wire::kMaxReadBytes);
    uint32_t got = 0;
    return run(c.rpc(agent_node, op, payload.data(), payload.size(), reply.data(),
                     static_cast<uint32_t>(reply.size()), &got))
        .code();
  };
  auto bytes = [](const auto& v) {
    std::vector<uint8_t> out(sizeof(v));
    std::memcpy(out.data(), &v, sizeof(v));
    return out;
  };
  using agent::wire::Op;
  EXPECT_EQ(raw(static_cast<uint16_t>(Op::kRead), {1, 2, 3}), StatusCode::kProtocolError);
  EXPECT_EQ(
      raw(static_cast<uint16_t>(Op::kRead), bytes(agent::wire::ReadRequest{base.pack(), 64, 2})),
      StatusCode::kProtocolError);
  EXPECT_EQ(
      raw(static_cast<uint16_t>(Op::kRead), bytes(agent::wire::ReadRequest{base.pack(), 0, 0})),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(raw(static_cast<uint16_t>(Op::kWrite),
                bytes(agent::wire::WriteRequest{base.pack(), 100, 0})),  // no data
            StatusCode::kInvalidArgument);
  EXPECT_EQ(raw(static_cast<uint16_t>(Op::kFlush), {0}), StatusCode::kProtocolError);
  EXPECT_EQ(raw(470, {}), StatusCode::kInvalidArgument);  // in the range, not an operation
  // Addresses the memory nodes refuse: an unknown node, past the region's end.
  std::vector<uint8_t> buf(4096);
  EXPECT_FALSE(run(host_->read(GlobalAddress(77, 4096), buf.data(), 4096)).ok());
  EXPECT_EQ(run(host_->read(GlobalAddress(0, 1ull << 40), buf.data(), 4096)).code(),
            StatusCode::kOutOfRange);
  read_pages(base, model, 0, 4);  // still serving
}

// A memory node killed under the agent: reads of it fail with the node's error (no hang), an
// acked write that could not be written back is reported by the next flush, and the agent stays
// up for its hosts.
TEST_P(AgentTest, DeadMemoryNodeFailsRequestsNotTheAgent) {
  std::vector<uint8_t> model;
  const GlobalAddress base = fill(1ull << 20, test_seed(), &model);
  start_agent({"--no-dynamic", "--op-timeout-ms", "1000"});
  read_pages(base, model, 0, 2);
  tc_ = nullptr;
  direct_.reset();
  node_->signal(SIGKILL);
  std::vector<uint8_t> buf(kPage);
  Status s = OkStatus();
  // On shared memory the agent reads the node's mapping directly until its session notices
  // the death (heartbeats, within op_timeout_ms): poll, with a hang guard of 100 tries.
  for (int i = 0; i < 100 && s.ok(); ++i) {
    s = run(host_->read(base, buf.data(), kPage));
    if (s.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.code() == StatusCode::kPeerFailed || s.code() == StatusCode::kTimedOut ||
              s.code() == StatusCode::kUnavailable)
      << s.to_string();
  Status w = run(host_->write(base, buf.data(), 4096));  // acked: the agent holds it
  Status f = run(host_->flush());
  EXPECT_TRUE(!w.ok() || !f.ok()) << "a write to a dead node was neither refused nor reported";
  auto st = run(host_->stats());  // the agent itself still answers
  EXPECT_TRUE(st.ok()) << st.status().to_string();
}

// kill -9 of the agent: the host's next request fails with a clear error (no hang, no data).
TEST_P(AgentTest, KilledAgentGivesAnError) {
  std::vector<uint8_t> model;
  const GlobalAddress base = fill(1ull << 20, test_seed(), &model);
  start_agent({}, 1000);
  read_pages(base, model, 0, 2);
  agent_->child().signal(SIGKILL);
  std::vector<uint8_t> buf(kPage);
  Status s = OkStatus();
  for (int i = 0; i < 3 && s.ok(); ++i) s = run(host_->read(base, buf.data(), kPage));
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.code() == StatusCode::kPeerFailed || s.code() == StatusCode::kTimedOut ||
              s.code() == StatusCode::kUnavailable)
      << s.to_string();
}

INSTANTIATE_TEST_SUITE_P(Transports, AgentTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
