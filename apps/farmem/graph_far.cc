#include "graph_far.h"

#include <fmt/format.h>

#include <filesystem>

#include "farmem/client/cluster.h"
#include "farmem/graph/far_memory.h"
#include "farmem/paged/manager.h"

namespace farmem::apps {

namespace {

class Session : public FarGraphSession {
 public:
  nlohmann::ordered_json traffic_json() const override {
    nlohmann::ordered_json t = nlohmann::ordered_json::object();
    for (const paged::PathTraffic& p : manager->stats().traffic) {
      t[p.path] = {{"bytes", p.bytes}, {"messages", p.messages}};
    }
    return t;
  }
  ~Session() override {
    manager.reset();  // before the cluster it uses
    cluster.reset();
  }

  std::unique_ptr<LocalNode> local;  // outlives the cluster
  std::unique_ptr<client::Cluster> cluster;
  std::unique_ptr<paged::Manager> manager;
};

}  // namespace

Result<std::unique_ptr<graph::GraphMemory>> open_far_graph(const GraphFlags& f,
                                                           uint64_t budget_bytes,
                                                           std::unique_ptr<FarGraphSession>* out) {
  if (f.agent != "none") {
    return Unavailable(
        fmt::format("--agent {}: the offload agent is not available in this build "
                    "(use --agent none: far memory direct)",
                    f.agent));
  }
  if (f.cache != "off") return InvalidArgument("--cache needs --agent ADDR");
  auto header = graph::read_fmg_header(f.graph);
  if (!header.ok()) return header.status();
  auto s = std::make_unique<Session>();
  ClusterFlags cf = f.cluster;
  // A local node (no --servers/--config) must hold the graph and the vertex arrays.
  cf.local_capacity_bytes = std::max<uint64_t>(
      1ull << 30, 2 * header->file_bytes + 64 * header->vertices + (256ull << 20));
  // The local node sleeps when idle: shared-memory reads need none of its CPU, and its
  // yield-spinning would take a core from the algorithm's threads on a small machine.
  if (cf.local_idle_spin_us < 0) cf.local_idle_spin_us = 0;
  // It may preload the graph from the graph's own directory (the file never passes through
  // this process); nodes given by --servers/--config preload from their configured preload_dir.
  cf.local_preload_dir = std::filesystem::absolute(f.graph).parent_path().string();
  auto config = resolve_cluster(cf, &s->local);
  if (!config.ok()) return config.status();
  auto cluster = client::Cluster::connect(*config);
  if (!cluster.ok()) return cluster.status();
  s->cluster = std::move(*cluster);
  paged::ManagerOptions mo;
  mo.local_bytes = budget_bytes;
  if (budget_bytes == 0) mo.local_percent = 100;
  auto manager = paged::Manager::create(*s->cluster, mo);
  if (!manager.ok()) return manager.status();
  s->manager = std::move(*manager);
  graph::FarOptions fo;
  fo.page_bytes = f.page_bytes;
  fo.graph_advice =
      f.far_advice == "sequential" ? paged::Advice::kSequential : paged::Advice::kRandom;
  fo.random_array_advice = f.far_pin == "on" ? paged::Advice::kStatic : paged::Advice::kRandom;
  fo.preload_name = std::filesystem::path(f.graph).filename().string();
  graph::FarLoad load;
  auto memory = graph::open_far(*s->manager, f.graph, fo, &load);
  if (!memory.ok()) return memory.status();
  if (load.how == "copied") {
    fmt::print(stderr, "graph: far: copied {} into far memory through this process ({})\n", f.graph,
               load.why_copied);
  } else {
    fmt::print(stderr, "graph: far: the memory nodes preloaded {}\n", fo.preload_name);
  }
  fmt::print(stderr, "graph: far: local budget {} bytes, pages of {} bytes, vertex arrays {}\n",
             s->manager->budget_bytes(), f.page_bytes,
             f.far_pin == "on" ? "pinned (static advice)" : "paged");
  *out = std::move(s);
  return memory;
}

}  // namespace farmem::apps
