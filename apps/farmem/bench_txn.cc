// `farmem bench txn`: SmallBank and TATP on farmem::txn (FORD's benchmarks, standard mixes).
//
// SmallBank: savings and checking tables of 8-byte balances (cents), 100,000 x scale accounts,
// 90% of transactions on the 4% hot accounts; Amalgamate 15, Balance 15, DepositChecking 15,
// SendPayment 25, TransactSavings 15, WriteCheck 15. After the run the total money is checked:
// it must equal the initial total plus the net deposits of the committed transactions.
// TATP: subscriber, secondary index (sub_nbr -> s_id), access_info, special_facility,
// call_forwarding for 100,000 x scale subscribers, populated as the specification says;
// GetSubscriberData 35, GetNewDestination 10, GetAccessData 35 (read-only: 80%),
// UpdateSubscriberData 2, UpdateLocation 14, InsertCallForwarding 2, DeleteCallForwarding 2.
// After the run the record counts are checked (call_forwarding: loaded + inserted - deleted).
//
// Each transaction is retried with backoff until it commits, at most --max-attempts times;
// its latency runs from its first attempt to its commit. Transactions the workload itself
// rolls back (insufficient funds, a missing row) count as rolled back, not as aborts.
#include "bench_txn.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_harness.h"
#include "farmem/common/clock.h"
#include "farmem/ds/common/retry.h"
#include "farmem/runtime/when_all.h"
#include "farmem/txn/transaction.h"

