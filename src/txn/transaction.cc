#include "farmem/txn/transaction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "farmem/client/cluster.h"

namespace farmem::txn {

using runtime::Task;

namespace {

constexpr uint64_t kZeroWord = 0;

uint16_t lowest_node(client::ThreadClient* c) {
  uint16_t lowest = UINT16_MAX;
  for (const auto& n : c->cluster().nodes()) lowest = std::min(lowest, n.node_id);
  return lowest;
}

SlotHeader header_of(const std::string& image, size_t at = 0) {
  SlotHeader h;
  std::memcpy(&h, image.data() + at, sizeof(h));
  return h;
}

bool holds(const SlotHeader& h, uint64_t key) { return (h.flags & kSlotPresent) && h.key == key; }

}  // namespace

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

// ---- TxnClient ----

TxnClient::TxnClient(client::ThreadClient* c, int cache_log2)
    : client_(c), coordinator_(c->session_id(lowest_node(c))), cache_(cache_log2) {}

Transaction TxnClient::begin() {
  return Transaction(this, TxnId{coordinator_, next_sequence_++}, false);
}

Transaction TxnClient::begin_read_only() {
  return Transaction(this, TxnId{coordinator_, next_sequence_++}, true);
}

uint32_t TxnClient::cached_slot(const Table& t, uint64_t key) {
  if (!cache_.enabled()) return kSlotsPerBucket;
  const CacheEntry& e = cache_.at(key * 0x9e3779b97f4a7c15ull ^ t.tag());
  if (e.slot_plus_one == 0 || e.key != key || e.tag != t.tag()) return kSlotsPerBucket;
  return e.slot_plus_one - 1;
}

void TxnClient::remember(const Table& t, uint64_t key, uint32_t slot) {
  if (!cache_.enabled()) return;
  cache_.at(key * 0x9e3779b97f4a7c15ull ^ t.tag()) = CacheEntry{key, t.tag(), slot + 1};
}

// ---- Transaction: bookkeeping ----

Transaction::~Transaction() = default;

Status Transaction::check_write(const Table& table, std::string_view value, bool sized) {
  if (finished_)
    return abort_status_.ok() ? InvalidArgument("transaction finished") : abort_status_;
  if (read_only_) return InvalidArgument("a read-only transaction cannot write");
  if (!table.valid()) return InvalidArgument("unknown table (not created or opened)");
  if (sized && value.size() != table.record_bytes()) {
    return InvalidArgument(fmt::format("table '{}' holds {}-byte records, not {} bytes",
                                       table.name(), table.record_bytes(), value.size()));
  }
  return OkStatus();
}

Transaction::ReadEntry* Transaction::find_read(const Table& t, uint64_t key) {
  for (auto& r : reads_) {
    if (r.table == &t && r.key == key) return &r;
  }
  return nullptr;
}

Transaction::WriteEntry* Transaction::find_write(const Table& t, uint64_t key) {
  for (auto& w : writes_) {
    if (w.table == &t && w.key == key) return &w;
  }
  return nullptr;
}

Transaction::BucketLock* Transaction::find_bucket(const Table& t, uint64_t bucket) {
  for (auto& b : buckets_) {
    if (b.table == &t && b.bucket == bucket) return &b;
  }
  return nullptr;
}

const SlotHeader* Transaction::bucket_slot(const Table& t, uint32_t slot) const {
  return reinterpret_cast<const SlotHeader*>(bucket_.data() + sizeof(BucketHeader) +
                                             slot * t.slot_bytes());
}

uint32_t Transaction::find_in_bucket(const Table& t, uint64_t key) const {
  for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    SlotHeader h;
    std::memcpy(&h, bucket_slot(t, s), sizeof(h));
    if (holds(h, key)) return s;
  }
  return kSlotsPerBucket;
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

// ---- remote steps ----

Task<Status> Transaction::read_bucket(const Table& t, uint64_t b) {
  bucket_.resize(t.bucket_bytes());
  Status s = co_await tc_->client_->read(t.bucket_address(b, 0), bucket_.data(), bucket_.size());
  ++tc_->counters_.round_trips;
  co_return s;
}

Task<Status> Transaction::lock_and_read(GlobalAddress word, GlobalAddress addr, size_t bytes,
                                        std::string* out, bool* won) {
  out->resize(bytes);
  uint64_t old = ~0ull;
  client::Batch batch(*tc_->client_);
  (void)batch.cas(word, 0, me(word.node()), &old);
  (void)batch.fence();  // the read sees what the previous holder wrote before it unlocked
  (void)batch.read(addr, out->data(), bytes);
  Status s = co_await batch.wait();
  ++tc_->counters_.round_trips;
  *won = s.ok() && old == 0;
  co_return s;
}

Task<Status> Transaction::finish_abort(Status why) {
  Status r = co_await release_all();
  (void)r;  // a lock we could not release belongs to a session the node will see end
  finished_ = true;
  abort_status_ = why;
  ++tc_->counters_.aborts;
  co_return why;
}

Status Transaction::fail(AbortReason reason, std::string_view what) {
  reason_ = reason;
  return Aborted(fmt::format("{}: {}", abort_reason_name(reason), what));
}

Status Transaction::fail_error(Status s) {
  reason_ = AbortReason::kError;
  return s;
}

Task<Status> Transaction::release_all() {
  client::ThreadClient* c = tc_->client_;
  std::vector<GlobalAddress> words;
  for (const auto& w : writes_) words.push_back(w.table->slot_address(w.bucket, w.slot, 0));
  for (const auto& b : buckets_) words.push_back(b.table->bucket_address(b.bucket, 0));
  writes_.clear();
  buckets_.clear();
  Status first;
  for (size_t i = 0; i < words.size(); i += client::Batch::kMaxOps) {
    client::Batch batch(*c);
    const size_t end = std::min(words.size(), i + client::Batch::kMaxOps);
    for (size_t j = i; j < end; ++j) (void)batch.write(words[j], &kZeroWord, 8);
    Status s = co_await batch.wait();
    ++tc_->counters_.round_trips;
    if (first.ok()) first = s;
  }
  co_return first;
}

Task<Status> Transaction::lock_record(const Table& t, uint64_t key, WriteEntry** entry) {
  const uint64_t b = t.bucket_of(key);
  const size_t rb = t.record_bytes();
  uint32_t slot = tc_->cached_slot(t, key);
  bool won = false;
  if (slot < kSlotsPerBucket) {
    const GlobalAddress a = t.slot_address(b, slot, 0);
    Status s = co_await lock_and_read(a, a, t.slot_bytes(), &slot_, &won);
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    if (!won) {
      Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "record locked"));
      co_return e;
    }
    if (!holds(header_of(slot_), key)) {
      // A stale cache entry: let go of the slot and search the bucket.
      Status u = co_await tc_->client_->write(a, &kZeroWord, 8);
      ++tc_->counters_.round_trips;
      if (!u.ok()) {
        Status e = co_await finish_abort(fail_error(u));
        co_return e;
      }
      slot = kSlotsPerBucket;
    }
  }
  if (slot == kSlotsPerBucket) {
    Status s = co_await read_bucket(t, b);
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    slot = find_in_bucket(t, key);
    if (slot == kSlotsPerBucket) {
      BucketHeader bh;
      std::memcpy(&bh, bucket_.data(), sizeof(bh));
      if (bh.lock != 0 && find_bucket(t, b) == nullptr) {
        Status e = co_await finish_abort(fail(AbortReason::kInvisible, "bucket being changed"));
        co_return e;
      }
      if (find_read(t, key) == nullptr)
        reads_.push_back({&t, key, b, kSlotsPerBucket, bh.version, {}});
      co_return NotFound(fmt::format("no key {} in table '{}'", key, t.name()));
    }
    const GlobalAddress a = t.slot_address(b, slot, 0);
    s = co_await lock_and_read(a, a, t.slot_bytes(), &slot_, &won);
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    if (!won) {
      Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "record locked"));
      co_return e;
    }
  }
  const SlotHeader h = header_of(slot_);
  writes_.push_back({&t, key, b, slot, h.version, Kind::kLocked, slot_.substr(sizeof(h), rb)});
  if (!holds(h, key)) {
    Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, "record moved"));
    co_return e;
  }
  tc_->remember(t, key, slot);
  for (size_t i = 0; i < reads_.size(); ++i) {
    if (reads_[i].table != &t || reads_[i].key != key) continue;
    if (reads_[i].slot != slot || reads_[i].version != h.version) {
      Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, "record changed"));
      co_return e;
    }
    reads_.erase(reads_.begin() + static_cast<ptrdiff_t>(i));
    break;
  }
  *entry = &writes_.back();
  co_return OkStatus();
}

