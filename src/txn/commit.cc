// Transaction: validation and commit (docs/formats/txn.md "Protocol", steps 2 to 5): validate
// the read set, plan the redo log, write it, write the images to every live replica, unlock.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "context.h"
#include "farmem/client/cluster.h"
#include "farmem/common/check.h"
#include "farmem/ds/common/durable.h"
#include "farmem/txn/transaction.h"
#include "redo_log.h"
#include "transaction_entries.h"

namespace farmem::txn {

using runtime::Task;

namespace {

// The log record of a committed slot write: the slot from its version on, with the version
// after `version` (+1), to every live replica of bucket b.
LogRecord slot_write_record(const Table& t, uint64_t b, uint32_t slot, uint64_t key,
                            uint64_t version, bool erase, const std::string& value) {
  LogRecord r{t.primary_slot(b, slot).pack(), {}, {}};
  r.image.assign(t.slot_bytes() - kSlotImageOffset, '\0');
  SlotHeader h{};
  h.version = version + 1;
  FARMEM_ASSERT(h.version > version, "slot versions only grow");
  h.key = key;
  h.flags = erase ? 0 : kSlotPresent;
  std::memcpy(r.image.data(), reinterpret_cast<const char*>(&h) + kSlotImageOffset,
              sizeof(h) - kSlotImageOffset);
  if (!erase) {
    std::memcpy(r.image.data() + sizeof(h) - kSlotImageOffset, value.data(), value.size());
  }
  for (uint32_t rank = 0; rank < t.replicas(); ++rank) {
    if (t.replica_live(b, rank)) {
      r.targets.push_back((t.slot_address(b, slot, rank) + kSlotImageOffset).pack());
    }
  }
  return r;
}

// The log record of a bucket whose key set changed: its version word (+1) to every live replica.
LogRecord bucket_version_record(const Table& t, uint64_t b, uint64_t version) {
  LogRecord r{t.primary_bucket(b).pack(), {}, {}};
  const uint64_t v = version + 1;
  FARMEM_ASSERT(v > version, "bucket versions only grow");
  r.image.assign(reinterpret_cast<const char*>(&v), sizeof(v));
  for (uint32_t rank = 0; rank < t.replicas(); ++rank) {
    if (t.replica_live(b, rank)) {
      r.targets.push_back((t.bucket_address(b, rank) + kBucketVersionOffset).pack());
    }
  }
  return r;
}

// Checked before the log: the transaction aborts cleanly instead of committing with a replica
// it cannot write.
Status check_replicas_up(const client::Cluster& cluster, const std::vector<LogRecord>& records) {
  for (const LogRecord& r : records) {
    for (uint64_t target : r.targets) {
      const uint16_t node = GlobalAddress::unpack(target).node();
      if (cluster.is_down(node)) {
        return Unavailable(fmt::format(
            "a replica of this transaction's writes is on memory node {}, which is down; "
            "promote its backups (farmem txn promote) and refresh the table",
            node));
      }
    }
  }
  return OkStatus();
}

}  // namespace

// One batch of 16-byte reads {lock, version} of everything read and not locked; a foreign lock
// or a changed version aborts.
Task<Status> Transaction::validate() {
  std::vector<BucketHeader> seen(reads_.size());  // {lock, version} of slot or bucket header
  for (size_t i = 0; i < reads_.size(); i += client::Batch::kMaxOps) {
    client::Batch batch(*ctx_->client);
    const size_t end = std::min(reads_.size(), i + client::Batch::kMaxOps);
    for (size_t j = i; j < end; ++j) {
      const ReadEntry& r = reads_[j];
      const GlobalAddress a = r.slot < kSlotsPerBucket ? r.table->primary_slot(r.bucket, r.slot)
                                                       : r.table->primary_bucket(r.bucket);
      (void)batch.read(a, &seen[j], sizeof(BucketHeader));
    }
    Status s = co_await batch.wait();
    ++ctx_->counters.round_trips;
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
  }
  for (size_t j = 0; j < reads_.size(); ++j) {
    const ReadEntry& r = reads_[j];
    bool mine = false;
    if (r.slot == kSlotsPerBucket) mine = find_bucket(*r.table, r.bucket) != nullptr;
    if (seen[j].lock != 0 && !mine) {
      Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "read record locked"));
      co_return e;
    }
    if (seen[j].version != r.version) {
      Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, "read record changed"));
      co_return e;
    }
  }
  co_return OkStatus();
}

// The redo log of the commit: one record per lock held (records only locked have no image),
// slots first, then buckets; kUnavailable when a replica to write is on a node named down,
// kResourceExhausted when the log does not fit a log slot.
Status Transaction::plan_commit(CommitPlan* plan) {
  std::vector<LogRecord> records;
  for (const auto& w : writes_) {
    const Table& t = *w.table;
    if (w.kind == Kind::kLocked) {
      records.push_back(LogRecord{t.primary_slot(w.bucket, w.slot).pack(), {}, {}});
      continue;
    }
    records.push_back(
        slot_write_record(t, w.bucket, w.slot, w.key, w.version, w.kind == Kind::kErase, w.value));
    if (w.kind == Kind::kInsert) ctx_->cache.remember(t, w.key, w.slot);
  }
  for (const auto& b : buckets_) {
    if (!b.changed) {
      records.push_back(LogRecord{b.table->primary_bucket(b.bucket).pack(), {}, {}});
      continue;
    }
    records.push_back(bucket_version_record(*b.table, b.bucket, b.version));
  }
  FARMEM_TRY(check_replicas_up(ctx_->client->cluster(), records));
  const uint64_t bytes = encoded_log_bytes(records);
  if (bytes > ctx_->options.log_slot_bytes) {
    return ResourceExhausted(
        fmt::format("the transaction's redo log needs {} bytes; log slots hold {}", bytes,
                    ctx_->options.log_slot_bytes));
  }
  encode_log(records, bytes, id_, &plan->log, &plan->writes);
  return OkStatus();
}