namespace farmem::apps {

namespace {

using runtime::Task;
using txn::Table;
using txn::Transaction;
using txn::TxnClient;

constexpr uint32_t kLoadBatch = 24;  // inserts per loading transaction (fits a log slot)

struct TypeStats {
  uint64_t attempts = 0, commits = 0, aborts = 0, rolled_back = 0, given_up = 0;
};

// One thread's counters; `types` and round trips are reset when measurement begins, the
// invariant deltas count everything the thread committed.
struct ThreadState {
  std::vector<TypeStats> types;
  uint64_t round_trips_at_measure = 0;
  uint64_t round_trips = 0;
  int64_t money_delta = 0;  // smallbank: net deposits committed
  int64_t cf_delta = 0;     // tatp: call_forwarding rows inserted - deleted
};

std::string u64s(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
int64_t i64_of(const std::string& s) {
  int64_t v = 0;
  std::memcpy(&v, s.data(), std::min<size_t>(8, s.size()));
  return v;
}

// ------------------------------------------------------------------------------ SmallBank

enum SbType {
  kAmalgamate,
  kBalance,
  kDepositChecking,
  kSendPayment,
  kTransactSavings,
  kWriteCheck
};
const std::vector<std::string> kSbNames = {"Amalgamate",  "Balance",         "DepositChecking",
                                           "SendPayment", "TransactSavings", "WriteCheck"};
constexpr int kSbMix[] = {15, 15, 15, 25, 15, 15};
constexpr int64_t kInitialBalance = 10'000;  // cents, per account and table

struct SmallBank {
  Table savings, checking;
  uint64_t accounts = 0, hot = 0;
};

struct Params {
  int type = 0;
  uint64_t a = 0, b = 0, c = 0, d = 0;
};

Task<Status> sb_body(Transaction& x, const SmallBank* sb, Params p, int64_t* delta) {
  std::string v1, v2, v3;
  Status s;
  switch (p.type) {
    case kAmalgamate: {
      s = co_await x.read_for_update(sb->savings, p.a, &v1);
      if (s.ok()) s = co_await x.read_for_update(sb->checking, p.a, &v2);
      if (s.ok()) s = co_await x.read_for_update(sb->checking, p.b, &v3);
      if (s.ok()) s = co_await x.update(sb->savings, p.a, u64s(0));
      if (s.ok()) s = co_await x.update(sb->checking, p.a, u64s(0));
      const int64_t total = i64_of(v1) + i64_of(v2) + i64_of(v3);
      if (s.ok()) s = co_await x.update(sb->checking, p.b, u64s(static_cast<uint64_t>(total)));
      break;
    }
    case kBalance:
      s = co_await x.read(sb->savings, p.a, &v1);
      if (s.ok()) s = co_await x.read(sb->checking, p.a, &v2);
      break;
    case kDepositChecking:
      s = co_await x.read_for_update(sb->checking, p.a, &v1);
      if (s.ok()) s = co_await x.update(sb->checking, p.a, u64s(i64_of(v1) + 130));
      *delta = 130;
      break;
    case kSendPayment:
      s = co_await x.read_for_update(sb->checking, p.a, &v1);
      if (s.ok() && i64_of(v1) < 500) {
        s = co_await x.abort();  // insufficient funds
        break;
      }
      if (s.ok()) s = co_await x.read_for_update(sb->checking, p.b, &v2);
      if (s.ok()) s = co_await x.update(sb->checking, p.a, u64s(i64_of(v1) - 500));
      if (s.ok()) s = co_await x.update(sb->checking, p.b, u64s(i64_of(v2) + 500));
      break;
    case kTransactSavings:
      s = co_await x.read_for_update(sb->savings, p.a, &v1);
      if (s.ok()) s = co_await x.update(sb->savings, p.a, u64s(i64_of(v1) + 2020));
      *delta = 2020;
      break;
    default: {  // kWriteCheck
      s = co_await x.read(sb->savings, p.a, &v1);
      if (s.ok()) s = co_await x.read_for_update(sb->checking, p.a, &v2);
      const int64_t amount = i64_of(v1) + i64_of(v2) < 500 ? 501 : 500;  // overdraft penalty
      if (s.ok()) s = co_await x.update(sb->checking, p.a, u64s(i64_of(v2) - amount));
      *delta = -amount;
      break;
    }
  }
  co_return s;
}

uint64_t sb_account(workload::Rng& rng, const SmallBank& sb) {
  if (rng.uniform(100) < 90) return rng.uniform(sb.hot);
  return sb.hot + rng.uniform(sb.accounts - sb.hot);
}

Params sb_params(workload::Rng& rng, const SmallBank& sb) {
  Params p;
  int r = static_cast<int>(rng.uniform(100));
  while (r >= kSbMix[p.type]) r -= kSbMix[p.type++];
  p.a = sb_account(rng, sb);
  do {
    p.b = sb_account(rng, sb);
  } while (p.b == p.a);
  return p;
}

// ------------------------------------------------------------------------------ TATP

enum TatpType {
  kGetSubscriberData,
  kGetNewDestination,
  kGetAccessData,
  kUpdateSubscriberData,
  kUpdateLocation,
  kInsertCallForwarding,
  kDeleteCallForwarding
};
const std::vector<std::string> kTatpNames = {
    "GetSubscriberData", "GetNewDestination",    "GetAccessData",       "UpdateSubscriberData",
    "UpdateLocation",    "InsertCallForwarding", "DeleteCallForwarding"};
constexpr int kTatpMix[] = {35, 10, 35, 2, 14, 2, 2};
constexpr uint32_t kSubscriberBytes = 40;  // sub_nbr 8, bits 4, vlr 4, msc 4, hex 10, byte2 10
constexpr uint32_t kAccessInfoBytes = 16;
constexpr uint32_t kSpecialFacilityBytes = 16;  // is_active, error_cntrl, data_a, data_b[5]
constexpr uint32_t kCallForwardingBytes = 24;   // end_time, numberx[15]

struct Tatp {
  Table subscriber, sec, access, facility, forwarding;
  uint64_t subscribers = 0;
  uint64_t loaded_ai = 0, loaded_sf = 0, loaded_cf = 0;
};

uint64_t sub_nbr(uint64_t s_id) { return s_id * 7919 + 13; }  // a bijection: the index is real
uint64_t ai_key(uint64_t s_id, uint64_t type) { return s_id * 4 + type - 1; }
uint64_t sf_key(uint64_t s_id, uint64_t type) { return s_id * 4 + type - 1; }
uint64_t cf_key(uint64_t s_id, uint64_t sf, uint64_t start) {
  return sf_key(s_id, sf) * 3 + start / 8;
}

// Which of the 4 access_info / special_facility types and 3 start times a subscriber has: a
// function of s_id (so that the load and the count check agree without storing it).
uint32_t tatp_mask(uint64_t s_id, uint64_t salt, uint32_t slots, uint32_t min) {
  workload::Rng r(s_id * 0x9E3779B97F4A7C15ull + salt);
  const uint32_t n = min + static_cast<uint32_t>(r.uniform(slots - min + 1));
  uint32_t mask = 0;
  while (static_cast<uint32_t>(__builtin_popcount(mask)) < n) mask |= 1u << r.uniform(slots);
  return mask;
}

Task<Status> sec_lookup(Transaction& x, const Tatp* tp, uint64_t nbr, uint64_t* s_id) {
  std::string v;
  Status s = co_await x.read(tp->sec, nbr, &v);
  if (s.ok()) *s_id = static_cast<uint64_t>(i64_of(v));
  co_return s;
}

// kNotFound from a row the transaction needs: the transaction is rolled back (the spec's
// expected failures), reported as a user abort.
Task<Status> rolled_back_if_missing(Transaction& x, Status s) {
  if (s.code() != StatusCode::kNotFound && s.code() != StatusCode::kAlreadyExists) co_return s;
  Status a = co_await x.abort();
  co_return a;
}

Task<Status> tatp_body(Transaction& x, const Tatp* tp, Params p, int64_t* cf_delta) {
  std::string v;
  Status s;
  switch (p.type) {
    case kGetSubscriberData:
      s = co_await x.read(tp->subscriber, p.a, &v);
      break;
    case kGetNewDestination: {
      s = co_await x.read(tp->facility, sf_key(p.a, p.b), &v);
      if (s.ok() && v[0] != 0) {
        for (uint64_t start = 0; start <= p.c && s.ok(); start += 8) {
          s = co_await x.read(tp->forwarding, cf_key(p.a, p.b, start), &v);
          if (s.code() == StatusCode::kNotFound) s = OkStatus();
        }
      }
      if (s.code() == StatusCode::kNotFound) s = OkStatus();  // a read-only miss is an answer
      break;
    }
    case kGetAccessData:
      s = co_await x.read(tp->access, ai_key(p.a, p.b), &v);
      if (s.code() == StatusCode::kNotFound) s = OkStatus();
      break;
    case kUpdateSubscriberData:
      s = co_await x.read_for_update(tp->subscriber, p.a, &v);
      if (s.ok()) {
        v[8] = static_cast<char>(p.c & 1);  // bit_1
        s = co_await x.update(tp->subscriber, p.a, v);
      }
      if (s.ok()) s = co_await x.read_for_update(tp->facility, sf_key(p.a, p.b), &v);
      if (s.ok()) {
        v[2] = static_cast<char>(p.d);  // data_a
        s = co_await x.update(tp->facility, sf_key(p.a, p.b), v);
      }
      s = co_await rolled_back_if_missing(x, s);
      break;
    case kUpdateLocation: {
      uint64_t id = 0;
      s = co_await sec_lookup(x, tp, sub_nbr(p.a), &id);
      if (s.ok()) s = co_await x.read_for_update(tp->subscriber, id, &v);
      if (s.ok()) {
        const uint32_t vlr = static_cast<uint32_t>(p.d);
        std::memcpy(v.data() + 12, &vlr, 4);
        s = co_await x.update(tp->subscriber, id, v);
      }
      s = co_await rolled_back_if_missing(x, s);
      break;
    }
    case kInsertCallForwarding: {
      uint64_t id = 0;
      s = co_await sec_lookup(x, tp, sub_nbr(p.a), &id);
      if (s.ok()) s = co_await x.read(tp->facility, sf_key(id, p.b), &v);
      std::string row(kCallForwardingBytes, '\0');
      row[0] = static_cast<char>(p.c + 1 + p.d % 24);  // end_time
      if (s.ok()) s = co_await x.insert(tp->forwarding, cf_key(id, p.b, p.c), row);
      if (s.ok()) *cf_delta = 1;
      s = co_await rolled_back_if_missing(x, s);
      break;
    }
    default: {  // kDeleteCallForwarding
      uint64_t id = 0;
      s = co_await sec_lookup(x, tp, sub_nbr(p.a), &id);
      if (s.ok()) s = co_await x.erase(tp->forwarding, cf_key(id, p.b, p.c));
      if (s.ok()) *cf_delta = -1;
      s = co_await rolled_back_if_missing(x, s);
      break;
    }
  }
  co_return s;
}

Params tatp_params(workload::Rng& rng, const Tatp& tp) {
  Params p;
  int r = static_cast<int>(rng.uniform(100));
  while (r >= kTatpMix[p.type]) r -= kTatpMix[p.type++];
  p.a = 1 + rng.uniform(tp.subscribers);  // s_id (uniform, as FORD runs it)
  p.b = 1 + rng.uniform(4);               // ai_type / sf_type
  p.c = 8 * rng.uniform(3);               // start_time
  p.d = rng.uniform(1u << 16);            // data_a, vlr_location, end_time
  return p;
}

// ------------------------------------------------------------------------------ the driver

struct Workload {
  const SmallBank* sb = nullptr;
  const Tatp* tp = nullptr;
  bool read_only(int type) const {
    return sb != nullptr ? type == kBalance : type <= kGetAccessData;
  }
};

Task<Status> run_body(Transaction& x, const Workload* w, Params p, int64_t* delta) {
  if (w->sb != nullptr) {
    Status s = co_await sb_body(x, w->sb, p, delta);
    co_return s;
  }
  Status s = co_await tatp_body(x, w->tp, p, delta);
  co_return s;
}

// One transaction, retried until it commits (at most max_attempts times).
Task<Status> execute(TxnClient* tc, const Workload* w, Params p, uint32_t max_attempts,
                     ThreadState* st) {
  TypeStats& ts = st->types[p.type];
  ds::RetryLoop loop(tc->client(), "transaction", max_attempts);
  for (;;) {
    Transaction x = w->read_only(p.type) ? tc->begin_read_only() : tc->begin();
    int64_t delta = 0;
    Status s = co_await run_body(x, w, p, &delta);
    if (s.ok()) s = co_await x.commit();
    if (!s.ok() && !x.finished()) {
      Status a = co_await x.abort();
      (void)a;
    }
    ++ts.attempts;
    if (s.ok()) {
      ++ts.commits;
      if (w->sb != nullptr) {
        st->money_delta += delta;
      } else {
        st->cf_delta += delta;
      }
      loop.succeeded();
      co_return OkStatus();
    }
    if (s.code() != StatusCode::kAborted) co_return s;
    if (x.reason() == txn::AbortReason::kUserAbort) {
      ++ts.rolled_back;
      co_return OkStatus();
    }
    ++ts.aborts;
    if (loop.exhausted()) {
      ++ts.given_up;
      co_return OkStatus();
    }
    co_await loop.retry();
  }
}

Task<void> txn_client(BenchThread* t, TxnClient* tc, const Workload* w, uint32_t stream,
                      uint32_t max_attempts, ThreadState* st) {
  workload::Rng rng = workload::Rng::for_thread(t->seed(), t->index() * 4096 + stream);
  while (t->running()) {
    const Params p = w->sb != nullptr ? sb_params(rng, *w->sb) : tatp_params(rng, *w->tp);
    const uint64_t t0 = cycles();
    Status s = co_await execute(tc, w, p, max_attempts, st);
    if (!s.ok()) {
      t->fail(s);
      co_return;
    }
    const TypeStats& ts = st->types[p.type];
    (void)ts;
    t->record(p.type, cycles() - t0);
    t->completed();
  }
  st->round_trips = tc->counters().round_trips;
}

// ------------------------------------------------------------------------------ loading

struct Row {
  const Table* table;
  uint64_t key;
  std::string value;
};

// Inserts rows in transactions of kLoadBatch, retrying conflicts (loaders share buckets).
Task<Status> insert_rows(TxnClient* tc, std::vector<Row> rows) {
  for (size_t i = 0; i < rows.size(); i += kLoadBatch) {
    const size_t end = std::min(rows.size(), i + kLoadBatch);
    ds::RetryLoop loop(tc->client(), "loading", 10000);
    for (;;) {
      Transaction x = tc->begin();
      Status s;
      for (size_t j = i; j < end && s.ok(); ++j) {
        s = co_await x.insert(*rows[j].table, rows[j].key, rows[j].value);
      }
      if (s.ok()) s = co_await x.commit();
      if (!s.ok() && !x.finished()) {
        Status a = co_await x.abort();
        (void)a;
      }
      if (s.ok()) break;
      if (s.code() != StatusCode::kAborted || loop.exhausted()) co_return s;
      co_await loop.retry();
    }
  }
  co_return OkStatus();
}

void sb_rows(const SmallBank& sb, uint64_t from, uint64_t to, std::vector<Row>* rows) {
  for (uint64_t k = from; k < to; ++k) {
    rows->push_back({&sb.savings, k, u64s(kInitialBalance)});
    rows->push_back({&sb.checking, k, u64s(kInitialBalance)});
  }
}

void tatp_rows(const Tatp& tp, uint64_t from, uint64_t to, std::vector<Row>* rows) {
  for (uint64_t s_id = from; s_id < to; ++s_id) {
    std::string sub(kSubscriberBytes, '\0');
    const uint64_t nbr = sub_nbr(s_id);
    std::memcpy(sub.data(), &nbr, 8);
    rows->push_back({&tp.subscriber, s_id, sub});
    rows->push_back({&tp.sec, nbr, u64s(s_id)});
    const uint32_t ai = tatp_mask(s_id, 1, 4, 1), sf = tatp_mask(s_id, 2, 4, 1);
    for (uint64_t type = 1; type <= 4; ++type) {
      if (ai & (1u << (type - 1))) {
        rows->push_back({&tp.access, ai_key(s_id, type), std::string(kAccessInfoBytes, 'a')});
      }
      if (!(sf & (1u << (type - 1)))) continue;
      std::string f(kSpecialFacilityBytes, '\0');
      f[0] = workload::Rng(s_id * 31 + type).uniform(100) < 85 ? 1 : 0;  // is_active
      rows->push_back({&tp.facility, sf_key(s_id, type), f});
      const uint32_t cf = tatp_mask(s_id * 8 + type, 3, 3, 0);
      for (uint64_t st = 0; st < 3; ++st) {
        if (cf & (1u << st)) {
          rows->push_back(
              {&tp.forwarding, cf_key(s_id, type, st * 8), std::string(kCallForwardingBytes, 'c')});
        }
      }
    }
  }
}

// Counts per table of the rows a TATP load puts in (computed, not read).
void tatp_counts(uint64_t subscribers, Tatp* tp) {
  for (uint64_t s_id = 1; s_id <= subscribers; ++s_id) {
    tp->loaded_ai += __builtin_popcount(tatp_mask(s_id, 1, 4, 1));
    const uint32_t sf = tatp_mask(s_id, 2, 4, 1);
    tp->loaded_sf += __builtin_popcount(sf);
    for (uint64_t type = 1; type <= 4; ++type) {
      if (sf & (1u << (type - 1)))
        tp->loaded_cf += __builtin_popcount(tatp_mask(s_id * 8 + type, 3, 3, 0));
    }
  }
}

Task<Status> load_range(TxnClient* tc, const Workload* w, uint64_t from, uint64_t to,
                        uint32_t coroutines) {
  std::vector<Task<Status>> tasks;
  const uint64_t n = to - from;
  for (uint32_t i = 0; i < coroutines; ++i) {
    const uint64_t a = from + n * i / coroutines, b = from + n * (i + 1) / coroutines;
    std::vector<Row> rows;
    if (w->sb != nullptr) {
      sb_rows(*w->sb, a, b, &rows);
    } else {
      tatp_rows(*w->tp, a, b, &rows);
    }
    tasks.push_back(insert_rows(tc, std::move(rows)));
  }
  std::vector<Status> r = co_await runtime::when_all(std::move(tasks));
  for (const Status& s : r) {
    if (!s.ok()) co_return s;
  }
  co_return OkStatus();
}

// ------------------------------------------------------------------------------ checks

// Reads keys [from, to) of `table` in read-only transactions (retried on conflict): the sum of
// their 8-byte values and how many are present.
Task<Status> scan(TxnClient* tc, const Table* table, std::vector<uint64_t> keys, int64_t* sum,
                  uint64_t* present) {
  for (size_t i = 0; i < keys.size(); i += 64) {
    const size_t end = std::min(keys.size(), i + 64);
    ds::RetryLoop loop(tc->client(), "checking", 10000);
    for (;;) {
      Transaction x = tc->begin_read_only();
      // Summed modulo 2^64 (a table whose records are not balances, e.g. TATP's, is only
      // counted; its "sum" is meaningless but must not overflow).
      uint64_t part = 0;
      uint64_t found = 0;
      Status s;
      std::string v;
      for (size_t j = i; j < end && s.ok(); ++j) {
        s = co_await x.read(*table, keys[j], &v);
        if (s.ok()) {
          part += static_cast<uint64_t>(i64_of(v));
          ++found;
        } else if (s.code() == StatusCode::kNotFound) {
          s = OkStatus();
        }
      }
      if (s.ok()) s = co_await x.commit();
      if (s.ok()) {
        *sum = static_cast<int64_t>(static_cast<uint64_t>(*sum) + part);
        *present += found;
        break;
      }
      if (s.code() != StatusCode::kAborted || loop.exhausted()) co_return s;
      co_await loop.retry();
    }
  }
  co_return OkStatus();
}

std::vector<uint64_t> key_range(uint64_t from, uint64_t to) {
  std::vector<uint64_t> k;
  for (uint64_t i = from; i < to; ++i) k.push_back(i);
  return k;
}

Task<Status> check_smallbank(TxnClient* tc, const SmallBank* sb, int64_t committed_delta,
                             std::string* line, bool* ok) {
  int64_t total = 0;
  uint64_t present = 0;
  Status s = co_await scan(tc, &sb->savings, key_range(0, sb->accounts), &total, &present);
  if (s.ok()) s = co_await scan(tc, &sb->checking, key_range(0, sb->accounts), &total, &present);
  if (!s.ok()) co_return s;
  const int64_t initial = 2 * kInitialBalance * static_cast<int64_t>(sb->accounts);
  *ok = total == initial + committed_delta && present == 2 * sb->accounts;
  *line = fmt::format(
      "smallbank invariant: total money {} = initial {} + net committed deposits {}: {} "
      "({} of {} rows)",
      total, initial, committed_delta, *ok ? "conserved" : "VIOLATED", present, 2 * sb->accounts);
  co_return OkStatus();
}

Task<Status> check_tatp(TxnClient* tc, const Tatp* tp, int64_t cf_delta, std::string* line,
                        bool* ok) {
  int64_t sum = 0;
  uint64_t subs = 0, ai = 0, sf = 0, cf = 0;
  std::vector<uint64_t> quad, triple;
  for (uint64_t s_id = 1; s_id <= tp->subscribers; ++s_id) {
    for (uint64_t t = 1; t <= 4; ++t) {
      quad.push_back(sf_key(s_id, t));
      for (uint64_t st = 0; st < 24; st += 8) triple.push_back(cf_key(s_id, t, st));
    }
  }
  Status s = co_await scan(tc, &tp->subscriber, key_range(1, tp->subscribers + 1), &sum, &subs);
  if (s.ok()) s = co_await scan(tc, &tp->access, quad, &sum, &ai);
  if (s.ok()) s = co_await scan(tc, &tp->facility, quad, &sum, &sf);
  if (s.ok()) s = co_await scan(tc, &tp->forwarding, triple, &sum, &cf);
  if (!s.ok()) co_return s;
  const int64_t want_cf = static_cast<int64_t>(tp->loaded_cf) + cf_delta;
  *ok = subs == tp->subscribers && ai == tp->loaded_ai && sf == tp->loaded_sf &&
        static_cast<int64_t>(cf) == want_cf;
  *line = fmt::format(
      "tatp record counts: subscriber {}/{} access_info {}/{} special_facility {}/{} "
      "call_forwarding {}/{} (loaded {} + inserted - deleted {}): {}",
      subs, tp->subscribers, ai, tp->loaded_ai, sf, tp->loaded_sf, cf, want_cf, tp->loaded_cf,
      cf_delta, *ok ? "OK" : "WRONG");
  co_return OkStatus();
}

Task<Status> create_tables(client::ThreadClient* c, const BenchTxnFlags& f, SmallBank* sb,
                           Tatp* tp) {
  struct Spec {
    Table* table;
    const char* name;
    uint32_t bytes;
    uint64_t capacity;
  };
  std::vector<Spec> specs;
  if (f.workload == "smallbank") {
    specs = {{&sb->savings, "smallbank.savings", 8, sb->accounts},
             {&sb->checking, "smallbank.checking", 8, sb->accounts}};
  } else {
    const uint64_t n = tp->subscribers + 1;
    specs = {{&tp->subscriber, "tatp.subscriber", kSubscriberBytes, n},
             {&tp->sec, "tatp.sec_subscriber", 8, n},
             {&tp->access, "tatp.access_info", kAccessInfoBytes, 3 * n},
             {&tp->facility, "tatp.special_facility", kSpecialFacilityBytes, 3 * n},
             {&tp->forwarding, "tatp.call_forwarding", kCallForwardingBytes, 5 * n}};
  }
  for (const Spec& s : specs) {
    txn::TableOptions o;
    o.record_bytes = s.bytes;
    o.capacity = s.capacity;
    o.temporary = true;  // bound to the main thread's sessions: gone when the run ends
    auto t = co_await Table::create(c, s.name, o);
    if (!t.ok()) co_return t.status();
    *s.table = std::move(*t);
  }
  co_return OkStatus();
}

}  // namespace

CLI::App* add_bench_txn(CLI::App* bench, BenchTxnFlags* f) {
  CLI::App* sub = bench->add_subcommand("txn", "distributed transactions (FORD): smallbank | tatp");
  add_bench_flags(sub, &f->bench, "measured seconds");
  sub->add_option("--workload", f->workload, "smallbank | tatp")
      ->check(CLI::IsMember({"smallbank", "tatp"}));
  sub->add_option("--coroutines", f->coroutines, "transactions in flight per thread")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--scale", f->scale, "x 100,000 accounts (smallbank) or subscribers (tatp)")
      ->check(CLI::Range(0.0001, 100.0));
  sub->add_option("--max-attempts", f->max_attempts, "attempts per transaction")
      ->check(CLI::Range(1, 1'000'000));
  return sub;
}

int run_bench_txn(const BenchTxnFlags& f) {
  const bool smallbank = f.workload == "smallbank";
  Bench bench("txn", f.bench, smallbank ? kSbNames : kTatpNames);
  SmallBank sb;
  Tatp tp;
  sb.accounts = std::max<uint64_t>(100, static_cast<uint64_t>(100000 * f.scale));
  sb.hot = std::max<uint64_t>(1, static_cast<uint64_t>(4000 * f.scale));
  tp.subscribers = std::max<uint64_t>(10, static_cast<uint64_t>(100000 * f.scale));
  const uint64_t rows = smallbank ? 2 * sb.accounts : 12 * tp.subscribers;
  if (int rc = bench.connect(std::max<uint64_t>(256ull << 20, rows * 1024)); rc != 0) return rc;
  auto main_client = bench.cluster()->thread_client();
  if (!main_client.ok()) return bench.fail(1, main_client.status().to_string());
  client::ThreadClient* mc = *main_client;
  Status cs = mc->run(create_tables(mc, f, &sb, &tp));
  if (!cs.ok()) return bench.fail(1, "creating the tables: " + cs.to_string());
  if (!smallbank) tatp_counts(tp.subscribers, &tp);
  Workload w;
  if (smallbank) {
    w.sb = &sb;
  } else {
    w.tp = &tp;
  }
  const uint32_t threads = f.bench.threads;
  const uint64_t first = smallbank ? 0 : 1, last = smallbank ? sb.accounts : tp.subscribers + 1;
  const size_t types = smallbank ? kSbNames.size() : kTatpNames.size();
  std::vector<ThreadState> states(threads);
  for (auto& st : states) st.types.resize(types);
  const uint64_t load_start = now_ns();
  bench.start_threads([&](BenchThread& t, client::ThreadClient* c) {
    auto tc = c->run(TxnClient::create(c));
    if (!tc.ok()) return t.fail(tc.status());
    ThreadState* st = &states[t.index()];
    const uint64_t n = last - first;
    Status s = c->run(load_range(tc->get(), &w, first + n * t.index() / threads,
                                 first + n * (t.index() + 1) / threads, f.coroutines));
    if (!s.ok()) return t.fail(s);
    TxnClient* raw = tc->get();
    t.on_measure([st, raw] {
      for (auto& ts : st->types) ts = TypeStats{};
      st->round_trips_at_measure = raw->counters().round_trips;
    });
    if (!t.arrive_and_wait()) return;
    for (uint32_t i = 0; i < f.coroutines; ++i) {
      Status sp = c->scheduler().spawn(txn_client(&t, raw, &w, i, f.max_attempts, st));
      if (!sp.ok()) t.fail(sp);
    }
    c->scheduler().run_until_idle();
    st->round_trips = raw->counters().round_trips - st->round_trips_at_measure;
    (void)c->run((*tc)->close());
  });
  bench.wait_arrived();
  if (!bench.first_error().ok())
    return bench.fail(1, "loading: " + bench.first_error().to_string());
  const double load_s = (now_ns() - load_start) / 1e9;
  fmt::print(stderr, "txn {}: loaded {} rows in {:.1f} s\n", f.workload, rows, load_s);
  ProgressFormat progress;
  progress.unit = "txn/s";
  bench.run_timed(progress);
  if (!bench.first_error().ok()) return bench.fail(1, bench.first_error().to_string());

  // Results.
  const double secs = bench.seconds();
  TypeStats all;
  std::vector<TypeStats> per(types);
  uint64_t round_trips = 0;
  int64_t delta = 0;
  for (const auto& st : states) {
    round_trips += st.round_trips;
    delta += smallbank ? st.money_delta : st.cf_delta;
    for (size_t i = 0; i < types; ++i) {
      per[i].attempts += st.types[i].attempts;
      per[i].commits += st.types[i].commits;
      per[i].aborts += st.types[i].aborts;
      per[i].rolled_back += st.types[i].rolled_back;
      per[i].given_up += st.types[i].given_up;
    }
  }
  for (const auto& p : per) {
    all.attempts += p.attempts;
    all.commits += p.commits;
    all.aborts += p.aborts;
    all.rolled_back += p.rolled_back;
    all.given_up += p.given_up;
  }
  const auto rate = [](uint64_t part, uint64_t whole) {
    return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
  };
  const double commits_per_s = static_cast<double>(all.commits) / secs;
  const double attempted_per_s = static_cast<double>(all.attempts) / secs;
  const LatencyUs lat = latency_us(bench.histogram_all());
  const double rt_per_commit = rate(round_trips, all.commits);
  auto rec = bench.report_record();
  nlohmann::ordered_json per_type = nlohmann::ordered_json::object();
  for (size_t i = 0; i < types; ++i) {
    const LatencyUs l = latency_us(bench.histogram(static_cast<int>(i)));
    const auto& p = per[i];
    fmt::print(
        "  {:<22} commits/s={:>10.0f} attempted/s={:>10.0f} abort_rate={:.4f} "
        "rolled_back={} given_up={} p50={:.1f}us p99={:.1f}us p999={:.1f}us\n",
        bench.op_names()[i], p.commits / secs, p.attempts / secs, rate(p.aborts, p.attempts),
        p.rolled_back, p.given_up, l.p50, l.p99, l.p999);
    per_type[bench.op_names()[i]] = {{"commits_per_s", p.commits / secs},
                                     {"attempted_per_s", p.attempts / secs},
                                     {"abort_rate", rate(p.aborts, p.attempts)},
                                     {"rolled_back", p.rolled_back},
                                     {"given_up", p.given_up},
                                     {"p50_us", l.p50},
                                     {"p99_us", l.p99},
                                     {"p999_us", l.p999}};
  }
  // The workload's invariant, checked on the main thread once every coordinator has stopped.
  std::string check_line;
  bool check_ok = false;
  {
    auto tc = mc->run(TxnClient::create(mc));
    if (!tc.ok()) return bench.fail(1, "checking: " + tc.status().to_string());
    Status s = smallbank ? mc->run(check_smallbank(tc->get(), &sb, delta, &check_line, &check_ok))
                         : mc->run(check_tatp(tc->get(), &tp, delta, &check_line, &check_ok));
    (void)mc->run((*tc)->close());
    if (!s.ok()) return bench.fail(1, "checking: " + s.to_string());
  }
  fmt::print(
      "txn {}: commits/s={:.0f} attempted/s={:.0f} abort_rate={:.4f} p50={:.1f}us p99={:.1f}us "
      "p999={:.1f}us round_trips/commit={:.2f} threads={} coroutines={} scale={} replicas={}{}\n",
      f.workload, commits_per_s, attempted_per_s, rate(all.aborts, all.attempts), lat.p50, lat.p99,
      lat.p999, rt_per_commit, threads, f.coroutines, f.scale,
      smallbank ? sb.savings.replicas() : tp.subscriber.replicas(), bench.result_suffix());
  fmt::print("{}\n", check_line);
  rec["workload"] = f.workload;
  rec["threads"] = threads;
  rec["coroutines"] = f.coroutines;
  rec["scale"] = f.scale;
  rec["replicas"] = smallbank ? sb.savings.replicas() : tp.subscriber.replicas();
  rec["commits_per_s"] = commits_per_s;
  rec["attempted_per_s"] = attempted_per_s;
  rec["abort_rate"] = rate(all.aborts, all.attempts);
  rec["p50_us"] = lat.p50;
  rec["p99_us"] = lat.p99;
  rec["p999_us"] = lat.p999;
  rec["round_trips_per_commit"] = rt_per_commit;
  rec["per_type"] = per_type;
  rec["invariant"] = check_line;
  rec["invariant_ok"] = check_ok;
  rec["load_s"] = load_s;
  for (Table* t : {&sb.savings, &sb.checking, &tp.subscriber, &tp.sec, &tp.access, &tp.facility,
                   &tp.forwarding}) {
    if (t->valid()) (void)mc->run(t->destroy(mc));
  }
  bench.cluster()->release_thread_client();
  const int rc = bench.finish_report(rec);
  return check_ok ? rc : 1;
}

}  // namespace farmem::apps
