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
#include <string>
#include <thread>
#include <vector>

#include "farmem/runtime/when_all.h"
#include "farmem/txn/transaction.h"
#include "test_seed.h"
#include "txn_fixture.h"

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

struct Recorder {
  std::mutex mu;
  std::vector<std::string> lines;
  void add(const Transaction& t, const std::vector<Transaction::Access>& acc) {
    nlohmann::json j;
    j["id"] = std::to_string(t.id().coordinator) + ":" + std::to_string(t.id().sequence);
    j["reads"] = nlohmann::json::array();
    j["writes"] = nlohmann::json::array();
    for (const auto& a : acc) {
      nlohmann::json e =
          nlohmann::json::array({std::to_string(a.tag) + ":" + std::to_string(a.key), a.version});
      (a.write ? j["writes"] : j["reads"]).push_back(e);
    }
    std::lock_guard<std::mutex> g(mu);
    lines.push_back(j.dump());
  }
};

struct MicroStats {
  uint64_t commits = 0, aborts = 0, read_only = 0;
};

// One coroutine of the micro-workload: n transactions over `keys` hot keys.
Task<Status> micro(TxnClient* tc, const Table* t, uint64_t keys, int n, uint64_t seed,
                   Recorder* rec, MicroStats* st) {
  std::mt19937_64 rng(seed);
  std::string v, w;
  for (int i = 0; i < n; ++i) {
    const int kind = static_cast<int>(rng() % 4);
    const uint64_t k1 = rng() % keys, k2 = rng() % keys, k3 = rng() % keys;
    Transaction x = kind == 3 ? tc->begin_read_only() : tc->begin();
    Status s;
    // Operations on shared memory rarely suspend: yielding between steps interleaves this
    // thread's coroutines (as network round trips would).
    runtime::Scheduler& sched = tc->client()->scheduler();
    if (kind <= 1) {  // read k1, read-modify-write k2
      s = co_await x.read(*t, k1, &v);
      co_await sched.yield();
      if (s.ok()) s = co_await x.read_for_update(*t, k2, &w);
      co_await sched.yield();
      if (s.ok()) s = co_await x.update(*t, k2, u64_value(value_u64(v) + value_u64(w) + 1));
    } else if (kind == 2) {  // move one unit from k1 to k2
      s = co_await x.read_for_update(*t, k1, &v);
      if (s.ok()) s = co_await x.update(*t, k1, u64_value(value_u64(v) - 1));
      co_await sched.yield();
      if (s.ok()) s = co_await x.read_for_update(*t, k2, &w);
      if (s.ok()) s = co_await x.update(*t, k2, u64_value(value_u64(w) + 1));
    } else {  // read-only over three keys
      s = co_await x.read(*t, k1, &v);
      co_await sched.yield();
      if (s.ok()) s = co_await x.read(*t, k2, &v);
      co_await sched.yield();
      if (s.ok()) s = co_await x.read(*t, k3, &v);
    }
    co_await sched.yield();
    if (s.code() == StatusCode::kAborted) {
      ++st->aborts;
      continue;
    }
    if (!s.ok()) co_return s;
    const std::vector<Transaction::Access> acc = x.accesses();
    s = co_await x.commit();
    if (s.code() == StatusCode::kAborted) {
      ++st->aborts;
      continue;
    }
    if (!s.ok()) co_return s;
    ++st->commits;
    st->read_only += kind == 3 ? 1 : 0;
    rec->add(x, acc);
  }
  co_return OkStatus();
}

void micro_thread(client::Cluster* cluster, const Table* t, uint64_t keys, int coroutines, int n,
                  uint64_t seed, Recorder* rec, MicroStats* st, Status* status, std::latch* start) {
  auto c = cluster->thread_client();
  start->arrive_and_wait();  // every thread connected: they run their transactions together
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
  for (int i = 0; i < coroutines; ++i) {
    tasks.push_back(micro(tc->get(), t, keys, n, seed + static_cast<uint64_t>(i), rec, st));
  }
  std::vector<Status> r = (*c)->run(runtime::when_all(std::move(tasks)));
  for (const Status& s : r) {
    if (!s.ok() && status->ok()) *status = s;
  }
  Status cs = (*c)->run((*tc)->close());
  if (status->ok()) *status = cs;
  tc->reset();
  cluster->release_thread_client();
}

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
  }
  std::printf("micro-workload: %lu commits (%lu read-only), %lu aborts\n",
              static_cast<unsigned long>(sum.commits), static_cast<unsigned long>(sum.read_only),
              static_cast<unsigned long>(sum.aborts));
  EXPECT_GT(sum.commits, 0u);
  EXPECT_GT(sum.read_only, 0u);
  EXPECT_EQ(rec.lines.size(), sum.commits);
  const std::string path =
      "/tmp/farmem-txn-history-" + GetParam().name + "-" + std::to_string(getpid()) + ".jsonl";
  {
    std::ofstream f(path);
    for (const auto& l : rec.lines) f << l << "\n";
  }
  std::string out;
  const int rc = run_command(std::string(FARMEM_PYTHON) + " " + FARMEM_SERCHECK + " " + path, &out);
  EXPECT_EQ(rc, 0) << out << " (history kept at " << path << ")";
  std::printf("%s", out.c_str());
  if (rc == 0) std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnConcurrencyTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
