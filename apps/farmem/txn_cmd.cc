// farmem txn: operator commands for transactional tables (txn/table.h, txn/promote.h).
//
//   farmem txn create --table NAME [--record-bytes 8] [--capacity 1024] [--replicas R]
//   farmem txn locks --table NAME [--recover]
//   farmem txn promote --node ID --table NAME [--table NAME ...]
//                      --servers h:p,... --down-nodes h:p=ID    (or --config FILE)
//
// create: a persistent table (it outlives the command; records are zero until written).
// locks: the lock words held on the table's primaries, each holder's coordinator alive or
// ended; with --recover, each held lock is met as a transaction would meet it (the holder's
// transaction is rolled forward or its locks released if its coordinator ended), then the
// table is scanned again. Exit 0 when no lock is held at the end, 1 otherwise.
// promote: after memory node ID died, makes the backups of the buckets whose primary it held
// the primaries, table by table (there is no listing of roots, so the tables are named). The
// dead node must be listed and named down. Prints one line per table; exit 0 when every table
// was promoted (or already was), 1 otherwise (the line says why; nothing of that table changed).
#include <fmt/format.h>

#include <memory>

#include "command.h"
#include "farmem/bench/harness/cluster.h"
#include "farmem/client/cluster.h"
#include "farmem/txn/promote.h"
#include "farmem/txn/table.h"
#include "flags.h"

