// Transaction: its lifetime and log slot, its read and write sets, and how it ends when it
// aborts (releasing every lock, then asking recovery about a conflicting holder). Execution is
// in execution.cc, validation and commit in commit.cc; the entry types in
// transaction_entries.h.
#include "farmem/txn/transaction.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "context.h"
#include "farmem/ds/common/durable.h"
#include "transaction_entries.h"

namespace farmem::txn {

using runtime::Task;

const char* abort_reason_name(AbortReason r) {
  switch (r) {
    case AbortReason::kNone:
      return "none";
    case AbortReason::kLockConflict:
      return "lock conflict";
    case AbortReason::kVersionChanged:
      return "version changed";
    case AbortReason::kInvisible:
      return "invisible record";
    case AbortReason::kUserAbort:
      return "user abort";
    case AbortReason::kError:
      return "error";
  }
  return "unknown";
}

// ---- lifetime and the log slot ----

Transaction::Transaction(TxnContext* ctx, TxnId id, bool read_only)
    : ctx_(ctx), log_slot_(ctx), id_(id), read_only_(read_only) {}

// (TxnClient's, here beside the constructor they inline.)
Transaction TxnClient::begin() {
  return Transaction(ctx_.get(), TxnId{coordinator_, next_sequence_++}, false);
}

Transaction TxnClient::begin_read_only() {
  return Transaction(ctx_.get(), TxnId{coordinator_, next_sequence_++}, true);
}

Transaction::Transaction(Transaction&&) noexcept = default;
Transaction& Transaction::operator=(Transaction&&) noexcept = default;

Transaction::~Transaction() {
  if (!finished_ && (!writes_.empty() || !buckets_.empty())) log_slot_.retire();
}

void Transaction::SlotHold::reset() {
  if (index != kNone) ctx->logs.give(std::exchange(index, kNone));
}

void Transaction::SlotHold::retire() {
  if (index != kNone) ctx->logs.retire(std::exchange(index, kNone));
}

// The log slot this transaction's locks name, taken at its first lock (kResourceExhausted when
// all are in use); given back when the transaction ends.
Status Transaction::ensure_log_slot() {
  if (log_slot_.index != SlotHold::kNone) return OkStatus();
  const std::optional<uint32_t> slot = ctx_->logs.take();
  if (!slot.has_value()) {
    return ResourceExhausted(
        fmt::format("all {} log slots of this coordinator are in use", ctx_->options.log_slots));
  }
  log_slot_.index = *slot;
  return OkStatus();
}

// ---- bookkeeping ----

Status Transaction::finished_status() const {
  return abort_status_.ok() ? InvalidArgument("transaction finished") : abort_status_;
}

Status Transaction::check_write(const Table& table, std::string_view value, bool sized) const {
  if (finished_) return finished_status();
  if (read_only_) return InvalidArgument("a read-only transaction cannot write");
  if (!table.valid()) return InvalidArgument("unknown table (not created or opened)");
  if (sized && value.size() != table.record_bytes()) {
    return InvalidArgument(fmt::format("table '{}' holds {}-byte records, not {} bytes",
                                       table.name(), table.record_bytes(), value.size()));
  }
  return OkStatus();
}

// kResourceExhausted once the transaction touches max_records records and buckets (its read
// and write sets are searched linearly and must fit a log slot).
Status Transaction::check_room() const {
  const size_t records = reads_.size() + writes_.size() + buckets_.size();
  if (records < ctx_->options.max_records) return OkStatus();
  return ResourceExhausted(fmt::format("a transaction touches at most {} records and buckets",
                                       ctx_->options.max_records));
}

std::vector<Transaction::Access> Transaction::accesses() const {
  std::vector<Access> out;
  for (const auto& r : reads_) {
    if (r.slot < kSlotsPerBucket) out.push_back({r.table->tag(), r.key, r.version, false});
  }
  for (const auto& w : writes_) {
    out.push_back({w.table->tag(), w.key, w.version, w.kind != Kind::kLocked});
  }
  return out;
}

// ---- aborts ----

Status Transaction::fail(AbortReason reason, std::string_view what) {
  reason_ = reason;
  return Aborted(fmt::format("{}: {}", abort_reason_name(reason), what));
}

Status Transaction::fail_error(Status s) {
  reason_ = AbortReason::kError;
  return s;
}

// Writes 0 to every lock word held (and to the log's state word once the log was written), in
// batches; the first error.
std::vector<GlobalAddress> Transaction::lock_words() const {
  std::vector<GlobalAddress> words;
  words.reserve(writes_.size() + buckets_.size() + 1);
  for (const auto& w : writes_) words.push_back(w.table->primary_slot(w.bucket, w.slot));
  for (const auto& b : buckets_) words.push_back(b.table->primary_bucket(b.bucket));
  return words;
}

Task<Status> Transaction::release_all() {
  std::vector<GlobalAddress> words = lock_words();
  const bool clears_log = log_written_;
  if (clears_log) words.push_back(ctx_->logs.address(log_slot_.index) + kLogStateOffset);
  log_written_ = false;
  writes_.clear();
  buckets_.clear();
  Status first;
  for (size_t i = 0; i < words.size(); i += client::Batch::kMaxOps) {
    client::Batch batch(*ctx_->client);
    const size_t end = std::min(words.size(), i + client::Batch::kMaxOps);
    for (size_t j = i; j < end; ++j) (void)batch.write(words[j], &kZeroWord, kLockWordBytes);
    Status s = co_await batch.wait();
    ++ctx_->counters.round_trips;
    if (first.ok()) first = s;
  }
  // A commit's unlocks and cleared log state are persisted on durable nodes: a lock word or a
  // committing log of this transaction found after a node's restart would roll it forward again,
  // over what later transactions wrote. In log order is enough: the images before them are stable
  // or logged before them on the same node. (An abort's need not be: nothing was written.)
  if (first.ok() && clears_log && ds::any_node_durable(ctx_->client)) {
    std::vector<ds::PersistRange> ranges;
    ranges.reserve(words.size());
    for (const GlobalAddress& w : words) ranges.push_back({w, kLockWordBytes});
    first = co_await ds::persist_all(ctx_->client, ranges, /*ordered=*/true);
    ++ctx_->counters.round_trips;
  }
  if (first.ok() && clears_log) ctx_->logs.set_cleared(log_slot_.index);
  co_return first;
}

// Releases everything, ends the transaction with status `why` and, after a lock conflict,
// asks the coordinator's recovery about the holder (it may be a coordinator that died).
Task<Status> Transaction::finish_abort(Status why) {
  Status r = co_await release_all();
  if (!r.ok()) log_slot_.retire();  // locks may still name the slot: never reuse it
  log_slot_.reset();
  finished_ = true;
  abort_status_ = why;
  ++ctx_->counters.aborts;
  if (conflict_holder_ != 0) {
    // Rate-limited per holder; best effort: the caller retries the transaction either way.
    auto rec = co_await ctx_->recovery.recover(conflict_word_, conflict_holder_);
    (void)rec;
    conflict_holder_ = 0;
  }
  co_return why;
}

Task<Status> Transaction::abort() {
  if (finished_) co_return finished_status();
  Status e = co_await finish_abort(fail(AbortReason::kUserAbort, "aborted by the caller"));
  co_return e;
}

}  // namespace farmem::txn
