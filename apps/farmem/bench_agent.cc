#include "bench_agent.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "bench_harness.h"
#include "farmem/agent/client.h"
#include "farmem/client/cluster.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/when_all.h"
#include "local_node.h"
#include "report.h"

using farmem::runtime::sync_wait;

namespace farmem::apps {
namespace {

using Clock = std::chrono::steady_clock;

int fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "farmem: %s: %s\n", what.c_str(), s.to_string().c_str());
  return 1;
}

Result<std::unique_ptr<client::Cluster>> connect_agent(const std::string& address,
                                                       const std::string& tls) {
  auto cfg = client::ClusterConfig::from_server_list(address);
  if (!cfg.ok()) return cfg.status();
  if (!tls.empty()) cfg->options.tls = tls;
  FARMEM_TRY(cfg->load_cluster_key());
  return client::Cluster::connect(*cfg);
}

nlohmann::ordered_json stats_json(const agent::wire::StatsResponse& s) {
  nlohmann::ordered_json j;
  j["host_messages_in"] = s.host_messages_in;
  j["host_bytes_in"] = s.host_bytes_in;
  j["host_messages_out"] = s.host_messages_out;
  j["host_bytes_out"] = s.host_bytes_out;
  j["node_reads"] = s.node_reads;
  j["node_read_bytes"] = s.node_read_bytes;
  j["node_writes"] = s.node_writes;
  j["node_write_bytes"] = s.node_write_bytes;
  j["node_batches"] = s.node_batches;
  j["rounds"] = s.rounds;
  j["host_reads"] = s.host_reads;
  j["aggregated_reads"] = s.aggregated_reads;
  j["static_hits"] = s.static_hits;
  j["dynamic_hits"] = s.dynamic_hits;
  j["dynamic_misses"] = s.dynamic_misses;
  j["staged_entries"] = s.staged_entries;
  j["staged_bytes"] = s.staged_bytes;
  j["evictions"] = s.evictions;
  j["cache_bytes"] = s.cache_bytes;
  j["static_bytes"] = s.static_bytes;
  j["dynamic_enabled"] = s.dynamic_enabled;
  j["dynamic_switches"] = s.dynamic_switches;
  j["writes_pending"] = s.writes_pending;
  j["host_bw_bytes_per_s"] = s.host_bw_bytes_per_s;
  j["node_bw_bytes_per_s"] = s.node_bw_bytes_per_s;
  return j;
}

