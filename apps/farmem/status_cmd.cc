// farmem status [--servers h:p,...|--config FILE]: every memory node's usage, a line each (the
// nodes' stats through the client library), and a second line for a durable node (its journal
// and last recovery). Exit 1 when a node is unreachable or fails.
#include <fmt/format.h>

#include "command.h"
#include "farmem/bench/harness/cluster.h"
#include "farmem/client/cluster.h"
#include "flags.h"

namespace farmem::apps {
namespace {

void add_flags(CLI::App* app, bench::ClusterOptions* o) { add_cluster_flags(app, o); }

int run_status(const bench::ClusterOptions& options) {
  std::unique_ptr<bench::LocalNode> local;
  auto config = bench::resolve_cluster(options, &local);
  if (!config.ok()) {
    fmt::print(stderr, "farmem status: {}\n", config.status().to_string());
    return 2;
  }
  fmt::print("{:<22} {:>5} {:>14} {:>14} {:>6} {:>7} {:>12} {:>6} {:>8} {:>6} {:>7} {:>8} {:>10}\n",
             "address", "node", "capacity", "used", "used%", "allocs", "rpcs", "conns", "sessions",
             "roots", "objects", "refused", "uptime_s");
  int rc = 0;
  // Each node is reached on its own, so one dead node does not hide the others.
  for (const HostPort& hp : config->memnodes) {
    client::ClusterConfig one = *config;
    one.memnodes = {hp};
    one.options.connect_timeout_ms = std::min<uint32_t>(one.options.connect_timeout_ms, 3000);
    std::string where = fmt::format("{}:{}", hp.host, hp.port);
    auto cluster = client::Cluster::connect(one);
    if (!cluster.ok()) {
      fmt::print("{:<22} unreachable: {}\n", where, cluster.status().to_string());
      rc = 1;
      continue;
    }
    auto tc = (*cluster)->thread_client();
    uint16_t id = (*cluster)->nodes().front().node_id;
    auto st = (*tc)->run((*tc)->stats(id));
    if (!st.ok()) {
      fmt::print("{:<22} {:>5} error: {}\n", where, id, st.status().to_string());
      rc = 1;
      continue;
    }
    double pct = st->capacity_bytes ? 100.0 * st->used_bytes / st->capacity_bytes : 0.0;
    // `conns` counts this status probe's own session; `sessions` every session since start.
    fmt::print(
        "{:<22} {:>5} {:>14} {:>14} {:>6.2f} {:>7} {:>12} {:>6} {:>8} {:>6} {:>7} {:>8} "
        "{:>10.1f}\n",
        where, st->node_id, st->capacity_bytes, st->used_bytes, pct, st->allocations,
        st->rpcs_served, st->connections, st->sessions_total, st->roots, st->objects, st->refused,
        st->uptime_ms / 1000.0);
    if (st->durability != "volatile") {
      fmt::print(
          "{:<22} durable ({}): log {} bytes, {} syncs; recovered {} records in {:.1f} ms, "
          "{} cut from a torn tail\n",
          "", st->durability, st->log_bytes, st->syncs, st->recovery_records,
          st->recovery_us / 1000.0, st->recovery_dropped_records);
    }
  }
  return rc;
}

}  // namespace

Command status_command() {
  return make_command<bench::ClusterOptions>("", "status", "show every memory node's usage",
                                             add_flags, run_status);
}

}  // namespace farmem::apps
