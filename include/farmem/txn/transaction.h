// Serializable distributed transactions over one-sided operations (FORD's protocol).
//
//   auto tc = co_await TxnClient::create(c);      // one per thread: ids, cache, log slots
//   Transaction t = (*tc)->begin();               // or begin_read_only()
//   std::string v;
//   Status s = co_await t.read_for_update(accounts, key, &v);
//   ... s = co_await t.update(accounts, key, new_value);
//   s = co_await t.commit();                      // OK, or kAborted with a reason, or an error
//
// Protocol (docs/formats/txn.md "Protocol"):
//  * Execution. read() fetches the record (the slot through the address cache, or the whole
//    bucket) from its primary and remembers its version; a record locked by another
//    transaction aborts (kLockConflict). read_for_update() CASes the slot's lock word from 0 to
//    the transaction's lock value (its log slot's address) and, ordered after it (fence),
//    reads the slot:
//    FORD's hitchhiked read+lock, one round trip. insert() and erase() also lock the bucket
//    header (the bucket's key set). Writes are buffered locally: a transaction reads its own
//    writes; its inserts and erases become visible to others only at commit.
//  * Validation: the versions (and lock words) of everything read but not locked are read
//    again; any change or foreign lock aborts (kVersionChanged / kLockConflict). A key read as
//    absent is validated by its bucket header's version.
//  * Commit: the redo log goes to the coordinator's log slot (one write); then the new image of
//    each written slot (version + 1) goes to the primary and every backup in one batch, bucket
//    versions of inserts/erases likewise; once all are complete at the nodes, the locks are
//    released and the log slot cleared (one more batch).
//  * Abort: every lock taken is released; nothing was written in place.
// Read-only transactions take no locks: execution reads plus one validation round trip. One
// that reads a single record, from a node whose one-sided operations are served (TCP), reads it
// as a stable snapshot instead ({lock, version}, the slot, {lock, version} again, in one
// message) and commits without validation: it is serialized at that read.
// Serializability: writes hold their locks from execution until after their in-place commit
// (two-phase locking), reads are validated after every lock is held (OCC), so a transaction
// is serialized at its validation point.
//
// Logs and recovery: a transaction's locks name its log slot (TxnClient). Before writing in
// place, commit writes a checksummed redo log (every locked record, its new image and where the
// images go) to that slot with state "committing", so a coordinator that dies at any point
// leaves either no committing log (its locks are simply released by whoever meets them:
// nothing was written in place) or a complete one (the meeting client rolls it forward). See
// TxnClient::recover. A primary's node that dies: txn/promote.h.
//
// An aborted transaction has released everything; further calls return the same kAborted.
// Statuses: kAborted (reason()), kNotFound (reads/updates/erases of absent keys: not an
// abort), kAlreadyExists (insert of a present key), kInvalidArgument (wrong value size, write
// in a read-only transaction, unknown table), kResourceExhausted (bucket full, more than
// max_records records, a redo log larger than a log slot), transport
// errors (the transaction is then aborted too; a transport error after the log was written
// leaves the locks for recovery, see commit()).
// Thread safety: a Transaction belongs to one coroutine; a TxnClient to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/ds/common/retry.h"
#include "farmem/runtime/task.h"
#include "farmem/txn/table.h"

namespace farmem::txn {

enum class AbortReason : uint8_t {
  kNone = 0,
  kLockConflict,    // a lock another transaction holds
  kVersionChanged,  // something read changed before commit
  kInvisible,       // a record being inserted or erased by another transaction
  kUserAbort,       // abort() by the caller
  kError,           // a transport or node error
};
const char* abort_reason_name(AbortReason r);

// Unique across processes and hosts: the coordinator thread's session id with the cluster's
// lowest node (the node hands out each id once) and a per-coordinator sequence number.
struct TxnId {
  uint64_t coordinator = 0;
  uint64_t sequence = 0;
  friend bool operator==(const TxnId&, const TxnId&) = default;
};

struct TxnCounters {
  uint64_t round_trips = 0;  // awaited one-sided operations and batches
  // Read-only transactions of one stable read (served nodes) committed without validation.
  uint64_t unvalidated_commits = 0;
  uint64_t commits = 0;
  uint64_t aborts = 0;
};

class Transaction;
class TxnContext;

struct TxnClientOptions {
  int cache_log2 = 16;             // address cache entries 2^cache_log2 (< 0: none)
  uint32_t log_slots = 32;         // transactions of this coordinator open at once (1..1024)
  uint32_t log_slot_bytes = 8192;  // the largest redo log of one transaction (256..1 MiB, x64)
  uint64_t recovery_check_ns = 20'000'000;  // a lock holder's liveness is asked at most this often
  uint32_t max_records = 1024;  // records (and buckets) one transaction may touch (1..65536)
};

// The coordinator of one thread: transaction ids, the address cache, its log slots on one
// memory node (owned by the persistent object "txn/logs"), and recovery of locks whose holder's
// coordinator has ended. What its transactions and recoveries share (client, options, counters,
// cache, log slots) is its TxnContext (src/txn/context.h).
class TxnClient {
 public:
  static runtime::Task<Result<std::unique_ptr<TxnClient>>> create(client::ThreadClient* c,
                                                                  TxnClientOptions options = {});
  ~TxnClient();
  TxnClient(const TxnClient&) = delete;
  TxnClient& operator=(const TxnClient&) = delete;
  // Frees the log slots on their node; no transaction may be open. Without close() they stay
  // allocated to "txn/logs" (as those of a coordinator that died do).
  runtime::Task<Status> close();

