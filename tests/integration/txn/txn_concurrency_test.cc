// Concurrency: lost updates, write skew, and a recorded history of a contended micro-workload
// (a few hot keys; read-modify-write, two-record and read-only transactions; several threads,
// each its own coordinator with its own node sessions, each running several coroutines)
// checked for serializability by tools/sercheck (dependency graph, networkx).
#include <cstdio>
#include <fstream>
#include <latch>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "farmem/runtime/when_all.h"
#include "farmem/txn/transaction.h"
#include "test_seed.h"
#include "txn_fixture.h"
#include "txn_history.h"
#include "txn_micro.h"

namespace farmem::testing {
namespace {

using runtime::Task;
using txn::Table;
using txn::Transaction;
using txn::TxnClient;

class TxnConcurrencyTest : public TxnTest {
 protected:
  void load(const Table& t, uint64_t keys) {
    Transaction x = tc_->begin();
    for (uint64_t k = 0; k < keys; ++k) ASSERT_TRUE(c_->run(x.insert(t, k, u64_value(0))).ok());
    ASSERT_TRUE(c_->run(x.commit()).ok());
  }
};

// ---- lost update ----

Task<Status> increment(Transaction& t, const Table* table) {
  std::string v;
  Status s = co_await t.read(*table, 0, &v);  // a plain read first: the upgrade must validate
  if (!s.ok()) co_return s;
  s = co_await t.update(*table, 0, u64_value(value_u64(v) + 1));
  co_return s;
}

struct Increment {
  const Table* table;
  Task<Status> operator()(Transaction& t) const { return increment(t, table); }
};

Task<Status> increments(TxnClient* tc, const Table* table, int n, uint64_t* committed) {
  for (int i = 0; i < n; ++i) {
    Status s = co_await txn::run_transaction(tc, 10000, Increment{table});
    if (!s.ok()) co_return s;
    ++*committed;
  }
  co_return OkStatus();
}

void increment_thread(client::Cluster* cluster, const Table* table, int coroutines, int n,
                      uint64_t* committed, Status* status) {
  auto c = cluster->thread_client();
  if (!c.ok()) {
    *status = c.status();
    return;
  }
  auto tc = (*c)->run(TxnClient::create(*c));
  if (!tc.ok()) {
    *status = tc.status();
    return;
  }
  std::vector<Task<Status>> tasks;
  std::vector<uint64_t> done(coroutines);
  for (int i = 0; i < coroutines; ++i) tasks.push_back(increments(tc->get(), table, n, &done[i]));
  std::vector<Status> r = (*c)->run(runtime::when_all(std::move(tasks)));
  for (int i = 0; i < coroutines; ++i) {
    *committed += done[i];
    if (!r[i].ok() && status->ok()) *status = r[i];
  }
  Status cs = (*c)->run((*tc)->close());
  if (status->ok()) *status = cs;
  tc->reset();
  cluster->release_thread_client();
}

TEST_P(TxnConcurrencyTest, NoLostUpdates) {
  Table t = make_table("counter", 8, 16);
  load(t, 1);
  constexpr int kThreads = 2, kCoroutines = 4, kEach = 25;
  std::vector<uint64_t> committed(kThreads);
  std::vector<Status> status(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back(increment_thread, cluster_.get(), &t, kCoroutines, kEach, &committed[i],
                         &status[i]);
  }
  for (auto& th : threads) th.join();
  uint64_t total = 0;
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_TRUE(status[i].ok()) << status[i].to_string();
    total += committed[i];
  }
  EXPECT_EQ(total, uint64_t{kThreads * kCoroutines * kEach});
  Transaction r = tc_->begin_read_only();
  std::string v;
  ASSERT_TRUE(c_->run(r.read(t, 0, &v)).ok());
  EXPECT_EQ(value_u64(v), total);
}

// ---- write skew ----

TEST_P(TxnConcurrencyTest, NoWriteSkew) {
  // Invariant: x + y >= 1. Each transaction reads both and zeroes one if the sum allows it.
  Table t = make_table("skew", 8, 16);
  Transaction init = tc_->begin();
  ASSERT_TRUE(c_->run(init.insert(t, 1, u64_value(1))).ok());
  ASSERT_TRUE(c_->run(init.insert(t, 2, u64_value(1))).ok());
  ASSERT_TRUE(c_->run(init.commit()).ok());
  std::string v;
  Transaction a = tc_->begin();
  Transaction b = tc_->begin();
  for (uint64_t k : {1, 2}) {
    ASSERT_TRUE(c_->run(a.read(t, k, &v)).ok());
    ASSERT_TRUE(c_->run(b.read(t, k, &v)).ok());
  }
  Status ua = c_->run(a.update(t, 1, u64_value(0)));
  Status ub = c_->run(b.update(t, 2, u64_value(0)));
  Status ca = ua.ok() ? c_->run(a.commit()) : ua;
  Status cb = ub.ok() ? c_->run(b.commit()) : ub;
  EXPECT_FALSE(ca.ok() && cb.ok()) << "both committed: write skew";
  uint64_t sum = 0;
  Transaction r = tc_->begin_read_only();
  for (uint64_t k : {1, 2}) {
    ASSERT_TRUE(c_->run(r.read(t, k, &v)).ok());
    sum += value_u64(v);
  }
  ASSERT_TRUE(c_->run(r.commit()).ok());
  EXPECT_GE(sum, 1u);
}

// ---- recorded history ----

TEST_P(TxnConcurrencyTest, ContendedHistoryIsSerializable) {
  const uint64_t seed = test_seed();
  Table t = make_table("history", 8, 64);
  constexpr uint64_t kKeys = 4;
  load(t, kKeys);
  constexpr int kThreads = 3, kCoroutines = 4, kEach = 60;
  Recorder rec;
  std::vector<MicroStats> stats(kThreads);
  std::vector<Status> status(kThreads);
  std::vector<std::thread> threads;
  std::latch start(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back(micro_thread, cluster_.get(), &t, kKeys, kCoroutines, kEach,
                         seed * 1000 + static_cast<uint64_t>(i) * 100, &rec, &stats[i], &status[i],
                         &start);
  }
  for (auto& th : threads) th.join();
  MicroStats sum;
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_TRUE(status[i].ok()) << status[i].to_string();
    sum.commits += stats[i].commits;
    sum.aborts += stats[i].aborts;
    sum.read_only += stats[i].read_only;
    sum.unvalidated += stats[i].unvalidated;
  }
  std::printf("micro-workload: %lu commits (%lu read-only, %lu of them unvalidated), %lu aborts\n",
              static_cast<unsigned long>(sum.commits), static_cast<unsigned long>(sum.read_only),
              static_cast<unsigned long>(sum.unvalidated), static_cast<unsigned long>(sum.aborts));
  EXPECT_GT(sum.commits, 0u);
  EXPECT_GT(sum.read_only, 0u);
  // Over TCP single-record readers commit on a stable snapshot, among the writers of its key.
  if (GetParam().name == std::string("tcp")) {
    EXPECT_GT(sum.unvalidated, 0u);
  }
  EXPECT_EQ(rec.lines.size(), sum.commits);
  expect_serializable(rec.lines, GetParam().name);
}

