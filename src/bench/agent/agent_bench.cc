// `farmem bench agent` (farmem/bench/agent.h): page reads direct against the same reads through
// farmem-agent, with each path's traffic.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "agent_connect.h"
#include "farmem/agent/client.h"
#include "farmem/bench/agent.h"
#include "farmem/bench/harness/cluster.h"
#include "farmem/bench/harness/report.h"
#include "farmem/client/cluster.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/when_all.h"

namespace farmem::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<GlobalAddress> page_sequence(const AgentBenchOptions& f, GlobalAddress base) {
  std::mt19937_64 rng(f.bench.seed);
  const uint64_t pages = f.range_bytes / f.page_bytes;
  std::vector<GlobalAddress> out;
  for (uint64_t i = 0; i < f.ops; ++i) {
    const uint64_t p = f.pattern == AgentReadPattern::kSeq ? i % pages : rng() % pages;
    out.push_back(base + p * f.page_bytes);
  }
  return out;
}

// Direct: one Batch of `depth` reads at a time.
runtime::Task<Status> direct_reads(client::ThreadClient* tc, std::vector<GlobalAddress> addrs,
                                   uint32_t page, uint32_t depth, std::vector<uint8_t>* bufs) {
  for (size_t i = 0; i < addrs.size(); i += depth) {
    client::Batch b(*tc);
    for (size_t k = i; k < std::min(addrs.size(), i + depth); ++k) {
      FARMEM_CO_TRY(b.read(addrs[k], bufs->data() + (k - i) * page, page));
    }
    FARMEM_CO_TRY(co_await b.wait());
  }
  co_return OkStatus();
}

// Through the agent: `depth` requests in flight at a time.
runtime::Task<Status> agent_reads(agent::AgentClient* c, std::vector<GlobalAddress> addrs,
                                  uint32_t page, uint32_t depth, std::vector<uint8_t>* bufs) {
  for (size_t i = 0; i < addrs.size(); i += depth) {
    std::vector<GlobalAddress> a;
    std::vector<void*> d;
    for (size_t k = i; k < std::min(addrs.size(), i + depth); ++k) {
      a.push_back(addrs[k]);
      d.push_back(bufs->data() + (k - i) * page);
    }
    for (const Status& s : co_await c->read_many(std::move(a), std::move(d), page)) {
      FARMEM_CO_TRY(s);
    }
  }
  co_return OkStatus();
}

struct Phase {
  std::string name;
  double seconds = 0;
  uint64_t host_node_bytes = 0, host_node_messages = 0;    // host -> memory node directly
  uint64_t host_agent_bytes = 0, host_agent_messages = 0;  // host <-> agent
  uint64_t agent_node_bytes = 0, agent_node_messages = 0;  // agent -> memory node
  uint64_t agent_node_batches = 0, cache_hits = 0;
};

void print_phase(const Phase& p, const AgentBenchOptions& f, double base_seconds) {
  const double mb = static_cast<double>(f.ops * f.page_bytes) / 1e6;
  std::printf(
      "%-22s %8.3f s %9.1f MB/s  x%-6.2f host->memnode %llu B/%llu msg, host->agent %llu "
      "B/%llu msg, agent->memnode %llu B/%llu ops/%llu batches, hits %llu\n",
      p.name.c_str(), p.seconds, mb / p.seconds, p.seconds / base_seconds,
      static_cast<unsigned long long>(p.host_node_bytes),
      static_cast<unsigned long long>(p.host_node_messages),
      static_cast<unsigned long long>(p.host_agent_bytes),
      static_cast<unsigned long long>(p.host_agent_messages),
      static_cast<unsigned long long>(p.agent_node_bytes),
      static_cast<unsigned long long>(p.agent_node_messages),
      static_cast<unsigned long long>(p.agent_node_batches),
      static_cast<unsigned long long>(p.cache_hits));
}

