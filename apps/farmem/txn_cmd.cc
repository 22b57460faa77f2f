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

#include <CLI/CLI.hpp>

#include "commands.h"
#include "farmem/client/cluster.h"
#include "farmem/txn/promote.h"
#include "farmem/txn/table.h"

namespace farmem::apps {
namespace {

runtime::Task<int> promote_all(client::ThreadClient* c, const TxnFlags& f) {
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

runtime::Task<int> create_table(client::ThreadClient* c, const TxnFlags& f) {
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
  if (!r.ok()) co_return r.status();
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
    if (!met.ok()) co_return met.status();
    acted += *met ? 1 : 0;
  }
  if (recover) fmt::print("  recovery acted on {} holder(s)\n", acted);
  co_return r->locks;
}

runtime::Task<int> locks(client::ThreadClient* c, const TxnFlags& f) {
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

}  // namespace

CLI::App* add_txn_commands(CLI::App* app, TxnFlags* f) {
  CLI::App* txn = app->add_subcommand("txn", "transactional tables: operator commands");
  txn->require_subcommand(1);
  CLI::App* promote = txn->add_subcommand(
      "promote", "after a memory node died: its buckets' backups become the primaries");
  add_cluster_flags(promote, &f->cluster);
  promote->add_option("--node", f->node, "id of the dead memory node")->required();
  promote->add_option("--table", f->tables, "a table to promote (repeat for each table)")
      ->required();
  promote->callback([f] { f->command = "promote"; });
  CLI::App* create = txn->add_subcommand("create", "create a persistent table");
  add_cluster_flags(create, &f->cluster);
  create->add_option("--table", f->tables, "its name")->required()->expected(1);
  create->add_option("--record-bytes", f->record_bytes, "record size (1..4096)");
  create->add_option("--capacity", f->capacity, "records it is sized for");
  create->add_option("--replicas", f->replicas, "copies of each bucket (0: the default)");
  create->callback([f] { f->command = "create"; });
  CLI::App* locks = txn->add_subcommand("locks", "list the locks held in a table");
  add_cluster_flags(locks, &f->cluster);
  locks->add_option("--table", f->tables, "its name")->required()->expected(1);
  locks->add_flag("--recover", f->recover,
                  "meet each held lock: recover those whose coordinator has ended");
  locks->callback([f] { f->command = "locks"; });
  return txn;
}

int run_txn(const TxnFlags& f) {
  if (f.cluster.servers.empty() && f.cluster.config.empty()) {
    fmt::print(stderr, "error: give the cluster with --servers or --config\n");
    return 2;
  }
  std::unique_ptr<LocalNode> none;
  auto config = resolve_cluster(f.cluster, &none);
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
  if (f.command == "create") return (*c)->run(create_table(*c, f));
  if (f.command == "locks") return (*c)->run(locks(*c, f));
  return (*c)->run(promote_all(*c, f));
}

}  // namespace farmem::apps