Task<Status> Transaction::lock_bucket(const Table& t, uint64_t b, BucketLock** lock) {
  if (BucketLock* held = find_bucket(t, b)) {
    Status s = co_await read_bucket(t, b);  // ours: only our own slot writes change it
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    *lock = held;
    co_return OkStatus();
  }
  const GlobalAddress a = t.bucket_address(b, 0);
  bool won = false;
  Status s = co_await lock_and_read(a, a, t.bucket_bytes(), &bucket_, &won);
  if (!s.ok()) {
    Status e = co_await finish_abort(fail_error(s));
    co_return e;
  }
  if (!won) {
    Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "bucket locked"));
    co_return e;
  }
  BucketHeader bh;
  std::memcpy(&bh, bucket_.data(), sizeof(bh));
  buckets_.push_back({&t, b, bh.version, false});
  *lock = &buckets_.back();
  co_return OkStatus();
}

// ---- the API ----

Task<Status> Transaction::read(const Table& t, uint64_t key, std::string* value) {
  if (finished_)
    co_return abort_status_.ok() ? InvalidArgument("transaction finished") : abort_status_;
  if (!t.valid()) co_return InvalidArgument("unknown table (not created or opened)");
  if (const WriteEntry* w = find_write(t, key)) {
    if (w->kind == Kind::kErase) co_return NotFound("erased by this transaction");
    *value = w->value;
    co_return OkStatus();
  }
  if (const ReadEntry* r = find_read(t, key)) {
    if (r->slot == kSlotsPerBucket)
      co_return NotFound(fmt::format("no key {} in table '{}'", key, t.name()));
    *value = r->value;
    co_return OkStatus();
  }
  const uint64_t b = t.bucket_of(key);
  const size_t rb = t.record_bytes();
  const uint32_t cached = tc_->cached_slot(t, key);
  if (cached < kSlotsPerBucket) {
    slot_.resize(t.slot_bytes());
    Status s =
        co_await tc_->client_->read(t.slot_address(b, cached, 0), slot_.data(), slot_.size());
    ++tc_->counters_.round_trips;
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    const SlotHeader h = header_of(slot_);
    if (holds(h, key)) {
      if (h.lock != 0) {
        Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "record locked"));
        co_return e;
      }
      reads_.push_back({&t, key, b, cached, h.version, slot_.substr(sizeof(h), rb)});
      *value = reads_.back().value;
      co_return OkStatus();
    }
  }
  Status s = co_await read_bucket(t, b);
  if (!s.ok()) {
    Status e = co_await finish_abort(fail_error(s));
    co_return e;
  }
  const uint32_t slot = find_in_bucket(t, key);
  if (slot == kSlotsPerBucket) {
    BucketHeader bh;
    std::memcpy(&bh, bucket_.data(), sizeof(bh));
    if (bh.lock != 0 && find_bucket(t, b) == nullptr) {
      Status e = co_await finish_abort(fail(AbortReason::kInvisible, "bucket being changed"));
      co_return e;
    }
    reads_.push_back({&t, key, b, kSlotsPerBucket, bh.version, {}});
    co_return NotFound(fmt::format("no key {} in table '{}'", key, t.name()));
  }
  SlotHeader h;
  std::memcpy(&h, bucket_slot(t, slot), sizeof(h));
  if (h.lock != 0) {
    Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "record locked"));
    co_return e;
  }
  tc_->remember(t, key, slot);
  const char* v = reinterpret_cast<const char*>(bucket_slot(t, slot)) + sizeof(SlotHeader);
  reads_.push_back({&t, key, b, slot, h.version, std::string(v, rb)});
  *value = reads_.back().value;
  co_return OkStatus();
}