// The memory nodes, this thread's client of them, the agent and its client (destroyed in the
// reverse order).
struct AgentRun {
  std::unique_ptr<LocalNode> local;
  std::unique_ptr<client::Cluster> nodes;
  client::ThreadClient* tc = nullptr;
  std::unique_ptr<client::Cluster> agent_cluster;
  std::unique_ptr<agent::AgentClient> ac;
  GlobalAddress mem;   // the allocation
  GlobalAddress base;  // the range read, 1 MiB aligned in it
};

int connect(const AgentBenchOptions& f, AgentRun* r) {
  auto config = resolve_cluster(f.bench.cluster, &r->local);
  if (!config.ok()) return fail("cluster", config.status());
  auto nodes = client::Cluster::connect(*config);
  if (!nodes.ok()) return fail("connect", nodes.status());
  r->nodes = std::move(*nodes);
  auto tc = r->nodes->thread_client();
  if (!tc.ok()) return fail("connect", tc.status());
  r->tc = *tc;
  auto agent_cluster = connect_agent(f.agent, config->options.tls);
  if (!agent_cluster.ok()) return fail("agent", agent_cluster.status());
  r->agent_cluster = std::move(*agent_cluster);
  auto ac = agent::AgentClient::create(*r->agent_cluster);
  if (!ac.ok()) return fail("agent", ac.status());
  r->ac = std::move(*ac);
  return 0;
}

// Allocates and fills the range on the first node; drops what the agent cached of it.
int fill_range(const AgentBenchOptions& f, AgentRun* r) {
  const uint16_t node = r->nodes->nodes()[0].node_id;
  auto mem = r->tc->run(r->tc->allocate_on(node, f.range_bytes + (1ull << 20), 4096));
  if (!mem.ok()) return fail("allocate", mem.status());
  r->mem = GlobalAddress(node, mem->offset());
  r->base = GlobalAddress(node, (mem->offset() + (1ull << 20) - 1) & ~((1ull << 20) - 1));
  std::vector<uint8_t> chunk(1 << 16);
  std::mt19937_64 rng(f.bench.seed);
  for (uint64_t off = 0; off < f.range_bytes; off += chunk.size()) {
    for (auto& b : chunk) b = static_cast<uint8_t>(rng());
    const uint64_t n = std::min<uint64_t>(chunk.size(), f.range_bytes - off);
    Status s = runtime::sync_wait(r->tc->write(r->base + off, chunk.data(), n));
    if (!s.ok()) return fail("fill", s);
  }
  // Whatever the agent cached of this memory before (an earlier run) is stale now.
  Status s = r->ac->thread_client().run(r->ac->invalidate(r->base, f.range_bytes));
  return s.ok() ? 0 : fail("invalidate", s);
}

// One phase through the agent: its time and the traffic of each path from the agent's counters.
Status agent_phase(const AgentBenchOptions& f, AgentRun* r, const std::string& name,
                   const std::vector<GlobalAddress>& addrs, std::vector<uint8_t>* bufs,
                   std::vector<Phase>* phases) {
  agent::AgentClient* ac = r->ac.get();
  const auto page = static_cast<uint32_t>(f.page_bytes);
  FARMEM_ASSIGN_OR_RETURN(const agent::wire::StatsResponse before,
                          ac->thread_client().run(ac->stats()));
  const agent::AgentTraffic t_before = ac->traffic();
  Phase p{name};
  const auto t0 = Clock::now();
  FARMEM_TRY(ac->thread_client().run(agent_reads(ac, addrs, page, f.depth, bufs)));
  p.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  FARMEM_ASSIGN_OR_RETURN(const agent::wire::StatsResponse after,
                          ac->thread_client().run(ac->stats()));
  const agent::AgentTraffic t = ac->traffic();
  p.host_agent_bytes = t.bytes_in + t.bytes_out - t_before.bytes_in - t_before.bytes_out;
  p.host_agent_messages = t.messages - t_before.messages - 1;  // less the stats request
  p.agent_node_bytes = after.node_read_bytes - before.node_read_bytes;
  p.agent_node_messages = after.node_reads - before.node_reads;
  p.agent_node_batches = after.node_batches - before.node_batches;
  p.cache_hits =
      (after.static_hits + after.dynamic_hits) - (before.static_hits + before.dynamic_hits);
  phases->push_back(p);
  return OkStatus();
}

