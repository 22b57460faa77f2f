// farmem kv: the key-value store from a terminal or a script (kv/store.h, kv/pool.h).
//
//   farmem kv pools                                 every pool of every node
//   farmem kv create-pool NAME [--capacity 64MiB] [--expected-count N] [--create-only]
//   farmem kv delete-pool NAME
//   farmem kv put POOL KEY [VALUE | --value-file F] [--create-only | --dont-overwrite]
//   farmem kv get POOL KEY [--raw]
//   farmem kv erase POOL KEY
//   farmem kv find POOL EXPRESSION [--start N] [--limit N]   (exact:K prefix:P regex:R next:)
//   farmem kv count POOL
//   farmem kv stats [POOL]                          the pool's figures, the nodes' shard counters
//   farmem kv invoke POOL KEY REQUEST [--put-value V] [--ado-flags N] [--value-size N]
//   farmem kv configure POOL COMMAND              AddIndex::VolatileTree, RemoveIndex,
//                                                 AdoPlugins::a.so[,b.so], AdoParam::k=v,
//                                                 AdoSignals::post-put[,...] (kv.md)
//
// All take --servers h:p,... or --config FILE (a pool lives on a node of a real cluster, so no
// local node is started). Exit codes (commands.h): 0 ok, 1 error, 2 usage, 3 no such pool/key/
// match, 4 exists (create-only), 5 busy (locked key, pool open elsewhere).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "commands.h"
#include "farmem/client/cluster.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"

using farmem::runtime::sync_wait;