std::vector<GlobalAddress> page_sequence(const BenchAgentFlags& f, GlobalAddress base) {
  std::mt19937_64 rng(f.bench.seed);
  const uint64_t pages = f.range_bytes / f.page_bytes;
  std::vector<GlobalAddress> out;
  for (uint64_t i = 0; i < f.ops; ++i) {
    const uint64_t p = f.pattern == "seq" ? i % pages : rng() % pages;
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

void print_phase(const Phase& p, const BenchAgentFlags& f, double base_seconds) {
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

}  // namespace

CLI::App* add_bench_agent(CLI::App* bench, BenchAgentFlags* f) {
  CLI::App* sub = bench->add_subcommand("agent", "page reads direct vs through farmem-agent");
  add_bench_flags(sub, &f->bench, "unused");
  sub->add_option("--agent", f->agent, "farmem-agent's host:port")->required();
  sub->add_option("--range", f->range_bytes, "remote bytes read")->transform(bytes_unit());
  sub->add_option("--page", f->page_bytes, "bytes per read (<= 64KiB)")->transform(bytes_unit());
  sub->add_option("--ops", f->ops, "reads per phase")->check(CLI::Range(1, 1 << 24));
  sub->add_option("--depth", f->depth, "reads in flight")->check(CLI::Range(1, 64));
  sub->add_option("--pattern", f->pattern, "random | seq")->check(CLI::IsMember({"random", "seq"}));
  sub->add_flag("--pin", f->pin, "add a phase with the range pinned in the agent");
  return sub;
}

int run_bench_agent(const BenchAgentFlags& f) {
  if (f.page_bytes == 0 || f.page_bytes > agent::wire::kMaxReadBytes ||
      f.range_bytes < f.page_bytes) {
    return fail("bench agent", InvalidArgument("--page must be 1..64KiB and <= --range"));
  }
  std::unique_ptr<LocalNode> local;
  auto config = resolve_cluster(f.bench.cluster, &local);
  if (!config.ok()) return fail("cluster", config.status());
  auto nodes = client::Cluster::connect(*config);
  if (!nodes.ok()) return fail("connect", nodes.status());
  auto tc = (*nodes)->thread_client();
  if (!tc.ok()) return fail("connect", tc.status());
  auto agent_cluster = connect_agent(f.agent, config->options.tls);
  if (!agent_cluster.ok()) return fail("agent", agent_cluster.status());
  auto ac = agent::AgentClient::create(**agent_cluster);
  if (!ac.ok()) return fail("agent", ac.status());

  const uint16_t node = (*nodes)->nodes()[0].node_id;
  auto mem = (*tc)->run((*tc)->allocate_on(node, f.range_bytes + (1ull << 20), 4096));
  if (!mem.ok()) return fail("allocate", mem.status());
  const GlobalAddress base(node, (mem->offset() + (1ull << 20) - 1) & ~((1ull << 20) - 1));
  std::vector<uint8_t> chunk(1 << 16);
  std::mt19937_64 rng(f.bench.seed);
  for (uint64_t off = 0; off < f.range_bytes; off += chunk.size()) {
    for (auto& b : chunk) b = static_cast<uint8_t>(rng());
    const uint64_t n = std::min<uint64_t>(chunk.size(), f.range_bytes - off);
    if (Status s = sync_wait((*tc)->write(base + off, chunk.data(), n)); !s.ok())
      return fail("fill", s);
  }
  // Whatever the agent cached of this memory before (an earlier run) is stale now.
  if (Status s = (*ac)->thread_client().run((*ac)->invalidate(base, f.range_bytes)); !s.ok()) {
    return fail("invalidate", s);
  }
  const auto page = static_cast<uint32_t>(f.page_bytes);
  std::vector<uint8_t> bufs(static_cast<size_t>(f.depth) * page);
  const std::vector<GlobalAddress> addrs = page_sequence(f, base);
  std::vector<Phase> phases;

  {  // direct
    Phase p{"direct"};
    const auto t0 = Clock::now();
    Status s = (*tc)->run(direct_reads(*tc, addrs, page, f.depth, &bufs));
    if (!s.ok()) return fail("direct reads", s);
    p.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    p.host_node_bytes = f.ops * f.page_bytes;
    p.host_node_messages = f.ops;
    phases.push_back(p);
  }
  auto run_agent_phase = [&](const std::string& name) -> Status {
    auto before = (*ac)->thread_client().run((*ac)->stats());
    if (!before.ok()) return before.status();
    const agent::AgentTraffic t_before = (*ac)->traffic();
    Phase p{name};
    const auto t0 = Clock::now();
    FARMEM_TRY((*ac)->thread_client().run(agent_reads(ac->get(), addrs, page, f.depth, &bufs)));
    p.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    auto after = (*ac)->thread_client().run((*ac)->stats());
    if (!after.ok()) return after.status();
    const agent::AgentTraffic t = (*ac)->traffic();
    p.host_agent_bytes = t.bytes_in + t.bytes_out - t_before.bytes_in - t_before.bytes_out;
    p.host_agent_messages = t.messages - t_before.messages - 1;  // less the stats request
    p.agent_node_bytes = after->node_read_bytes - before->node_read_bytes;
    p.agent_node_messages = after->node_reads - before->node_reads;
    p.agent_node_batches = after->node_batches - before->node_batches;
    p.cache_hits =
        (after->static_hits + after->dynamic_hits) - (before->static_hits + before->dynamic_hits);
    phases.push_back(p);
    return OkStatus();
  };
  if (Status s = run_agent_phase("agent"); !s.ok()) return fail("agent reads", s);
  if (f.pin) {
    Status s = (*ac)->thread_client().run((*ac)->pin_static(base, f.range_bytes));
    if (!s.ok()) return fail("pin", s);
    if (s = run_agent_phase("agent+static"); !s.ok()) return fail("agent reads", s);
  }
  std::printf("%llu reads of %llu bytes (%s over %llu bytes, %u in flight)\n",
              static_cast<unsigned long long>(f.ops), static_cast<unsigned long long>(f.page_bytes),
              f.pattern.c_str(), static_cast<unsigned long long>(f.range_bytes), f.depth);
  for (const Phase& p : phases) print_phase(p, f, phases[0].seconds);
  if (!f.bench.out.empty()) {
    for (const Phase& p : phases) {
      nlohmann::ordered_json j;
      j["bench"] = "agent";
      j["phase"] = p.name;
      j["pattern"] = f.pattern;
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
      if (Status s = append_report(f.bench.out, j); !s.ok()) return fail("--out", s);
    }
  }
  if (Status s = (*ac)->thread_client().run((*ac)->invalidate(base, f.range_bytes)); !s.ok()) {
    return fail("invalidate", s);
  }
  if (Status s = (*tc)->run((*tc)->free_on(GlobalAddress(node, mem->offset()))); !s.ok()) {
    return fail("free", s);
  }
  ac->reset();
  return 0;
}

CLI::App* add_agent_stats(CLI::App* app, AgentStatsFlags* f) {
  CLI::App* sub = app->add_subcommand("agent-stats", "show a farmem-agent's counters");
  sub->add_option("--agent", f->agent, "farmem-agent's host:port")->required();
  sub->add_option("--tls", f->tls, "UCX transports");
  sub->add_flag("--json", f->json, "print one JSON object");
  return sub;
}

int run_agent_stats(const AgentStatsFlags& f) {
  auto cluster = connect_agent(f.agent, f.tls);
  if (!cluster.ok()) return fail("agent", cluster.status());
  auto ac = agent::AgentClient::create(**cluster);
  if (!ac.ok()) return fail("agent", ac.status());
  auto s = (*ac)->thread_client().run((*ac)->stats());
  if (!s.ok()) return fail("agent stats", s.status());
  const nlohmann::ordered_json j = stats_json(*s);
  if (f.json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (const auto& [k, v] : j.items()) std::printf("%-22s %s\n", k.c_str(), v.dump().c_str());
  }
  ac->reset();
  return 0;
}

}  // namespace farmem::apps
