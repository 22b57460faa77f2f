// The commands of `farmem kv` on the store (kv_cmd.h): pools, create-pool, delete-pool, stats.
#include <fmt/format.h>

#include "kv_session.h"

namespace farmem::apps {
namespace {

int cmd_pools(const KvOptions& f, KvSession* s) {
  auto pools = runtime::sync_wait(s->store->list_pools());
  if (!pools.ok()) return kv_fail(f, pools.status());
  fmt::print("{:<32} {:>5} {:>14} {:>14} {:>12} {:>6}\n", "pool", "node", "capacity", "used",
             "keys", "opens");
  for (const auto& p : *pools) {
    fmt::print("{:<32} {:>5} {:>14} {:>14} {:>12} {:>6}\n", p.name, p.node, p.capacity_bytes,
               p.used_bytes, p.count, p.open_handles);
  }
  return kKvExitOk;
}

int cmd_create(const KvOptions& f, KvSession* s) {
  auto p = runtime::sync_wait(s->store->create_pool(f.pool, f.capacity_bytes, f.expected_count,
                                                    f.create_only ? kv::wire::kPoolCreateOnly : 0));
  if (!p.ok()) return kv_fail(f, p.status());
  fmt::print("{} pool '{}' on node {} (shard {}), capacity {} bytes\n",
             (*p)->created() ? "created" : "opened existing", f.pool, (*p)->node(), (*p)->shard(),
             (*p)->capacity_bytes());
  return kv_exit_code(runtime::sync_wait(s->store->close_pool(**p)));
}

int cmd_delete(const KvOptions& f, KvSession* s) {
  Status st = runtime::sync_wait(s->store->delete_pool(f.pool));
  if (st.code() == StatusCode::kNotFound) st = NotFound(fmt::format("no pool '{}'", f.pool));
  if (!st.ok()) return kv_fail(f, st);
  fmt::print("deleted pool '{}'\n", f.pool);
  return kKvExitOk;
}

int cmd_stats(const KvOptions& f, KvSession* s) {
  if (!f.pool.empty()) {
    auto p = kv_open_pool(f, s, kv::wire::kPoolReadOnly);
    if (!p.ok()) return kv_fail(f, p.status());
    auto info = runtime::sync_wait((*p)->info());
    if (!info.ok()) return kv_fail(f, info.status());
    fmt::print(
        "pool '{}': node {} shard {} keys {} used {} of {} bytes, index slots {}, open handles "
        "{}{}{}\n",
        f.pool, (*p)->node(), (*p)->shard(), info->count, info->used_bytes, info->capacity_bytes,
        info->index_slots, info->open_handles,
        (info->flags & kv::wire::kPoolHasIndex) ? ", secondary index" : "",
        (info->flags & kv::wire::kPoolHasAdo) ? ", ADO plugins" : "");
    Status st = runtime::sync_wait(s->store->close_pool(**p));
    if (!st.ok()) return kv_fail(f, st);
  }
  fmt::print("{:>5} {:>5} {:>12} {:>12} {:>10} {:>9} {:>8} {:>8} {:>7} {:>6} {:>10}\n", "node",
             "shard", "gets", "puts", "erases", "locates", "ado", "failures", "clients", "pools",
             "ops/msg");
  for (const auto& n : s->cluster->nodes()) {
    auto shards = runtime::sync_wait(s->store->shard_stats(n.node_id));
    if (!shards.ok()) return kv_fail(f, shards.status());
    for (size_t i = 0; i < shards->size(); ++i) {
      const auto& st = (*shards)[i];
      fmt::print("{:>5} {:>5} {:>12} {:>12} {:>10} {:>9} {:>8} {:>8} {:>7} {:>6} {:>10.2f}\n",
                 n.node_id, i, st.gets, st.puts, st.erases, st.locates, st.ado_invocations,
                 st.failures, st.clients, st.pools,
                 st.ops_messages ? double(st.coalesced_ops) / st.ops_messages : 0.0);
    }
  }
  return kKvExitOk;
}

}  // namespace

int kv_pools(const KvOptions& o) {
  return with_session(o, [&](KvSession* s) { return cmd_pools(o, s); });
}
int kv_create_pool(const KvOptions& o) {
  return with_session(o, [&](KvSession* s) { return cmd_create(o, s); });
}
int kv_delete_pool(const KvOptions& o) {
  return with_session(o, [&](KvSession* s) { return cmd_delete(o, s); });
}
int kv_stats(const KvOptions& o) {
  return with_session(o, [&](KvSession* s) { return cmd_stats(o, s); });
}

}  // namespace farmem::apps
