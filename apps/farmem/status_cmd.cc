#include <fmt/format.h>

#include "commands.h"
#include "farmem/client/cluster.h"

namespace farmem::apps {

int run_status(const ClusterFlags& flags) {
  std::unique_ptr<LocalNode> local;
  auto config = resolve_cluster(flags, &local);
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
  }
  return rc;
}

}  // namespace farmem::apps
