// farmem_txn_history_client: one client process of the multi-process serializability test
// (txn_concurrency_test.cc): runs the contended micro-workload (txn_micro.h) on an existing
// table and prints every committed transaction as "txn <sercheck JSON>".
//
//   farmem_txn_history_client --servers h:p,h:p --table NAME --keys K --coroutines C
//                             --count N --seed S --go FILE [--tls TLS] [--load]
//
// Prints "ready" once connected, waits (polling) until FILE exists so that every process starts
// together, then runs; at the end prints the "txn" lines and "done commits=N aborts=M". Exits 1
// printing "error CODE: message" at the first failure.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/runtime/when_all.h"
#include "txn_micro.h"

namespace {

int fail(const farmem::Status& s) {
  std::printf("error %s: %s\n", std::string(farmem::status_code_name(s.code())).c_str(),
              std::string(s.message()).c_str());
  std::fflush(stdout);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace farmem;
  CLI::App app{"micro-workload client for the serializability test"};
  std::string servers, table = "history", tls, go;
  uint64_t keys = 4, seed = 1;
  int coroutines = 4, count = 100;
  app.add_option("--servers", servers)->required();
  app.add_option("--table", table);
  app.add_option("--keys", keys);
  app.add_option("--coroutines", coroutines);
  app.add_option("--count", count);
  app.add_option("--seed", seed);
  app.add_option("--go", go)->required();
  app.add_option("--tls", tls);
  bool load = false;
  app.add_flag("--load", load, "first insert keys 0..keys-1 with value 0 (one transaction)");
  CLI11_PARSE(app, argc, argv);
  auto config = client::ClusterConfig::from_server_list(servers);
  if (!config.ok()) return fail(config.status());
  if (!tls.empty()) config->options.tls = tls;
  auto cluster = client::Cluster::connect(*config);
  if (!cluster.ok()) return fail(cluster.status());
  client::ThreadClient* c = *(*cluster)->thread_client();
  auto t = c->run(txn::Table::open(c, table));
  if (!t.ok()) return fail(t.status());
  auto tc = c->run(txn::TxnClient::create(c));
  if (!tc.ok()) return fail(tc.status());
  if (load) {
    txn::Transaction x = (*tc)->begin();
    Status s;
    for (uint64_t k = 0; k < keys && s.ok(); ++k) {
      s = c->run(x.insert(*t, k, testing::micro_value(0)));
    }
    if (s.ok()) s = c->run(x.commit());
    if (!s.ok()) return fail(s);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  struct stat st;
  for (int i = 0; i < 60000 && ::stat(go.c_str(), &st) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // hang guard: one minute
  }
  testing::Recorder rec;
  testing::MicroStats stats;
  std::vector<runtime::Task<Status>> tasks;
  for (int i = 0; i < coroutines; ++i) {
    tasks.push_back(
        testing::micro(tc->get(), &*t, keys, count, seed + static_cast<uint64_t>(i), &rec, &stats));
  }
  std::vector<Status> r = c->run(runtime::when_all(std::move(tasks)));
  for (const Status& s : r) {
    if (!s.ok()) return fail(s);
  }
  Status cs = c->run((*tc)->close());
  if (!cs.ok()) return fail(cs);
  for (const auto& l : rec.lines) std::printf("txn %s\n", l.c_str());
  std::printf("done commits=%llu aborts=%llu\n", static_cast<unsigned long long>(stats.commits),
              static_cast<unsigned long long>(stats.aborts));
  std::fflush(stdout);
  return 0;
}