Task<Status> Transaction::read_for_update(const Table& t, uint64_t key, std::string* value) {
  FARMEM_CO_RETURN_IF_ERROR(check_write(t, {}, false));
  if (const WriteEntry* w = find_write(t, key)) {
    if (w->kind == Kind::kErase) co_return NotFound("erased by this transaction");
    *value = w->value;
    co_return OkStatus();
  }
  WriteEntry* w = nullptr;
  Status s = co_await lock_record(t, key, &w);
  if (!s.ok()) co_return s;
  *value = w->value;
  co_return OkStatus();
}

Task<Status> Transaction::update(const Table& t, uint64_t key, std::string_view value) {
  FARMEM_CO_RETURN_IF_ERROR(check_write(t, value, true));
  WriteEntry* w = find_write(t, key);
  if (w == nullptr) {
    Status s = co_await lock_record(t, key, &w);
    if (!s.ok()) co_return s;
  } else if (w->kind == Kind::kErase) {
    co_return NotFound("erased by this transaction");
  }
  w->value.assign(value.data(), value.size());
  if (w->kind == Kind::kLocked) w->kind = Kind::kUpdate;
  co_return OkStatus();
}

Task<Status> Transaction::insert(const Table& t, uint64_t key, std::string_view value) {
  FARMEM_CO_RETURN_IF_ERROR(check_write(t, value, true));
  if (WriteEntry* w = find_write(t, key)) {
    if (w->kind != Kind::kErase) co_return AlreadyExists(fmt::format("key {} exists", key));
    w->kind = Kind::kUpdate;  // erased, then inserted again: the slot stays
    w->value.assign(value.data(), value.size());
    co_return OkStatus();
  }
  const uint64_t b = t.bucket_of(key);
  BucketLock* bl = nullptr;
  Status s = co_await lock_bucket(t, b, &bl);
  if (!s.ok()) co_return s;
  const uint64_t locked_version = bl->version;
  for (size_t i = 0; i < reads_.size(); ++i) {
    const ReadEntry& r = reads_[i];
    if (r.table != &t || r.key != key || r.slot != kSlotsPerBucket) continue;
    if (r.version != locked_version) {
      Status e =
          co_await finish_abort(fail(AbortReason::kVersionChanged, "key inserted meanwhile"));
      co_return e;
    }
    reads_.erase(reads_.begin() + static_cast<ptrdiff_t>(i));
    break;
  }
  const uint32_t present = find_in_bucket(t, key);
  if (present < kSlotsPerBucket) {
    SlotHeader h;
    std::memcpy(&h, bucket_slot(t, present), sizeof(h));
    if (h.lock != 0) {
      Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "record locked"));
      co_return e;
    }
    if (find_read(t, key) == nullptr) {
      const char* v = reinterpret_cast<const char*>(bucket_slot(t, present)) + sizeof(SlotHeader);
      reads_.push_back({&t, key, b, present, h.version, std::string(v, t.record_bytes())});
    }
    co_return AlreadyExists(fmt::format("key {} exists in table '{}'", key, t.name()));
  }
  uint32_t slot = kSlotsPerBucket;
  for (uint32_t i = 0; i < kSlotsPerBucket && slot == kSlotsPerBucket; ++i) {
    SlotHeader h;
    std::memcpy(&h, bucket_slot(t, i), sizeof(h));
    if ((h.flags & kSlotPresent) || h.lock != 0) continue;
    bool claimed = false;
    for (const auto& w : writes_) claimed |= w.table == &t && w.bucket == b && w.slot == i;
    if (!claimed) slot = i;
  }
  if (slot == kSlotsPerBucket) {
    co_return ResourceExhausted(fmt::format("bucket {} of table '{}' is full", b, t.name()));
  }
  const GlobalAddress a = t.slot_address(b, slot, 0);
  bool won = false;
  s = co_await lock_and_read(a, a, t.slot_bytes(), &slot_, &won);
  if (!s.ok()) {
    Status e = co_await finish_abort(fail_error(s));
    co_return e;
  }
  if (!won) {
    Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "free slot locked"));
    co_return e;
  }
  const SlotHeader h = header_of(slot_);
  writes_.push_back({&t, key, b, slot, h.version, Kind::kInsert, std::string(value)});
  if (h.flags & kSlotPresent) {
    Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, "slot taken"));
    co_return e;
  }
  find_bucket(t, b)->changed = true;
  co_return OkStatus();
}

