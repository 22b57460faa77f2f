// farmem txn: operator commands for transactional tables (txn/promote.h).
//
//   farmem txn promote --node ID --table NAME [--table NAME ...]
//                      --servers h:p,... --down-nodes h:p=ID    (or --config FILE)
//
// promote: after memory node ID died, makes the backups of the buckets whose primary it held
// the primaries, table by table (there is no listing of roots, so the tables are named). The
// dead node must be listed and named down. Prints one line per table; exit 0 when every table
// was promoted (or already was), 1 otherwise (the line says why; nothing of that table changed).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "farmem/client/cluster.h"
#include "farmem/txn/promote.h"

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
  return (*c)->run(promote_all(*c, f));
}

}  // namespace farmem::apps