  Transaction begin();
  Transaction begin_read_only();
  client::ThreadClient* client() const { return client_; }
  const TxnCounters& counters() const;
  uint64_t coordinator() const { return coordinator_; }

  // Recovery (runs in this surviving client): if the coordinator whose log slot `holder` is
  // (a lock word's value) has ended, rolls its committing transaction forward from the log
  // (every entry whose lock still names it gets its new images on every replica, then is
  // unlocked) or, if it was not committing, releases `word`. true when it acted; false when the
  // holder is alive or was checked less than recovery_check_ns ago. Transactions call it on a
  // lock conflict.
  runtime::Task<Result<bool>> recover(GlobalAddress word, uint64_t holder);
  // Promotion (txn/promote.h): settles the transaction whose log slot is `holder` if its
  // complete committing log has a lock or a replica on `dead_node` (named down in this client):
  // kBusy when its coordinator's session is still open (it may still write in place),
  // otherwise rolls it forward (true; entries whose primary died are applied by version, see
  // src/txn/recovery.h). false when there is nothing to settle (not committing: nothing of it
  // is in place; or not touching the dead node: recovered as usual when met).
  runtime::Task<Result<bool>> settle_for_promotion(uint64_t holder, uint16_t dead_node);

 private:
  TxnClient(client::ThreadClient* c, std::unique_ptr<TxnContext> ctx);

  client::ThreadClient* client_;
  std::unique_ptr<TxnContext> ctx_;  // shared with its transactions (which hold a pointer)
  uint64_t coordinator_;
  uint64_t next_sequence_ = 1;
};

class Transaction {
 public:
  Transaction(Transaction&&) noexcept;
  Transaction& operator=(Transaction&&) noexcept;
  // Finish every transaction (commit or abort): an unfinished one's locks stay (naming a log
  // slot that is then never reused, so that they are recovered once this coordinator ends).
  ~Transaction();

  const TxnId& id() const { return id_; }
  bool read_only() const { return read_only_; }
  bool finished() const { return finished_; }
  AbortReason reason() const { return reason_; }

  // *value receives the record (table.record_bytes() bytes). kNotFound when absent.
  runtime::Task<Status> read(const Table& table, uint64_t key, std::string* value);
  // As read(), and locks the record for a later update/erase.
  runtime::Task<Status> read_for_update(const Table& table, uint64_t key, std::string* value);
  // value: exactly table.record_bytes() bytes. kNotFound when absent.
  runtime::Task<Status> update(const Table& table, uint64_t key, std::string_view value);
  // kAlreadyExists when present.
  runtime::Task<Status> insert(const Table& table, uint64_t key, std::string_view value);
  // kNotFound when absent.
  runtime::Task<Status> erase(const Table& table, uint64_t key);
  runtime::Task<Status> commit();
  // Releases everything; returns kAborted (kUserAbort).
  runtime::Task<Status> abort();

  // The versions this transaction saw and produced (for history checkers): per record read,
  // (table tag, key, version read); per record written, (tag, key, version read, erased/new).
  struct Access {
    uint32_t tag;
    uint64_t key;
    uint64_t version;  // the version read (for writes: the one replaced)
    bool write;
  };
  std::vector<Access> accesses() const;

 private:
  friend class TxnClient;  // begin() constructs transactions; nothing else
  Transaction(TxnContext* ctx, TxnId id, bool read_only);

  // The read set, write set and bucket locks, and a commit's redo log with the writes it
  // describes (defined in src/txn/transaction_entries.h).
  enum class Kind : uint8_t;
  struct ReadEntry;
  struct WriteEntry;
  struct BucketLock;
  struct CommitPlan;