// The phases: direct, through the agent, and (--pin) through the agent's static cache.
int run_phases(const AgentBenchOptions& f, AgentRun* r, std::vector<Phase>* phases) {
  const auto page = static_cast<uint32_t>(f.page_bytes);
  std::vector<uint8_t> bufs(static_cast<size_t>(f.depth) * page);
  const std::vector<GlobalAddress> addrs = page_sequence(f, r->base);
  Phase p{"direct"};
  const auto t0 = Clock::now();
  Status s = r->tc->run(direct_reads(r->tc, addrs, page, f.depth, &bufs));
  if (!s.ok()) return fail("direct reads", s);
  p.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  p.host_node_bytes = f.ops * f.page_bytes;
  p.host_node_messages = f.ops;
  phases->push_back(p);
  s = agent_phase(f, r, "agent", addrs, &bufs, phases);
  if (!s.ok()) return fail("agent reads", s);
  if (!f.pin) return 0;
  s = r->ac->thread_client().run(r->ac->pin_static(r->base, f.range_bytes));
  if (!s.ok()) return fail("pin", s);
  s = agent_phase(f, r, "agent+static", addrs, &bufs, phases);
  return s.ok() ? 0 : fail("agent reads", s);
}

// A record per phase, appended to --out.
Status write_records(const AgentBenchOptions& f, const std::vector<Phase>& phases) {
  for (const Phase& p : phases) {
    nlohmann::ordered_json j;
    j["bench"] = "agent";
    j["phase"] = p.name;
    j["pattern"] = name_of(kAgentReadPatternNames, f.pattern);
    j["ops"] = f.ops;
    j["page_bytes"] = f.page_bytes;
    j["depth"] = f.depth;
    j["seconds"] = p.seconds;
    j["ratio_to_direct"] = p.seconds / phases[0].seconds;
    j["traffic"] = {
        {"host->memnode", {{"bytes", p.host_node_bytes}, {"messages", p.host_node_messages}}},
        {"host->agent", {{"bytes", p.host_agent_bytes}, {"messages", p.host_agent_messages}}},
        {"agent->memnode",
         {{"bytes", p.agent_node_bytes},
          {"messages", p.agent_node_messages},
          {"batches", p.agent_node_batches}}}};
    j["cache_hits"] = p.cache_hits;
    FARMEM_TRY(append_report(f.bench.out, j));
  }
  return OkStatus();
}

}  // namespace

int run_agent_bench(const AgentBenchOptions& f) {
  if (f.page_bytes == 0 || f.page_bytes > agent::wire::kMaxReadBytes ||
      f.range_bytes < f.page_bytes) {
    return fail("bench agent", InvalidArgument("--page must be 1..64KiB and <= --range"));
  }
  AgentRun r;
  if (int rc = connect(f, &r); rc != 0) return rc;
  if (int rc = fill_range(f, &r); rc != 0) return rc;
  std::vector<Phase> phases;
  if (int rc = run_phases(f, &r, &phases); rc != 0) return rc;
  std::printf("%llu reads of %llu bytes (%s over %llu bytes, %u in flight)\n",
              static_cast<unsigned long long>(f.ops), static_cast<unsigned long long>(f.page_bytes),
              std::string(name_of(kAgentReadPatternNames, f.pattern)).c_str(),
              static_cast<unsigned long long>(f.range_bytes), f.depth);
  for (const Phase& p : phases) print_phase(p, f, phases[0].seconds);
  if (!f.bench.out.empty()) {
    if (Status s = write_records(f, phases); !s.ok()) return fail("--out", s);
  }
  if (Status s = r.ac->thread_client().run(r.ac->invalidate(r.base, f.range_bytes)); !s.ok()) {
    return fail("invalidate", s);
  }
  if (Status s = r.tc->run(r.tc->free_on(r.mem)); !s.ok()) return fail("free", s);
  r.ac.reset();
  return 0;
}

}  // namespace farmem::bench