Task<Status> Transaction::erase(const Table& t, uint64_t key) {
  FARMEM_CO_RETURN_IF_ERROR(check_write(t, {}, false));
  WriteEntry* w = find_write(t, key);
  if (w != nullptr && w->kind == Kind::kErase) co_return NotFound("erased by this transaction");
  if (w != nullptr && w->kind == Kind::kInsert) {
    // Inserted by this transaction: forget it (the bucket stays locked until the end).
    const GlobalAddress a = t.slot_address(w->bucket, w->slot, 0);
    writes_.erase(writes_.begin() + (w - writes_.data()));
    Status u = co_await tc_->client_->write(a, &kZeroWord, 8);
    ++tc_->counters_.round_trips;
    if (!u.ok()) {
      Status e = co_await finish_abort(fail_error(u));
      co_return e;
    }
    co_return OkStatus();
  }
  if (w == nullptr) {
    Status s = co_await lock_record(t, key, &w);
    if (!s.ok()) co_return s;
  }
  const uint64_t b = w->bucket;
  const size_t index = static_cast<size_t>(w - writes_.data());
  BucketLock* bl = nullptr;
  Status s = co_await lock_bucket(t, b, &bl);
  if (!s.ok()) co_return s;
  writes_[index].kind = Kind::kErase;
  bl->changed = true;
  co_return OkStatus();
}

