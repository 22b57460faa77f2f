// farmem_txn_crash_client: a transaction coordinator for the recovery tests
// (txn_recovery_test.cc), killed by its own test hook in the middle of a commit.
//
//   FARMEM_TXN_CRASH_AT=before_log|after_log|after_write
//     farmem_txn_crash_client --servers h:p,h:p --table NAME --keys N [--tls TLS]
//
// Opens the existing table NAME (8-byte records), then in one transaction sets keys 0..N-1 to
// 1000 + key (read_for_update + update), inserts key 500 -> 500 and erases key N (present), and
// commits: the hook kills the process at the named point of the commit with SIGKILL. Prints
// "committing" just before the commit; without the hook it prints "committed" and exits 0. It
// prints "error CODE: message" and exits 1 at the first failure.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <string>

#include "farmem/client/cluster.h"
#include "farmem/txn/transaction.h"

namespace {

using farmem::Status;
using farmem::runtime::Task;
using farmem::txn::Table;
using farmem::txn::Transaction;

int fail(const Status& s) {
  std::printf("error %s: %s\n", std::string(farmem::status_code_name(s.code())).c_str(),
              std::string(s.message()).c_str());
  std::fflush(stdout);
  return 1;
}

std::string u64(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }

Task<Status> run(farmem::txn::TxnClient* tc, const Table* t, uint64_t keys) {
  Transaction x = tc->begin();
  std::string v;
  for (uint64_t k = 0; k < keys; ++k) {
    Status s = co_await x.read_for_update(*t, k, &v);
    if (s.ok()) s = co_await x.update(*t, k, u64(1000 + k));
    if (!s.ok()) co_return s;
  }
  Status s = co_await x.insert(*t, 500, u64(500));
  if (s.ok()) s = co_await x.erase(*t, keys);
  if (!s.ok()) co_return s;
  std::printf("committing\n");
  std::fflush(stdout);
  s = co_await x.commit();
  co_return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"transaction coordinator killed mid-commit"};
  std::string servers, table = "crash", tls;
  uint64_t keys = 4;
  app.add_option("--servers", servers)->required();
  app.add_option("--table", table);
  app.add_option("--keys", keys);
  app.add_option("--tls", tls);
  CLI11_PARSE(app, argc, argv);
  auto config = farmem::client::ClusterConfig::from_server_list(servers);
  if (!config.ok()) return fail(config.status());
  if (!tls.empty()) config->options.tls = tls;
  auto cluster = farmem::client::Cluster::connect(*config);
  if (!cluster.ok()) return fail(cluster.status());
  farmem::client::ThreadClient* c = *(*cluster)->thread_client();
  auto t = c->run(Table::open(c, table));
  if (!t.ok()) return fail(t.status());
  auto tc = c->run(farmem::txn::TxnClient::create(c));
  if (!tc.ok()) return fail(tc.status());
  Status s = c->run(run(tc->get(), &*t, keys));
  if (!s.ok()) return fail(s);
  std::printf("committed\n");
  std::fflush(stdout);
  return 0;
}