namespace farmem::apps {
namespace {

struct TxnOptions {
  bench::ClusterOptions cluster;
  uint16_t node = 0;                // promote: the dead node's id
  std::vector<std::string> tables;  // the tables (create, locks: one)
  uint32_t record_bytes = 8;        // create
  uint64_t capacity = 1024;         // create
  uint32_t replicas = 0;            // create (0: the default)
  bool recover = false;             // locks: meet each held lock (recovery of ended holders)
};

runtime::Task<int> promote_all(client::ThreadClient* c, const TxnOptions& f) {
  auto tc = co_await txn::TxnClient::create(c);
  if (!tc.ok()) {
    fmt::print(stderr, "error: {}\n", tc.status().to_string());
    co_return 1;
  }
  int rc = 0;
  for (const std::string& name : f.tables) {
    auto r = co_await txn::promote_table(c, tc->get(), name, f.node);
    if (!r.ok()) {
      fmt::print("table {}: not promoted: {}\n", name, r.status().to_string());
      rc = 1;
      continue;
    }
    if (r->already_failed) {
      fmt::print("table {}: node {} was already promoted away from\n", name, f.node);
      continue;
    }
    fmt::print(
        "table {}: promoted {} buckets off node {}; {} held locks seen, {} logs rolled forward, "
        "{} stray locks cleared; failed-node marks {:#x}\n",
        name, r->promoted_buckets, f.node, r->locks_seen, r->logs_rolled_forward, r->locks_cleared,
        r->failed_nodes);
  }
  Status closed = co_await (*tc)->close();
  if (!closed.ok()) fmt::print(stderr, "warning: {}\n", closed.to_string());
  co_return rc;
}

runtime::Task<int> create_table(client::ThreadClient* c, const TxnOptions& f) {
  txn::TableOptions o;
  o.record_bytes = f.record_bytes;
  o.capacity = f.capacity;
  o.replicas = f.replicas;
  auto t = co_await txn::Table::create(c, f.tables.front(), o);
  if (!t.ok()) {
    fmt::print("table {}: not created: {}\n", f.tables.front(), t.status().to_string());
    co_return 1;
  }
  fmt::print("table {}: created: {} buckets, {} B records, {} replicas\n", t->name(), t->buckets(),
             t->record_bytes(), t->replicas());
  co_return 0;
}

// tc: the coordinator that meets the locks (only with recover).
runtime::Task<Result<uint64_t>> print_locks(client::ThreadClient* c, txn::TxnClient* tc,
                                            const std::string& name, bool recover) {
  auto r = co_await txn::held_locks(c, name);
  FARMEM_CO_TRY(r);
  fmt::print("table {}: {} held lock(s)\n", name, r->locks);
  uint64_t acted = 0;
  for (const txn::HeldLock& h : r->held) {
    const GlobalAddress holder = GlobalAddress::unpack(h.holder);
    if (!recover) {
      fmt::print("  lock word {:#x}@{} held by the log slot {:#x}@{}\n", h.word.offset(),
                 h.word.node(), holder.offset(), holder.node());
      continue;
    }
    auto met = co_await tc->recover(h.word, h.holder);
    FARMEM_CO_TRY(met);
    acted += *met ? 1 : 0;
  }
  if (recover) fmt::print("  recovery acted on {} holder(s)\n", acted);
  co_return r->locks;
}

runtime::Task<int> locks(client::ThreadClient* c, const TxnOptions& f) {
  const std::string& name = f.tables.front();
  Result<uint64_t> n = uint64_t{0};
  if (!f.recover) {
    n = co_await print_locks(c, nullptr, name, false);  // a listing needs no coordinator
  } else {
    auto tc = co_await txn::TxnClient::create(c);
    if (!tc.ok()) {
      fmt::print(stderr, "error: {}\n", tc.status().to_string());
      co_return 1;
    }
    n = co_await print_locks(c, tc->get(), name, true);
    if (n.ok() && *n > 0) n = co_await print_locks(c, tc->get(), name, false);
    Status closed = co_await (*tc)->close();
    if (!closed.ok()) fmt::print(stderr, "warning: {}\n", closed.to_string());
  }
  if (!n.ok()) {
    fmt::print("table {}: {}\n", name, n.status().to_string());
    co_return 1;
  }
  co_return *n == 0 ? 0 : 1;
}

// Connects to --servers/--config and runs `command` on this thread's client; the exit code.
int with_client(const TxnOptions& f,
                runtime::Task<int> (*command)(client::ThreadClient*, const TxnOptions&)) {
  if (f.cluster.servers.empty() && f.cluster.config.empty()) {
    fmt::print(stderr, "error: give the cluster with --servers or --config\n");
    return 2;
  }
  std::unique_ptr<bench::LocalNode> none;
  auto config = bench::resolve_cluster(f.cluster, &none);
  if (!config.ok()) {
    fmt::print(stderr, "error: {}\n", config.status().to_string());
    return 2;
  }
  auto cluster = client::Cluster::connect(*config);
  if (!cluster.ok()) {
    fmt::print(stderr, "error: {}\n", cluster.status().to_string());
    return 1;
  }
  auto c = (*cluster)->thread_client();
  if (!c.ok()) {
    fmt::print(stderr, "error: {}\n", c.status().to_string());
    return 1;
  }
  return (*c)->run(command(*c, f));
}

int run_promote(const TxnOptions& f) { return with_client(f, promote_all); }
int run_create(const TxnOptions& f) { return with_client(f, create_table); }
int run_locks(const TxnOptions& f) { return with_client(f, locks); }

void add_promote_flags(CLI::App* app, TxnOptions* o) {
  add_cluster_flags(app, &o->cluster);
  app->add_option("--node", o->node, "id of the dead memory node")->required();
  app->add_option("--table", o->tables, "a table to promote (repeat for each table)")->required();
}

void add_create_flags(CLI::App* app, TxnOptions* o) {
  add_cluster_flags(app, &o->cluster);
  app->add_option("--table", o->tables, "its name")->required()->expected(1);
  app->add_option("--record-bytes", o->record_bytes, "record size (1..4096)");
  app->add_option("--capacity", o->capacity, "records it is sized for");
  app->add_option("--replicas", o->replicas, "copies of each bucket (0: the default)");
}

void add_locks_flags(CLI::App* app, TxnOptions* o) {
  add_cluster_flags(app, &o->cluster);
  app->add_option("--table", o->tables, "its name")->required()->expected(1);
  app->add_flag("--recover", o->recover,
                "meet each held lock: recover those whose coordinator has ended");
}

}  // namespace

std::vector<Command> txn_commands() {
  return {
      make_command<TxnOptions>(
          "txn", "promote", "after a memory node died: its buckets' backups become the primaries",
          add_promote_flags, run_promote),
      make_command<TxnOptions>("txn", "create", "create a persistent table", add_create_flags,
                               run_create),
      make_command<TxnOptions>("txn", "locks", "list the locks held in a table", add_locks_flags,
                               run_locks)};
}

}  // namespace farmem::apps