  // Bookkeeping and aborts (src/txn/transaction.cc; the set lookups inline in
  // transaction_entries.h), execution (src/txn/execution.cc); each step is described where it
  // is defined.
  Status finished_status() const;
  Status check_write(const Table& table, std::string_view value, bool sized) const;
  Status check_room() const;
  Status fail(AbortReason reason, std::string_view what);
  Status fail_error(Status s);
  ReadEntry* find_read(const Table& t, uint64_t key);
  WriteEntry* find_write(const Table& t, uint64_t key);
  BucketLock* find_bucket(const Table& t, uint64_t bucket);
  uint32_t find_in_bucket(const Table& t, uint64_t key) const;
  uint32_t free_slot_in_bucket(const Table& t, uint64_t b) const;
  bool read_locally(const Table& t, uint64_t key, std::string* value, Status* s);
  client::OpAwaitable read_bucket(const Table& t, uint64_t b);
  runtime::Task<Status> read_slot(GlobalAddress a, size_t bytes, bool* stable);
  runtime::Task<Status> bucket_miss(const Table& t, uint64_t key, uint64_t b, Status read);
  runtime::Task<Status> absent(const Table& t, uint64_t key, uint64_t b);
  runtime::Task<Status> abort_locked(GlobalAddress word, uint64_t holder, const char* what);
  runtime::Task<Status> already_present(const Table& t, uint64_t key, uint64_t b, uint32_t slot);
  runtime::Task<Status> lock_and_read(GlobalAddress addr, size_t bytes, std::string* out,
                                      const char* what);
  runtime::Task<Status> unlock_one(GlobalAddress word);
  runtime::Task<Status> lock_record(const Table& t, uint64_t key, WriteEntry** entry);
  uint32_t cached_slot_to_lock(const Table& t, uint64_t key, uint64_t b) const;
  const char* adopt_locked(const Table& t, uint64_t key, uint64_t b, uint32_t slot);
  runtime::Task<Status> lock_bucket(const Table& t, uint64_t b, BucketLock** lock);
  runtime::Task<Status> release_all();
  // Every lock word held (records, then buckets).
  std::vector<GlobalAddress> lock_words() const;
  runtime::Task<Status> finish_abort(Status why);
  Status ensure_log_slot();
  uint64_t lock_value() const;
  void conflict(GlobalAddress word, uint64_t holder) {
    conflict_word_ = word;
    conflict_holder_ = holder;
  }
  // Validation and commit (src/txn/commit.cc).
  runtime::Task<Status> validate();
  Status plan_commit(CommitPlan* plan);
  runtime::Task<Status> write_log(const CommitPlan& plan, GlobalAddress log_at, uint64_t bytes);
  runtime::Task<Status> write_images(const CommitPlan& plan);
  // Whether every lock word and image of the commit is on `node` (the log's).
  bool all_on(const CommitPlan& plan, uint16_t node) const;
  void keep_for_recovery(Status s);

  // A log slot held by a transaction (movable; given back to its coordinator when dropped).
  struct SlotHold {
    static constexpr uint32_t kNone = UINT32_MAX;
    TxnContext* ctx = nullptr;
    uint32_t index = kNone;
    SlotHold() = default;
    explicit SlotHold(TxnContext* c) : ctx(c) {}
    SlotHold(SlotHold&& o) noexcept : ctx(o.ctx), index(std::exchange(o.index, kNone)) {}
    SlotHold& operator=(SlotHold&& o) noexcept {
      std::swap(ctx, o.ctx);
      std::swap(index, o.index);
      return *this;
    }
    ~SlotHold() { reset(); }
    void reset();
    // The slot's log may be stale (a failed clear): never reuse it.
    void retire();
  };

  TxnContext* ctx_ = nullptr;
  SlotHold log_slot_;
  bool log_written_ = false;  // the slot's state may be kLogCommitting: clear it when unlocking
  GlobalAddress conflict_word_;
  uint64_t conflict_holder_ = 0;
  TxnId id_;
  bool read_only_ = false;
  bool finished_ = false;
  AbortReason reason_ = AbortReason::kNone;
  Status abort_status_;
  std::vector<ReadEntry> reads_;
  std::vector<WriteEntry> writes_;
  std::vector<BucketLock> buckets_;
  std::string bucket_;  // scratch: the last bucket read
  std::string slot_;    // scratch: the last slot read
};

// Runs body(Transaction&) -> Task<Status> in fresh transactions until it commits, returns an
// error other than kAborted, or max_attempts attempts aborted (then the last kAborted status),
// backing off between attempts. body must not be a capturing lambda coroutine (docs/runtime.md):
// a plain function, a captureless lambda or a function object whose coroutine copies what it
// needs into its parameters. If body returns OK the transaction is committed here; if body
// returns another status the transaction is aborted and that status returned (kNotFound etc.
// are not retried).
template <typename Body>
runtime::Task<Status> run_transaction(TxnClient* tc, uint32_t max_attempts, Body body,
                                      uint32_t* attempts = nullptr) {
  ds::RetryLoop loop(tc->client(), "transaction", max_attempts);
  for (;;) {
    Transaction t = tc->begin();
    Status s = co_await body(t);
    if (s.ok()) {
      s = co_await t.commit();
    } else if (!t.finished()) {
      Status a = co_await t.abort();
      (void)a;
    }
    if (attempts != nullptr) *attempts = loop.attempts() + 1;
    if (s.code() != StatusCode::kAborted || t.reason() == AbortReason::kUserAbort) {
      loop.succeeded();
      co_return s;
    }
    if (loop.attempts() + 1 >= max_attempts || loop.exhausted()) co_return s;
    co_await loop.retry();
  }
}

}  // namespace farmem::txn
