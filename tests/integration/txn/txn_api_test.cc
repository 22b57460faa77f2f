// The transaction API against two real memory nodes: each call, read-your-writes, visibility
// of inserts and erases only after commit, aborts of each kind, replication to the backup, and
// bad input. Steps of several transactions are interleaved from the test thread, so every
// outcome is deterministic.
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "farmem/common/clock.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/txn/transaction.h"
#include "txn_fixture.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using runtime::Task;
using txn::AbortReason;
using txn::Table;
using txn::Transaction;

class TxnApiTest : public TxnTest {
 protected:
  // Inserts key -> value in a transaction of its own.
  void put(const Table& t, uint64_t key, uint64_t value) {
    Transaction x = tc_->begin();
    std::string v = u64_value(value);
    v.resize(t.record_bytes());
    Status s = c_->run(x.insert(t, key, v));
    ASSERT_TRUE(s.ok()) << s.to_string();
    s = c_->run(x.commit());
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  // Reads key in a read-only transaction of its own: the value, or ~0 when absent.
  uint64_t get(const Table& t, uint64_t key) {
    Transaction x = tc_->begin_read_only();
    std::string v;
    Status s = c_->run(x.read(t, key, &v));
    EXPECT_TRUE(s.ok() || s.code() == StatusCode::kNotFound) << s.to_string();
    EXPECT_TRUE(c_->run(x.commit()).ok());
    return s.ok() ? value_u64(v) : ~0ull;
  }
};

TEST_P(TxnApiTest, InsertReadUpdateEraseAndReadYourWrites) {
  Table t = make_table("api", 8, 256);
  Transaction a = tc_->begin();
  std::string v;
  EXPECT_EQ(c_->run(a.read(t, 1, &v)).code(), StatusCode::kNotFound);
  ASSERT_TRUE(c_->run(a.insert(t, 1, u64_value(10))).ok());
  ASSERT_TRUE(c_->run(a.read(t, 1, &v)).ok());  // its own insert
  EXPECT_EQ(value_u64(v), 10u);
  EXPECT_EQ(c_->run(a.insert(t, 1, u64_value(11))).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(c_->run(a.update(t, 1, u64_value(12))).ok());
  ASSERT_TRUE(c_->run(a.read(t, 1, &v)).ok());
  EXPECT_EQ(value_u64(v), 12u);
  ASSERT_TRUE(c_->run(a.insert(t, 2, u64_value(20))).ok());
  ASSERT_TRUE(c_->run(a.commit()).ok());
  EXPECT_EQ(get(t, 1), 12u);
  EXPECT_EQ(get(t, 2), 20u);

  Transaction b = tc_->begin();
  ASSERT_TRUE(c_->run(b.read_for_update(t, 1, &v)).ok());
  EXPECT_EQ(value_u64(v), 12u);
  ASSERT_TRUE(c_->run(b.update(t, 1, u64_value(13))).ok());
  ASSERT_TRUE(c_->run(b.erase(t, 2)).ok());
  EXPECT_EQ(c_->run(b.read(t, 2, &v)).code(), StatusCode::kNotFound);  // its own erase
  EXPECT_EQ(c_->run(b.erase(t, 2)).code(), StatusCode::kNotFound);
  EXPECT_EQ(c_->run(b.update(t, 3, u64_value(1))).code(), StatusCode::kNotFound);
  EXPECT_EQ(c_->run(b.erase(t, 3)).code(), StatusCode::kNotFound);
  ASSERT_TRUE(c_->run(b.commit()).ok());
  EXPECT_EQ(get(t, 1), 13u);
  EXPECT_EQ(get(t, 2), ~0ull);

  // Erase then insert again in one transaction; insert then erase leaves nothing.
  Transaction d = tc_->begin();
  ASSERT_TRUE(c_->run(d.erase(t, 1)).ok());
  ASSERT_TRUE(c_->run(d.insert(t, 1, u64_value(14))).ok());
  ASSERT_TRUE(c_->run(d.insert(t, 5, u64_value(50))).ok());
  ASSERT_TRUE(c_->run(d.erase(t, 5)).ok());
  ASSERT_TRUE(c_->run(d.commit()).ok());
  EXPECT_EQ(get(t, 1), 14u);
  EXPECT_EQ(get(t, 5), ~0ull);
}

TEST_P(TxnApiTest, InsertsAndErasesAreInvisibleUntilCommit) {
  Table t = make_table("visibility", 8, 256);
  put(t, 7, 70);
  Transaction w = tc_->begin();
  ASSERT_TRUE(c_->run(w.insert(t, 8, u64_value(80))).ok());
  ASSERT_TRUE(c_->run(w.update(t, 7, u64_value(71))).ok());
  // Another transaction never sees the uncommitted insert or update: it aborts on the locks.
  Transaction r = tc_->begin_read_only();
  std::string v;
  Status s = c_->run(r.read(t, 8, &v));
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_EQ(r.reason(), AbortReason::kInvisible);
  Transaction r2 = tc_->begin_read_only();
  s = c_->run(r2.read(t, 7, &v));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(r2.reason(), AbortReason::kLockConflict);
  ASSERT_TRUE(c_->run(w.commit()).ok());
  EXPECT_EQ(get(t, 8), 80u);
  EXPECT_EQ(get(t, 7), 71u);

  Transaction e = tc_->begin();
  ASSERT_TRUE(c_->run(e.erase(t, 8)).ok());
  ASSERT_TRUE(c_->run(e.abort()).code() == StatusCode::kAborted);
  EXPECT_EQ(e.reason(), AbortReason::kUserAbort);
  EXPECT_EQ(get(t, 8), 80u);  // the aborted erase changed nothing and released its locks
  Transaction e2 = tc_->begin();
  ASSERT_TRUE(c_->run(e2.erase(t, 8)).ok());
  ASSERT_TRUE(c_->run(e2.commit()).ok());
  EXPECT_EQ(get(t, 8), ~0ull);
}

TEST_P(TxnApiTest, EachAbortReason) {
  Table t = make_table("aborts", 8, 256);
  put(t, 1, 100);
  put(t, 2, 200);
  std::string v;

  // Lock conflict: two writers of one record.
  Transaction a = tc_->begin();
  Transaction b = tc_->begin();
  ASSERT_TRUE(c_->run(a.read_for_update(t, 1, &v)).ok());
  Status s = c_->run(b.update(t, 1, u64_value(1)));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(b.reason(), AbortReason::kLockConflict);
  EXPECT_EQ(c_->run(b.commit()).code(), StatusCode::kAborted);  // stays aborted
  ASSERT_TRUE(c_->run(a.commit()).ok());  // read_for_update without update: just unlocks

  // Version changed: a reader whose record was overwritten before it committed.
  Transaction r = tc_->begin();
  ASSERT_TRUE(c_->run(r.read(t, 1, &v)).ok());
  ASSERT_TRUE(c_->run(r.update(t, 2, u64_value(201))).ok());
  Transaction w = tc_->begin();
  ASSERT_TRUE(c_->run(w.update(t, 1, u64_value(101))).ok());
  ASSERT_TRUE(c_->run(w.commit()).ok());
  s = c_->run(r.commit());
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_EQ(r.reason(), AbortReason::kVersionChanged);
  EXPECT_EQ(get(t, 2), 200u);  // nothing of the aborted transaction applied
  EXPECT_EQ(get(t, 1), 101u);

  // Version changed between a read and a later read_for_update of the same record.
  Transaction r3 = tc_->begin();
  ASSERT_TRUE(c_->run(r3.read(t, 1, &v)).ok());
  Transaction w3 = tc_->begin();
  ASSERT_TRUE(c_->run(w3.update(t, 1, u64_value(102))).ok());
  ASSERT_TRUE(c_->run(w3.commit()).ok());
  s = c_->run(r3.read_for_update(t, 1, &v));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(r3.reason(), AbortReason::kVersionChanged);

  // Invisible: a key another transaction is inserting.
  Transaction ins = tc_->begin();
  ASSERT_TRUE(c_->run(ins.insert(t, 9, u64_value(9))).ok());
  Transaction look = tc_->begin();
  s = c_->run(look.read(t, 9, &v));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(look.reason(), AbortReason::kInvisible);
  ASSERT_TRUE(c_->run(ins.commit()).ok());

  // User abort.
  Transaction u = tc_->begin();
  ASSERT_TRUE(c_->run(u.update(t, 1, u64_value(0))).ok());
  s = c_->run(u.abort());
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(u.reason(), AbortReason::kUserAbort);
  EXPECT_EQ(get(t, 1), 102u);
  // Every lock of the aborted transactions was released: a writer gets each record.
  Transaction all = tc_->begin();
  for (uint64_t k : {1, 2, 9}) ASSERT_TRUE(c_->run(all.read_for_update(t, k, &v)).ok()) << k;
  ASSERT_TRUE(c_->run(all.commit()).ok());
}

TEST_P(TxnApiTest, ReadOnlyTransactionsTakeNoLocks) {
  Table t = make_table("readonly", 8, 64);
  put(t, 1, 1);
  put(t, 2, 2);
  put(t, 3, 3);
  std::string v;
  for (int i = 0; i < 2; ++i) {  // warm the address cache: reads then go to the slot itself
    Transaction warm = tc_->begin_read_only();
    for (uint64_t k : {1, 2, 3}) ASSERT_TRUE(c_->run(warm.read(t, k, &v)).ok());
    ASSERT_TRUE(c_->run(warm.commit()).ok());
  }
  Transaction r = tc_->begin_read_only();
  ASSERT_TRUE(c_->run(r.read(t, 1, &v)).ok());
  ASSERT_TRUE(c_->run(r.read(t, 2, &v)).ok());
  EXPECT_EQ(c_->run(r.update(t, 1, u64_value(2))).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c_->run(r.insert(t, 4, u64_value(2))).code(), StatusCode::kInvalidArgument);
  Transaction single = tc_->begin_read_only();
  ASSERT_TRUE(c_->run(single.read(t, 3, &v)).ok());
  EXPECT_EQ(v, u64_value(3));
  // A writer is not blocked by the readers...
  Transaction w = tc_->begin();
  ASSERT_TRUE(c_->run(w.update(t, 1, u64_value(9))).ok());
  ASSERT_TRUE(c_->run(w.update(t, 3, u64_value(9))).ok());
  ASSERT_TRUE(c_->run(w.commit()).ok());
  // ... and the reader of two records, one of them now stale, aborts at validation.
  EXPECT_EQ(c_->run(r.commit()).code(), StatusCode::kAborted);
  EXPECT_EQ(r.reason(), AbortReason::kVersionChanged);
  // The reader of one record: over TCP it read a stable snapshot and is serialized at that read
  // (before the writer) without validation; one-sided over shared memory it validates, and its
  // stale read aborts.
  const uint64_t unvalidated = tc_->counters().unvalidated_commits;
  if (GetParam().name == std::string("tcp")) {
    EXPECT_TRUE(c_->run(single.commit()).ok());
    EXPECT_EQ(tc_->counters().unvalidated_commits, unvalidated + 1);
  } else {
    EXPECT_EQ(c_->run(single.commit()).code(), StatusCode::kAborted);
    EXPECT_EQ(single.reason(), AbortReason::kVersionChanged);
    EXPECT_EQ(tc_->counters().unvalidated_commits, unvalidated);
  }
}

TEST_P(TxnApiTest, CommitsReachPrimaryAndBackup) {
  Table t = make_table("replicas", 24, 64);
  ASSERT_EQ(t.replicas(), 2u);
  for (uint64_t k = 0; k < 20; ++k) put(t, k, k * 3);
  Transaction x = tc_->begin();
  ASSERT_TRUE(c_->run(x.update(t, 4, std::string(24, 'u'))).ok());
  ASSERT_TRUE(c_->run(x.erase(t, 5)).ok());
  ASSERT_TRUE(c_->run(x.commit()).ok());
  uint64_t present = 0;
  for (uint64_t b = 0; b < t.buckets(); ++b) {
    std::string p(t.bucket_bytes(), '\0'), q(t.bucket_bytes(), '\0');
    ASSERT_TRUE(sync_wait(c_->read(t.bucket_address(b, 0), p.data(), p.size())).ok());
    ASSERT_TRUE(sync_wait(c_->read(t.bucket_address(b, 1), q.data(), q.size())).ok());
    EXPECT_NE(t.bucket_address(b, 0).node(), t.bucket_address(b, 1).node());
    // Identical apart from the lock words (all free now, so identical outright).
    EXPECT_EQ(p, q) << "bucket " << b;
    for (uint32_t s = 0; s < txn::kSlotsPerBucket; ++s) {
      txn::SlotHeader h;
      std::memcpy(&h, p.data() + sizeof(txn::BucketHeader) + s * t.slot_bytes(), sizeof(h));
      present += (h.flags & txn::kSlotPresent) ? 1 : 0;
    }
  }
  EXPECT_EQ(present, 19u);
}

TEST_P(TxnApiTest, BadInput) {
  Table t = make_table("bad", 8, 64);
  auto dup = c_->run(Table::create(c_, "bad", txn::TableOptions{}));
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  auto unknown = c_->run(Table::open(c_, "no-such-table"));
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  txn::TableOptions o;
  o.record_bytes = 0;
  EXPECT_EQ(c_->run(Table::create(c_, "zero", o)).status().code(), StatusCode::kInvalidArgument);
  o.record_bytes = txn::kMaxRecordBytes + 1;
  EXPECT_EQ(c_->run(Table::create(c_, "huge", o)).status().code(), StatusCode::kInvalidArgument);
  o.record_bytes = 8;
  o.replicas = 3;
  EXPECT_EQ(c_->run(Table::create(c_, "three", o)).status().code(), StatusCode::kInvalidArgument);

  auto opened = c_->run(Table::open(c_, "bad"));
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  EXPECT_EQ(opened->record_bytes(), 8u);
  Transaction x = tc_->begin();
  EXPECT_EQ(c_->run(x.insert(*opened, 1, "short")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c_->run(x.insert(*opened, 1, std::string(9, 'x'))).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c_->run(x.insert(*opened, 1, std::string(100000, 'x'))).code(),
            StatusCode::kInvalidArgument);
  Table never;  // not created or opened
  std::string v;
  EXPECT_EQ(c_->run(x.read(never, 1, &v)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c_->run(x.update(never, 1, u64_value(1))).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(c_->run(x.insert(*opened, 1, u64_value(1))).ok());
  ASSERT_TRUE(c_->run(x.commit()).ok());
  EXPECT_EQ(get(t, 1), 1u);  // written through one handle, read through the other
  // A full bucket is an error of the insert, not an abort.
  Table tiny = make_table("tiny", 8, 1);
  Transaction f = tc_->begin();
  Status s;
  uint64_t inserted = 0;
  for (uint64_t k = 0; k < 1000 && s.ok(); ++k) {
    s = c_->run(f.insert(tiny, k, u64_value(k)));
    if (s.ok()) ++inserted;
  }
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_GE(inserted, txn::kSlotsPerBucket);
  ASSERT_TRUE(c_->run(f.commit()).ok());
  EXPECT_EQ(c_->run(t.destroy(c_)).code(), StatusCode::kOk);
  EXPECT_EQ(c_->run(Table::open(c_, "bad")).status().code(), StatusCode::kNotFound);
}

Task<Status> update_key_5(Transaction& t, const Table* table) {
  Status s = co_await t.update(*table, 5, u64_value(55));
  co_return s;
}
struct UpdateKey5 {
  const Table* table;
  Task<Status> operator()(Transaction& t) const { return update_key_5(t, table); }
};
Task<Status> user_abort(Transaction& t) {
  Status s = co_await t.abort();
  co_return s;
}
struct UserAbort {
  Task<Status> operator()(Transaction& t) const { return user_abort(t); }
};

TEST_P(TxnApiTest, RunTransactionRetriesOnlyConflicts) {
  Table t = make_table("retries", 8, 64);
  uint32_t attempts = 0;
  // kNotFound is the body's answer: returned at once, not retried.
  Status s = c_->run(txn::run_transaction(tc_.get(), 5, UpdateKey5{&t}, &attempts));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(attempts, 1u);
  put(t, 5, 50);
  // A user abort is not retried either.
  s = c_->run(txn::run_transaction(tc_.get(), 5, UserAbort{}, &attempts));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(attempts, 1u);
  // A lock held elsewhere: every attempt conflicts, the caller's bound ends it.
  Transaction holder = tc_->begin();
  std::string v;
  ASSERT_TRUE(c_->run(holder.read_for_update(t, 5, &v)).ok());
  s = c_->run(txn::run_transaction(tc_.get(), 3, UpdateKey5{&t}, &attempts));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(attempts, 3u);
  ASSERT_TRUE(c_->run(holder.commit()).ok());
  // Free again: it commits at the first attempt.
  s = c_->run(txn::run_transaction(tc_.get(), 3, UpdateKey5{&t}, &attempts));
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(attempts, 1u);
  EXPECT_EQ(get(t, 5), 55u);
}

TEST_P(TxnApiTest, BoundsAreErrors) {
  Table t = make_table("bounds", 8, 64);
  for (uint64_t k = 0; k < 8; ++k) put(t, k, k);
  txn::TxnClientOptions o;
  o.max_records = 4;
  o.log_slot_bytes = 256;  // a 64-byte header and three 64-byte entries (two replicas, 8 B)
  o.log_slots = 1;
  auto small = c_->run(txn::TxnClient::create(c_, o));
  ASSERT_TRUE(small.ok()) << small.status().to_string();
  std::string v;
  Transaction r = (*small)->begin_read_only();
  for (uint64_t k = 0; k < 4; ++k) ASSERT_TRUE(c_->run(r.read(t, k, &v)).ok());
  EXPECT_EQ(c_->run(r.read(t, 4, &v)).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(c_->run(r.commit()).ok());
  // Four updates need 64 + 4 x 64 bytes of log: more than a 256-byte slot.
  Transaction w = (*small)->begin();
  for (uint64_t k = 0; k < 4; ++k) ASSERT_TRUE(c_->run(w.update(t, k, u64_value(100))).ok());
  // The only log slot is this transaction's: a second one cannot lock anything.
  Transaction w2 = (*small)->begin();
  EXPECT_EQ(c_->run(w2.update(t, 6, u64_value(1))).code(), StatusCode::kResourceExhausted);
  Status s = c_->run(w.commit());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_TRUE(w.finished());
  EXPECT_EQ(get(t, 0), 0u);  // nothing applied, every lock released:
  Transaction again = (*small)->begin();
  ASSERT_TRUE(c_->run(again.update(t, 0, u64_value(100))).ok());
  ASSERT_TRUE(c_->run(again.commit()).ok());
  EXPECT_EQ(get(t, 0), 100u);
  EXPECT_TRUE(c_->run((*small)->close()).ok());
  o.max_records = 0;
  EXPECT_EQ(c_->run(txn::TxnClient::create(c_, o)).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(TxnApiTest, StaleAddressCacheNeverAbortsForever) {
  Table t = make_table("stale", 8, 1);
  uint64_t k1 = 1, k2 = 2;
  while (t.bucket_of(k2) != t.bucket_of(k1)) ++k2;
  put(t, k2, 2);  // cached: k2 -> the bucket's first slot
  {
    Transaction e = tc_->begin();
    ASSERT_TRUE(c_->run(e.erase(t, k2)).ok());
    ASSERT_TRUE(c_->run(e.commit()).ok());
  }
  put(t, k1, 1);  // takes the freed first slot: the cache entry of k2 is now stale
  // Locking k1 and then asking for k2 must not conflict with our own lock on k1's slot.
  Transaction x = tc_->begin();
  std::string v;
  ASSERT_TRUE(c_->run(x.read_for_update(t, k1, &v)).ok());
  EXPECT_EQ(c_->run(x.read_for_update(t, k2, &v)).code(), StatusCode::kNotFound);
  ASSERT_TRUE(c_->run(x.insert(t, k2, u64_value(22))).ok());
  ASSERT_TRUE(c_->run(x.commit()).ok());
  EXPECT_EQ(get(t, k1), 1u);
  EXPECT_EQ(get(t, k2), 22u);
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnApiTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing

namespace farmem::testing {
namespace {

// A memory node that dies: transactions that need it fail with the node's error within their
// deadlines (no hang); read-only transactions whose primaries live on the surviving node still
// commit. (Promoting a backup is not built yet.)
class TxnNodeFailureTest : public TxnTest {};

TEST_P(TxnNodeFailureTest, DeadNodeIsAnErrorNotAHang) {
  Table t = make_table("failure", 8, 64);
  std::vector<uint64_t> on_survivor, on_dead;
  {
    Transaction x = tc_->begin();
    for (uint64_t k = 0; k < 40; ++k) {
      ASSERT_TRUE(c_->run(x.insert(t, k, u64_value(k))).ok());
      (t.bucket_address(t.bucket_of(k), 0).node() == 0 ? on_survivor : on_dead).push_back(k);
    }
    ASSERT_TRUE(c_->run(x.commit()).ok());
  }
  ASSERT_FALSE(on_survivor.empty());
  ASSERT_FALSE(on_dead.empty());
  servers_[1]->signal(SIGKILL);
  // Wait until this client has noticed (its session's heartbeat; a hang guard bounds the wait).
  const uint16_t dead = t.bucket_address(t.bucket_of(on_dead.front()), 0).node();
  for (int i = 0; i < 3000 && c_->node_status(dead).ok(); ++i) {
    c_->check_liveness(now_ns());
    c_->scheduler().poll_once();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(c_->node_status(dead).ok());
  std::string v;
  // Reads of records whose primary was on the dead node fail with an error, not kAborted.
  Transaction r = tc_->begin_read_only();
  Status s = c_->run(r.read(t, on_dead.front(), &v));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_TRUE(r.finished());
  // A write whose backup was on the dead node cannot reach every replica: an error.
  Transaction w = tc_->begin();
  s = c_->run(w.update(t, on_survivor.front(), u64_value(7)));
  if (s.ok()) s = c_->run(w.commit());
  EXPECT_FALSE(s.ok());
  // Read-only transactions on the surviving primaries still commit.
  Transaction ok = tc_->begin_read_only();
  for (size_t i = 1; i < on_survivor.size(); ++i) {
    ASSERT_TRUE(c_->run(ok.read(t, on_survivor[i], &v)).ok()) << on_survivor[i];
    EXPECT_EQ(value_u64(v), on_survivor[i]);
  }
  EXPECT_TRUE(c_->run(ok.commit()).ok());
  tc_.reset();  // its log slots may be on the dead node: nothing to close
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnNodeFailureTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
