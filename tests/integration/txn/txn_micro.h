// The contended micro-workload of the serializability tests, shared by the test binary and
// farmem_txn_history_client (several processes): a few hot keys; read-modify-write, two-record
// and read-only transactions; each committed transaction recorded as a sercheck JSON line
// (tools/sercheck/sercheck.py) with the versions it read and replaced.
#pragma once

#include <cstdint>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "farmem/runtime/task.h"
#include "farmem/txn/transaction.h"

namespace farmem::testing {

using runtime::Task;
using txn::Table;
using txn::Transaction;
using txn::TxnClient;

inline std::string micro_value(uint64_t v) {
  return std::string(reinterpret_cast<const char*>(&v), 8);
}
inline uint64_t micro_u64(const std::string& s) {
  uint64_t v = 0;
  std::memcpy(&v, s.data(), std::min<size_t>(8, s.size()));
  return v;
}

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
  uint64_t unvalidated = 0;  // read-only commits of one stable read (TxnCounters)
};

// One coroutine of the micro-workload: n transactions over `keys` hot keys.
inline Task<Status> micro(TxnClient* tc, const Table* t, uint64_t keys, int n, uint64_t seed,
                          Recorder* rec, MicroStats* st) {
  std::mt19937_64 rng(seed);
  std::string v, w;
  for (int i = 0; i < n; ++i) {
    const int kind = static_cast<int>(rng() % 5);
    const uint64_t k1 = rng() % keys, k2 = rng() % keys, k3 = rng() % keys;
    Transaction x = kind >= 3 ? tc->begin_read_only() : tc->begin();
    Status s;
    // Operations on shared memory rarely suspend: yielding between steps interleaves this
    // thread's coroutines (as network round trips would).
    runtime::Scheduler& sched = tc->client()->scheduler();
    if (kind <= 1) {  // read k1, read-modify-write k2
      s = co_await x.read(*t, k1, &v);
      co_await sched.yield();
      if (s.ok()) s = co_await x.read_for_update(*t, k2, &w);
      co_await sched.yield();
      if (s.ok()) s = co_await x.update(*t, k2, micro_value(micro_u64(v) + micro_u64(w) + 1));
    } else if (kind == 2) {  // move one unit from k1 to k2
      s = co_await x.read_for_update(*t, k1, &v);
      if (s.ok()) s = co_await x.update(*t, k1, micro_value(micro_u64(v) - 1));
      co_await sched.yield();
      if (s.ok()) s = co_await x.read_for_update(*t, k2, &w);
      if (s.ok()) s = co_await x.update(*t, k2, micro_value(micro_u64(w) + 1));
    } else if (kind == 3) {  // read-only over three keys
      s = co_await x.read(*t, k1, &v);
      co_await sched.yield();
      if (s.ok()) s = co_await x.read(*t, k2, &v);
      co_await sched.yield();
      if (s.ok()) s = co_await x.read(*t, k3, &v);
    } else {  // read-only of one key (over TCP: a stable snapshot, committed unvalidated)
      s = co_await x.read(*t, k1, &v);
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
    st->read_only += kind >= 3 ? 1 : 0;
    rec->add(x, acc);
  }
  co_return OkStatus();
}

}  // namespace farmem::testing