// Two client processes and this one's thread run the micro-workload on the same hot keys at
// once; the union of their histories must be serializable.
TEST_P(TxnConcurrencyTest, MultiProcessHistoryIsSerializable) {
  const uint64_t seed = test_seed();
  Table t = make_table("mphistory", 8, 64);
  constexpr uint64_t kKeys = 4;
  load(t, kKeys);
  const std::string go = "/tmp/farmem-txn-go-" + GetParam().name + "-" + std::to_string(getpid());
  std::remove(go.c_str());
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int i = 0; i < 2; ++i) {
    children.push_back(ChildProcess::start(
        {FARMEM_TXN_HISTORY_CLIENT_BIN, "--servers",
         servers_[0]->address() + "," + servers_[1]->address(), "--table", t.name(), "--keys",
         std::to_string(kKeys), "--coroutines", "4", "--count", "80", "--seed",
         std::to_string(seed * 1000 + 500 + static_cast<uint64_t>(i) * 100), "--go", go, "--tls",
         GetParam().tls},
        {"UCX_TLS=" + GetParam().tls}));
    ASSERT_NE(children.back(), nullptr);
  }
  for (auto& ch : children) {
    ASSERT_EQ(ch->wait_for_line("ready", 60000), "ready") << ch->output();  // hang guard
  }
  { std::ofstream(go) << "go\n"; }
  Recorder rec;
  MicroStats stats;
  Status status;
  std::latch start(1);
  // A thread of its own: micro_thread releases its thread's client when done.
  std::thread local(micro_thread, cluster_.get(), &t, kKeys, 4, 80, seed * 1000, &rec, &stats,
                    &status, &start);
  local.join();
  EXPECT_TRUE(status.ok()) << status.to_string();
  uint64_t child_commits = 0;
  for (auto& ch : children) {
    const int st = ch->wait_exit(120000);  // hang guard
    ASSERT_EQ(st, 0) << ch->output();
    std::istringstream out(ch->output());
    for (std::string line; std::getline(out, line);) {
      if (line.rfind("txn ", 0) == 0) {
        rec.lines.push_back(line.substr(4));
        ++child_commits;
      }
    }
  }
  std::remove(go.c_str());
  std::printf("multi-process micro-workload: %lu + %lu commits\n",
              static_cast<unsigned long>(stats.commits), static_cast<unsigned long>(child_commits));
  EXPECT_GT(child_commits, 0u);
  expect_serializable(rec.lines, GetParam().name + "-mp");
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnConcurrencyTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