namespace farmem::apps {
namespace {

namespace w = kv::wire;

struct KvCommand {
  const char* name;
  const char* help;
};
constexpr KvCommand kCommands[] = {
    {"pools", "list every pool of every node"},
    {"create-pool", "create a pool (or open an existing one unless --create-only)"},
    {"delete-pool", "delete a pool and everything in it"},
    {"put", "store a value under a key"},
    {"get", "print a key's value"},
    {"erase", "remove a key"},
    {"find", "keys matching exact:K, prefix:P, regex:R or next: (needs a secondary index)"},
    {"count", "number of keys in a pool"},
    {"stats", "a pool's figures and the nodes' per-shard counters"},
    {"invoke", "call the pool's Active Data Object on a key"},
    {"configure",
     "configure a pool: AddIndex::VolatileTree, RemoveIndex, AdoPlugins::a.so,..., "
     "AdoParam::k=v, AdoSignals::post-put,..."},
};

int exit_code(const Status& s) {
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

int fail(const KvFlags& f, const Status& s) {
  fmt::print(stderr, "farmem kv {}: {}\n", f.command, s.to_string());
  return exit_code(s);
}

// A connected thread with a Store.
struct Session {
  std::unique_ptr<client::Cluster> cluster;
  client::ThreadClient* client = nullptr;
  std::unique_ptr<kv::Store> store;
};

Status connect(const KvFlags& f, Session* s) {
  if (f.cluster.servers.empty() && f.cluster.config.empty()) {
    return InvalidArgument("give the cluster with --servers host:port,... or --config FILE");
  }
  std::unique_ptr<LocalNode> none;
  auto config = resolve_cluster(f.cluster, &none);
  if (!config.ok()) return config.status();
  auto cluster = client::Cluster::connect(*config);
  if (!cluster.ok()) return cluster.status();
  s->cluster = std::move(*cluster);
  auto tc = s->cluster->thread_client();
  if (!tc.ok()) return tc.status();
  s->client = *tc;
  kv::StoreOptions o;
  o.location_cache_log2 = -1;  // one operation: nothing to cache
  auto store = kv::Store::open(s->client, o);
  if (!store.ok()) return store.status();
  s->store = std::move(*store);
  return OkStatus();
}

// Opens f.pool; a missing pool becomes "no pool NAME (on node N)".
Result<std::unique_ptr<kv::Pool>> open_pool(const KvFlags& f, Session* s, uint32_t flags) {
  auto p = sync_wait(s->store->open_pool(f.pool, flags));
  if (!p.ok() && p.status().code() == StatusCode::kNotFound) {
    return NotFound(
        fmt::format("no pool '{}' (it would be on node {})", f.pool, s->store->node_of(f.pool)));
  }
  return p;
}

Status key_absent(const KvFlags& f) {
  return NotFound(fmt::format("no key '{}' in pool '{}'", f.key, f.pool));
}

Result<std::string> value_of(const KvFlags& f) {
  if (f.value_file.empty()) return f.value;
  if (!f.value.empty()) return InvalidArgument("give the value or --value-file, not both");
  std::stringstream ss;
  if (f.value_file == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream in(f.value_file, std::ios::binary);
    if (!in) return InvalidArgument(fmt::format("cannot read {}", f.value_file));
    ss << in.rdbuf();
  }
  return ss.str();
}

int cmd_pools(const KvFlags& f, Session* s) {
  auto pools = sync_wait(s->store->list_pools());
  if (!pools.ok()) return fail(f, pools.status());
  fmt::print("{:<32} {:>5} {:>14} {:>14} {:>12} {:>6}\n", "pool", "node", "capacity", "used",
             "keys", "opens");
  for (const auto& p : *pools) {
    fmt::print("{:<32} {:>5} {:>14} {:>14} {:>12} {:>6}\n", p.name, p.node, p.capacity_bytes,
               p.used_bytes, p.count, p.open_handles);
  }
  return kKvExitOk;
}

int cmd_create(const KvFlags& f, Session* s) {
  auto p = sync_wait(s->store->create_pool(f.pool, f.capacity_bytes, f.expected_count,
                                           f.create_only ? w::kPoolCreateOnly : 0));
  if (!p.ok()) return fail(f, p.status());
  fmt::print("{} pool '{}' on node {} (shard {}), capacity {} bytes\n",
             (*p)->created() ? "created" : "opened existing", f.pool, (*p)->node(), (*p)->shard(),
             (*p)->capacity_bytes());
  return exit_code(sync_wait(s->store->close_pool(**p)));
}

int cmd_delete(const KvFlags& f, Session* s) {
  Status st = sync_wait(s->store->delete_pool(f.pool));
  if (st.code() == StatusCode::kNotFound) st = NotFound(fmt::format("no pool '{}'", f.pool));
  if (!st.ok()) return fail(f, st);
  fmt::print("deleted pool '{}'\n", f.pool);
  return kKvExitOk;
}

int cmd_put(const KvFlags& f, kv::Pool* p) {
  auto value = value_of(f);
  if (!value.ok()) return fail(f, value.status());
  uint8_t flags =
      (f.create_only ? w::kPutCreateOnly : 0) | (f.dont_overwrite ? w::kPutDontOverwrite : 0);
  bool existed = false;
  Status st = sync_wait(p->put(f.key, *value, flags, &existed));
  if (!st.ok()) return fail(f, st);
  if (existed) fmt::print(stderr, "key '{}' exists: its value was kept\n", f.key);
  return kKvExitOk;
}

int cmd_get(const KvFlags& f, kv::Pool* p) {
  std::string value;
  auto found = sync_wait(p->get(f.key, &value));
  if (!found.ok()) return fail(f, found.status());
  if (!*found) return fail(f, key_absent(f));
  std::cout.write(value.data(), static_cast<std::streamsize>(value.size()));
  if (!f.raw) std::cout << '\n';
  std::cout.flush();
  return kKvExitOk;
}

int cmd_erase(const KvFlags& f, kv::Pool* p) {
  Status st = sync_wait(p->erase(f.key));
  if (st.code() == StatusCode::kNotFound) st = key_absent(f);
  return st.ok() ? kKvExitOk : fail(f, st);
}

int cmd_find(const KvFlags& f, kv::Pool* p) {
  uint64_t start = f.start, shown = 0;
  const bool single = f.expression.rfind("next:", 0) == 0 && f.limit == 0;
  for (;;) {
    auto m = sync_wait(p->find(f.expression, start));
    if (!m.ok()) {
      if (m.status().code() == StatusCode::kNotFound && shown > 0) return kKvExitOk;
      if (m.status().code() == StatusCode::kNotFound) {
        return fail(f, NotFound(fmt::format("no key of pool '{}' at position >= {} matches '{}'",
                                            f.pool, f.start, f.expression)));
      }
      return fail(f, m.status());
    }
    fmt::print("{} {}\n", m->position, m->key);
    ++shown;
    if ((f.limit > 0 && shown >= f.limit) || single) return kKvExitOk;
    start = m->position + 1;
  }
}

int cmd_count(const KvFlags& f, kv::Pool* p) {
  auto n = sync_wait(p->count());
  if (!n.ok()) return fail(f, n.status());
  fmt::print("{}\n", *n);
  return kKvExitOk;
}

int cmd_stats(const KvFlags& f, Session* s) {
  if (!f.pool.empty()) {
    auto p = open_pool(f, s, w::kPoolReadOnly);
    if (!p.ok()) return fail(f, p.status());
    auto info = sync_wait((*p)->info());
    if (!info.ok()) return fail(f, info.status());
    fmt::print(
        "pool '{}': node {} shard {} keys {} used {} of {} bytes, index slots {}, open handles "
        "{}{}{}\n",
        f.pool, (*p)->node(), (*p)->shard(), info->count, info->used_bytes, info->capacity_bytes,
        info->index_slots, info->open_handles,
        (info->flags & w::kPoolHasIndex) ? ", secondary index" : "",
        (info->flags & w::kPoolHasAdo) ? ", ADO plugins" : "");
    Status st = sync_wait(s->store->close_pool(**p));
    if (!st.ok()) return fail(f, st);
  }
  fmt::print("{:>5} {:>5} {:>12} {:>12} {:>10} {:>9} {:>8} {:>8} {:>7} {:>6} {:>10}\n", "node",
             "shard", "gets", "puts", "erases", "locates", "ado", "failures", "clients", "pools",
             "ops/msg");
  for (const auto& n : s->cluster->nodes()) {
    auto shards = sync_wait(s->store->shard_stats(n.node_id));
    if (!shards.ok()) return fail(f, shards.status());
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

int cmd_invoke(const KvFlags& f, kv::Pool* p) {
  auto r = f.put_value.empty()
               ? sync_wait(p->invoke_ado(f.key, f.request, f.ado_flags, f.ado_value_size))
               : sync_wait(p->invoke_put_ado(f.key, f.put_value, f.request, f.ado_flags));
  if (!r.ok()) return fail(f, r.status());
  fmt::print("plugin status {}, {} response(s)\n", r->plugin_status, r->responses.size());
  for (const auto& resp : r->responses) {
    fmt::print("[layer {}] {}\n", resp.layer, resp.data);
  }
  return r->plugin_status == 0 ? kKvExitOk : kKvExitError;
}

int cmd_configure(const KvFlags& f, kv::Pool* p) {
  Status st = sync_wait(p->configure(f.configure));
  if (!st.ok()) return fail(f, st);
  fmt::print("pool '{}': {}\n", f.pool, f.configure);
  return kKvExitOk;
}

// Commands on one pool: open it (read-only for readers), run, close.
int with_pool(const KvFlags& f, Session* s) {
  const bool reader = f.command == "get" || f.command == "find" || f.command == "count";
  auto p = open_pool(f, s, reader ? w::kPoolReadOnly : 0);
  if (!p.ok()) return fail(f, p.status());
  int rc = kKvExitUsage;
  if (f.command == "put") rc = cmd_put(f, p->get());
  if (f.command == "get") rc = cmd_get(f, p->get());
  if (f.command == "erase") rc = cmd_erase(f, p->get());
  if (f.command == "find") rc = cmd_find(f, p->get());
  if (f.command == "count") rc = cmd_count(f, p->get());
  if (f.command == "invoke") rc = cmd_invoke(f, p->get());
  if (f.command == "configure") rc = cmd_configure(f, p->get());
  Status st = sync_wait(s->store->close_pool(**p));
  if (!st.ok() && rc == kKvExitOk) return fail(f, st);
  return rc;
}

}  // namespace

CLI::App* add_kv_commands(CLI::App* app, KvFlags* f) {
  CLI::App* kv = app->add_subcommand("kv", "the key-value store: pools, keys, finds, ADO calls");
  kv->require_subcommand(1);
  for (const KvCommand& c : kCommands) {
    CLI::App* sub = kv->add_subcommand(c.name, c.help);
    add_cluster_flags(sub, &f->cluster);
    sub->callback([f, name = std::string(c.name)] { f->command = name; });
    const std::string n = c.name;
    if (n == "pools") continue;
    if (n == "stats") {
      sub->add_option("pool", f->pool, "a pool to describe too");
      continue;
    }
    sub->add_option("pool", f->pool, "pool name")->required();
    if (n == "create-pool") {
      sub->add_option("--capacity", f->capacity_bytes, "bytes of the pool (default 64MiB)")
          ->transform(bytes_unit());
      sub->add_option("--expected-count", f->expected_count, "keys to presize the index for");
      sub->add_flag("--create-only", f->create_only, "fail (exit 4) if the pool exists");
    }
    if (n == "put" || n == "get" || n == "erase" || n == "invoke") {
      sub->add_option("key", f->key, "key")->required();
    }
    if (n == "put") {
      sub->add_option("value", f->value, "value (or --value-file)");
      sub->add_option("--value-file", f->value_file, "read the value from a file ('-': stdin)");
      sub->add_flag("--create-only", f->create_only, "fail (exit 4) if the key exists");
      sub->add_flag("--dont-overwrite", f->dont_overwrite, "keep an existing value (exit 0)");
    }
    if (n == "get") sub->add_flag("--raw", f->raw, "print the value's bytes only (no newline)");
    if (n == "find") {
      sub->add_option("expression", f->expression, "exact:K | prefix:P | regex:R | next:")
          ->required();
      sub->add_option("--start", f->start, "first position to consider (default 0)");
      sub->add_option("--limit", f->limit, "print at most this many matches (default all)");
    }
    if (n == "configure") {
      sub->add_option("command", f->configure,
                      "AddIndex::VolatileTree | RemoveIndex | AdoPlugins::a.so,b.so | "
                      "AdoParam::key=value | AdoSignals::post-put,post-get,post-erase")
          ->required();
    }
    if (n == "invoke") {
      sub->add_option("request", f->request, "the request passed to the plugin")->required();
      sub->add_option("--put-value", f->put_value, "invoke_put_ado: store this value first");
      sub->add_option("--ado-flags", f->ado_flags, "kAdo* flags (docs/formats/kv.md)");
      sub->add_option("--value-size", f->ado_value_size, "size of a value created on demand");
    }
  }
  return kv;
}

int run_kv(const KvFlags& f) {
  Session s;
  if (Status st = connect(f, &s); !st.ok()) return fail(f, st);
  if (f.command == "pools") return cmd_pools(f, &s);
  if (f.command == "create-pool") return cmd_create(f, &s);
  if (f.command == "delete-pool") return cmd_delete(f, &s);
  if (f.command == "stats") return cmd_stats(f, &s);
  return with_pool(f, &s);
}

}  // namespace farmem::apps
