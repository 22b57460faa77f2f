#include "kv_session.h"

#include <fmt/format.h>

#include "farmem/bench/harness/cluster.h"
#include "farmem/runtime/scheduler.h"

namespace farmem::apps {

int kv_exit_code(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return kKvExitOk;
    case StatusCode::kNotFound:
      return kKvExitNotFound;
    case StatusCode::kAlreadyExists:
      return kKvExitExists;
    case StatusCode::kBusy:
      return kKvExitBusy;
    case StatusCode::kInvalidArgument:
      return kKvExitUsage;
    default:
      return kKvExitError;
  }
}

int kv_fail(const KvOptions& f, const Status& s) {
  fmt::print(stderr, "farmem kv {}: {}\n", f.command, s.to_string());
  return kv_exit_code(s);
}

Status kv_connect(const KvOptions& f, KvSession* s) {
  if (f.cluster.servers.empty() && f.cluster.config.empty()) {
    return InvalidArgument("give the cluster with --servers host:port,... or --config FILE");
  }
  std::unique_ptr<bench::LocalNode> none;
  FARMEM_ASSIGN_OR_RETURN(const client::ClusterConfig config,
                          bench::resolve_cluster(f.cluster, &none));
  FARMEM_ASSIGN_OR_RETURN(s->cluster, client::Cluster::connect(config));
  FARMEM_ASSIGN_OR_RETURN(s->client, s->cluster->thread_client());
  kv::StoreOptions o;
  o.location_cache_log2 = -1;  // one operation: nothing to cache
  FARMEM_ASSIGN_OR_RETURN(s->store, kv::Store::open(s->client, o));
  return OkStatus();
}

Result<std::unique_ptr<kv::Pool>> kv_open_pool(const KvOptions& f, KvSession* s, uint32_t flags) {
  auto p = runtime::sync_wait(s->store->open_pool(f.pool, flags));
  if (!p.ok() && p.status().code() == StatusCode::kNotFound) {
    return NotFound(
        fmt::format("no pool '{}' (it would be on node {})", f.pool, s->store->node_of(f.pool)));
  }
  return p;
}

}  // namespace farmem::apps