Task<Status> Transaction::abort() {
  if (finished_)
    co_return abort_status_.ok() ? InvalidArgument("transaction finished") : abort_status_;
  Status e = co_await finish_abort(fail(AbortReason::kUserAbort, "aborted by the caller"));
  co_return e;
}

Task<Status> Transaction::validate() {
  client::ThreadClient* c = tc_->client_;
  std::vector<BucketHeader> seen(reads_.size());  // {lock, version} of slot or bucket header
  for (size_t i = 0; i < reads_.size(); i += client::Batch::kMaxOps) {
    client::Batch batch(*c);
    const size_t end = std::min(reads_.size(), i + client::Batch::kMaxOps);
    for (size_t j = i; j < end; ++j) {
      const ReadEntry& r = reads_[j];
      const GlobalAddress a = r.slot < kSlotsPerBucket ? r.table->slot_address(r.bucket, r.slot, 0)
                                                       : r.table->bucket_address(r.bucket, 0);
      (void)batch.read(a, &seen[j], sizeof(BucketHeader));
    }
    Status s = co_await batch.wait();
    ++tc_->counters_.round_trips;
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

Task<Status> Transaction::write_back() {
  client::ThreadClient* c = tc_->client_;
  struct Op {
    GlobalAddress addr;
    const char* src;
    size_t bytes;
  };
  std::vector<std::string> images;
  images.reserve(writes_.size() + buckets_.size());
  std::vector<Op> ops;
  for (const auto& w : writes_) {
    if (w.kind == Kind::kLocked) continue;
    const Table& t = *w.table;
    std::string image(t.slot_bytes() - 8, '\0');  // the slot from its version on
    SlotHeader h{};
    h.version = w.version + 1;
    h.key = w.key;
    h.flags = w.kind == Kind::kErase ? 0 : kSlotPresent;
    std::memcpy(image.data(), reinterpret_cast<const char*>(&h) + 8, sizeof(h) - 8);
    if (w.kind != Kind::kErase)
      std::memcpy(image.data() + sizeof(h) - 8, w.value.data(), w.value.size());
    images.push_back(std::move(image));
    for (uint32_t r = 0; r < t.replicas(); ++r) {
      ops.push_back(
          {t.slot_address(w.bucket, w.slot, r) + 8, images.back().data(), images.back().size()});
    }
    if (w.kind == Kind::kInsert) tc_->remember(t, w.key, w.slot);
  }
  for (const auto& b : buckets_) {
    if (!b.changed) continue;
    images.emplace_back(8, '\0');
    const uint64_t v = b.version + 1;
    std::memcpy(images.back().data(), &v, 8);
    for (uint32_t r = 0; r < b.table->replicas(); ++r) {
      ops.push_back({b.table->bucket_address(b.bucket, r) + 8, images.back().data(), 8});
    }
  }
  for (size_t i = 0; i < ops.size(); i += client::Batch::kMaxOps) {
    client::Batch batch(*c);
    const size_t end = std::min(ops.size(), i + client::Batch::kMaxOps);
    for (size_t j = i; j < end; ++j) (void)batch.write(ops[j].addr, ops[j].src, ops[j].bytes);
    Status s = co_await batch.wait();
    ++tc_->counters_.round_trips;
    if (!s.ok()) co_return s;
  }
  co_return OkStatus();
}

Task<Status> Transaction::commit() {
  if (finished_)
    co_return abort_status_.ok() ? InvalidArgument("transaction finished") : abort_status_;
  Status s = co_await validate();
  if (!s.ok()) co_return s;
  if (!writes_.empty() || !buckets_.empty()) {
    s = co_await write_back();
    if (!s.ok()) {
      // Some replicas may hold the new images: without logs (not yet built) this is reported,
      // not repaired.
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    s = co_await release_all();
  }
  finished_ = true;
  ++tc_->counters_.commits;
  co_return s;
}

}  // namespace farmem::txn