// Every image to every live replica, in batches of at most client::Batch::kMaxOps; on durable
// nodes they are then persisted, before any lock is released (a lock seen free after a node's
// restart must never hide a committed image that was lost).
Task<Status> Transaction::write_images(const CommitPlan& plan) {
  const std::vector<ImageWrite>& ops = plan.writes;
  for (size_t i = 0; i < ops.size(); i += client::Batch::kMaxOps) {
    client::Batch batch(*ctx_->client);
    const size_t end = std::min(ops.size(), i + client::Batch::kMaxOps);
    for (size_t j = i; j < end; ++j) (void)batch.write(ops[j].addr, ops[j].src, ops[j].bytes);
    Status s = co_await batch.wait();
    ++ctx_->counters.round_trips;
    FARMEM_CO_TRY(s);
  }
  if (!ds::any_node_durable(ctx_->client)) co_return OkStatus();
  std::vector<ds::PersistRange> ranges;
  ranges.reserve(ops.size());
  for (const ImageWrite& w : ops) ranges.push_back({w.addr, w.bytes});
  // On the log's node alone, logging them in order after the log is enough (a power loss keeps a
  // prefix of that node's log); across nodes each must be stable before any unlock.
  const uint16_t log_node = ctx_->logs.address(log_slot_.index).node();
  Status s = co_await ds::persist_all(ctx_->client, ranges, all_on(plan, log_node));
  ++ctx_->counters.round_trips;
  co_return s;
}

bool Transaction::all_on(const CommitPlan& plan, uint16_t node) const {
  for (const GlobalAddress& w : lock_words()) {
    if (w.node() != node) return false;
  }
  for (const ImageWrite& w : plan.writes) {
    if (w.addr.node() != node) return false;
  }
  return true;
}

// The redo log from its state word on. On durable nodes the commit point is this log being
// stable with every lock word behind it (FORD's durable commit): the lock words of other nodes
// are made stable first, those of the log's node in the same request, before the log, so that a
// restarted node never holds the complete log of a transaction whose locks it lost.
Task<Status> Transaction::write_log(const CommitPlan& plan, GlobalAddress log_at, uint64_t bytes) {
  client::ThreadClient* c = ctx_->client;
  if (!ds::any_node_durable(c)) {
    Status s = co_await c->write(log_at, plan.log.data() + kLogStateOffset, bytes);
    ++ctx_->counters.round_trips;
    co_return s;
  }
  std::vector<ds::PersistRange> elsewhere;
  std::vector<ds::PersistRange> here;  // persisted in this order: the lock words, then the log
  for (const GlobalAddress& w : lock_words()) {
    (w.node() == log_at.node() ? here : elsewhere).push_back({w, kLockWordBytes});
  }
  if (!elsewhere.empty()) {
    FARMEM_CO_TRY(co_await ds::persist_all(c, elsewhere));
    ++ctx_->counters.round_trips;
  }
  FARMEM_CO_TRY(co_await c->write(log_at, plan.log.data() + kLogStateOffset, bytes));
  ++ctx_->counters.round_trips;
  if (!ds::node_durable(c, log_at.node())) co_return OkStatus();
  here.push_back({log_at, bytes});
  Status s = co_await ds::persist_all(c, here);
  ++ctx_->counters.round_trips;
  co_return s;
}

// Committed (the log is complete) but not applied everywhere: the locks stay, naming the log,
// and the slot is never reused; recovery rolls it forward once this coordinator ends.
void Transaction::keep_for_recovery(Status s) {
  log_slot_.retire();
  writes_.clear();
  buckets_.clear();
  finished_ = true;
  reason_ = AbortReason::kError;
  abort_status_ = std::move(s);
}

Task<Status> Transaction::commit() {
  if (finished_) co_return finished_status();
  // A read-only transaction of one stable snapshot is serialized at that read.
  const bool read_only = writes_.empty() && buckets_.empty();
  Status s;
  if (read_only && reads_.size() == 1 && reads_[0].stable) {
    ++ctx_->counters.unvalidated_commits;
  } else {
    s = co_await validate();
    FARMEM_CO_TRY(s);
  }
  if (!read_only) {
    CommitPlan plan;
    s = plan_commit(&plan);
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    ctx_->crash.point(CrashHook::At::kBeforeLog);
    // The redo log, from the state word on (the owner word stays): once it is complete at the
    // node, the transaction is committed whatever happens to this coordinator.
    ctx_->logs.set_committing(log_slot_.index);
    log_written_ = true;
    const GlobalAddress log_at = ctx_->logs.address(log_slot_.index) + kLogStateOffset;
    s = co_await write_log(plan, log_at, plan.log.size() - kLogStateOffset);
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    ctx_->crash.point(CrashHook::At::kAfterLog);
    s = co_await write_images(plan);
    if (!s.ok()) {
      keep_for_recovery(s);
      co_return s;
    }
    ctx_->crash.point(CrashHook::At::kAfterWrite);
    s = co_await release_all();
    if (!s.ok()) log_slot_.retire();
  }
  log_slot_.reset();
  finished_ = true;
  ++ctx_->counters.commits;
  co_return s;
}

}  // namespace farmem::txn
