// Transaction: the execution phase (docs/formats/txn.md "Protocol", step 1): reads (through the
// address cache, or the whole bucket), hitchhiked lock+read of records and buckets, and the
// API's reads, updates, inserts and erases, buffered until commit (commit.cc).
#include <fmt/format.h>

#include <cstddef>
#include <cstring>

#include "context.h"
#include "farmem/common/check.h"
#include "farmem/txn/transaction.h"
#include "transaction_entries.h"

namespace farmem::txn {

using runtime::Task;

// ---- local steps: the lock value, bucket images ----

// The value this transaction writes into every lock word it takes: its log slot's address.
uint64_t Transaction::lock_value() const {
  FARMEM_ASSERT(log_slot_.index < ctx_->logs.count(), "locks name a transaction slot of ours");
  return ctx_->logs.address(log_slot_.index).pack();
}

// The slot of `key` in bucket_ holding a present record, or kSlotsPerBucket.
uint32_t Transaction::find_in_bucket(const Table& t, uint64_t key) const {
  for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    if (holds(header_of(bucket_, slot_offset(t, s)), key)) return s;
  }
  return kSlotsPerBucket;
}

// The first slot of bucket_ (bucket b) neither present, locked nor claimed by this
// transaction's inserts, or kSlotsPerBucket.
uint32_t Transaction::free_slot_in_bucket(const Table& t, uint64_t b) const {
  for (uint32_t i = 0; i < kSlotsPerBucket; ++i) {
    const SlotHeader h = header_of(bucket_, slot_offset(t, i));
    if ((h.flags & kSlotPresent) || h.lock != 0) continue;
    bool claimed = false;
    for (const auto& w : writes_) claimed |= w.table == &t && w.bucket == b && w.slot == i;
    if (!claimed) return i;
  }
  return kSlotsPerBucket;
}

// ---- remote steps ----

// Reads bucket b's primary (header + slots) into bucket_: the client's awaitable itself, not a
// nested coroutine, as transaction reads take this path once each.
client::OpAwaitable Transaction::read_bucket(const Table& t, uint64_t b) {
  bucket_.resize(t.bucket_bytes());
  ++ctx_->counters.round_trips;
  return ctx_->client->read(t.primary_bucket(b), bucket_.data(), bucket_.size());
}

// Reads the slot at `a` into slot_. On a node whose one-sided operations are served, as a stable
// snapshot in the same round trip: {lock, version} before and after the slot, in one message
// (served operations run in order). Every write of a slot happens under its lock and raises its
// version, so *stable (both unlocked, both versions the slot's) means no write overlapped it.
Task<Status> Transaction::read_slot(GlobalAddress a, size_t bytes, bool* stable) {
  slot_.resize(bytes);
  ++ctx_->counters.round_trips;
  *stable = false;
  if (!ctx_->client->served(a.node())) {
    Status s = co_await ctx_->client->read(a, slot_.data(), bytes);
    co_return s;
  }
  BucketHeader before{}, after{};  // a slot's first 16 bytes are {lock, version} too
  static_assert(offsetof(SlotHeader, lock) == offsetof(BucketHeader, lock) &&
                offsetof(SlotHeader, version) == offsetof(BucketHeader, version));
  client::Batch batch(*ctx_->client);
  (void)batch.read(a, &before, sizeof(before));
  (void)batch.fence();
  (void)batch.read(a, slot_.data(), bytes);
  (void)batch.fence();
  (void)batch.read(a, &after, sizeof(after));
  Status s = co_await batch.wait();
  FARMEM_CO_TRY(s);
  const SlotHeader h = header_of(slot_);
  *stable = before.lock == 0 && after.lock == 0 && h.lock == 0 && before.version == h.version &&
            after.version == h.version;
  co_return OkStatus();
}

// `key` has no slot in bucket b: the bucket's `read` failed (the transaction aborts) or the key
// is not in bucket_ (absent()'s status).
Task<Status> Transaction::bucket_miss(const Table& t, uint64_t key, uint64_t b, Status read) {
  if (!read.ok()) {
    Status e = co_await finish_abort(fail_error(read));
    co_return e;
  }
  Status e = co_await absent(t, key, b);
  co_return e;
}

// `key` is not in bucket_ (bucket b, just read): kInvisible if another transaction holds the
// bucket's lock, else remembers the bucket's version for validation and returns kNotFound.
Task<Status> Transaction::absent(const Table& t, uint64_t key, uint64_t b) {
  BucketHeader bh;
  std::memcpy(&bh, bucket_.data(), sizeof(bh));
  if (bh.lock != 0 && find_bucket(t, b) == nullptr) {
    conflict(t.primary_bucket(b), bh.lock);  // an insert or erase in this bucket is under way
    Status e = co_await finish_abort(fail(AbortReason::kInvisible, "bucket being changed"));
    co_return e;
  }
  if (find_read(t, key) == nullptr) reads_.push_back({&t, key, b, kSlotsPerBucket, bh.version, {}});
  co_return NotFound(fmt::format("no key {} in table '{}'", key, t.name()));
}

// A record or bucket another transaction holds (its lock word `word` names `holder`): aborts
// with kLockConflict, `what`, and has recovery look at the holder.
Task<Status> Transaction::abort_locked(GlobalAddress word, uint64_t holder, const char* what) {
  conflict(word, holder);
  Status e = co_await finish_abort(fail(AbortReason::kLockConflict, what));
  co_return e;
}

// One round trip: CAS the lock word at addr 0 -> our lock value, then (fenced) read `bytes`
// from addr into *out. OK when locked; otherwise the transaction is aborted (kLockConflict,
// `what`, or the transport's error) and that status returned.
Task<Status> Transaction::lock_and_read(GlobalAddress addr, size_t bytes, std::string* out,
                                        const char* what) {
  Status s = ensure_log_slot();
  uint64_t old = ~0ull;
  uint64_t mine = 0;
  if (s.ok()) {
    mine = lock_value();
    out->resize(bytes);
    client::Batch batch(*ctx_->client);
    (void)batch.cas(addr, 0, mine, &old);
    (void)batch.fence();  // the read sees what the previous holder wrote before it unlocked
    (void)batch.read(addr, out->data(), bytes);
    s = co_await batch.wait();
    ++ctx_->counters.round_trips;
  }
  if (!s.ok()) {
    Status e = co_await finish_abort(fail_error(s));
    co_return e;
  }
  FARMEM_ASSERT(old != mine, "a transaction never locks a word it already holds");
  if (old != 0) {
    Status e = co_await abort_locked(addr, old, what);
    co_return e;
  }
  co_return OkStatus();
}

// Releases one lock word at once (one that is in none of the sets); an error aborts.
Task<Status> Transaction::unlock_one(GlobalAddress word) {
  Status u = co_await ctx_->client->write(word, &kZeroWord, kLockWordBytes);
  ++ctx_->counters.round_trips;
  if (!u.ok()) {
    Status e = co_await finish_abort(fail_error(u));
    co_return e;
  }
  co_return OkStatus();
}

// ---- locking ----

// Locks and reads the record; on success adds a kLocked write entry (*entry).
Task<Status> Transaction::lock_record(const Table& t, uint64_t key, WriteEntry** entry) {
  FARMEM_CO_TRY(check_room());
  const uint64_t b = t.bucket_of(key);
  if (Status live = t.check_bucket(b); !live.ok()) {
    Status e = co_await finish_abort(fail_error(live));
    co_return e;
  }
  uint32_t slot = cached_slot_to_lock(t, key, b);
  if (slot < kSlotsPerBucket) {
    // Forgotten until the lock is won (remembered again by adopt_locked): if the entry is stale
    // and its slot is locked by someone else, the retry searches the bucket instead of aborting.
    ctx_->cache.forget(t, key);
    const GlobalAddress a = t.primary_slot(b, slot);
    Status s = co_await lock_and_read(a, t.slot_bytes(), &slot_, "record locked");
    FARMEM_CO_TRY(s);
    if (!holds(header_of(slot_), key)) {
      // A stale cache entry: let go of the slot and search the bucket.
      s = co_await unlock_one(a);
      FARMEM_CO_TRY(s);
      slot = kSlotsPerBucket;
    }
  }
  if (slot == kSlotsPerBucket) {
    Status s = co_await read_bucket(t, b);
    slot = s.ok() ? find_in_bucket(t, key) : kSlotsPerBucket;
    if (slot == kSlotsPerBucket) {
      Status e = co_await bucket_miss(t, key, b, std::move(s));
      co_return e;  // moved, not copied: kNotFound is an everyday answer
    }
    s = co_await lock_and_read(t.primary_slot(b, slot), t.slot_bytes(), &slot_, "record locked");
    FARMEM_CO_TRY(s);
  }
  if (const char* changed = adopt_locked(t, key, b, slot)) {
    Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, changed));
    co_return e;
  }
  *entry = &writes_.back();
  co_return OkStatus();
}

// The slot the cache names for `key` (bucket b), unless this transaction holds that slot
// already (a stale entry naming a slot it locked for another key); kSlotsPerBucket when none.
uint32_t Transaction::cached_slot_to_lock(const Table& t, uint64_t key, uint64_t b) const {
  const uint32_t slot = ctx_->cache.find(t, key);
  for (const auto& w : writes_) {
    if (w.table == &t && w.bucket == b && w.slot == slot) return kSlotsPerBucket;
  }
  return slot;
}

// The slot just locked and read into slot_ becomes a kLocked write entry (so that an abort
// releases it). nullptr when it still holds `key` and a version of it read before is still
// current; otherwise why the transaction must abort (kVersionChanged).
const char* Transaction::adopt_locked(const Table& t, uint64_t key, uint64_t b, uint32_t slot) {
  const SlotHeader h = header_of(slot_);
  writes_.push_back(
      {&t, key, b, slot, h.version, Kind::kLocked, slot_.substr(sizeof(h), t.record_bytes())});
  if (!holds(h, key)) return "record moved";
  ctx_->cache.remember(t, key, slot);
  for (size_t i = 0; i < reads_.size(); ++i) {
    if (reads_[i].table != &t || reads_[i].key != key) continue;
    if (reads_[i].slot != slot || reads_[i].version != h.version) return "record changed";
    reads_.erase(reads_.begin() + static_cast<ptrdiff_t>(i));
    break;
  }
  return nullptr;
}

// Locks bucket b's header and reads the bucket into bucket_ (or only re-reads it when this
// transaction holds it already).
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
  if (Status live = t.check_bucket(b); !live.ok()) {
    Status e = co_await finish_abort(fail_error(live));
    co_return e;
  }
  const GlobalAddress a = t.primary_bucket(b);
  Status s = co_await lock_and_read(a, t.bucket_bytes(), &bucket_, "bucket locked");
  FARMEM_CO_TRY(s);
  BucketHeader bh;
  std::memcpy(&bh, bucket_.data(), sizeof(bh));
  buckets_.push_back({&t, b, bh.version, false});
  *lock = &buckets_.back();
  co_return OkStatus();
}

// ---- the API ----

Task<Status> Transaction::read(const Table& t, uint64_t key, std::string* value) {
  if (finished_) co_return finished_status();
  if (!t.valid()) co_return InvalidArgument("unknown table (not created or opened)");
  if (Status known; read_locally(t, key, value, &known)) co_return known;
  FARMEM_CO_TRY(check_room());
  const uint64_t b = t.bucket_of(key);
  if (Status live = t.check_bucket(b); !live.ok()) {
    Status e = co_await finish_abort(fail_error(live));
    co_return e;
  }
  const size_t rb = t.record_bytes();
  const uint32_t cached = ctx_->cache.find(t, key);
  if (cached < kSlotsPerBucket) {
    const GlobalAddress a = t.primary_slot(b, cached);
    bool stable = false;
    Status s = co_await read_slot(a, t.slot_bytes(), &stable);
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    const SlotHeader h = header_of(slot_);
    if (holds(h, key)) {  // else a stale entry: search the bucket
      if (h.lock != 0) {
        Status e = co_await abort_locked(a, h.lock, "record locked");
        co_return e;
      }
      reads_.push_back({&t, key, b, cached, h.version, slot_.substr(sizeof(h), rb), stable});
      *value = reads_.back().value;
      co_return OkStatus();
    }
  }
  Status s = co_await read_bucket(t, b);
  const uint32_t slot = s.ok() ? find_in_bucket(t, key) : kSlotsPerBucket;
  if (slot == kSlotsPerBucket) {
    Status e = co_await bucket_miss(t, key, b, std::move(s));
    co_return e;  // moved, not copied: kNotFound is an everyday answer
  }
  const SlotHeader h = header_of(bucket_, slot_offset(t, slot));
  if (h.lock != 0) {
    Status e = co_await abort_locked(t.primary_slot(b, slot), h.lock, "record locked");
    co_return e;
  }
  ctx_->cache.remember(t, key, slot);
  reads_.push_back(
      {&t, key, b, slot, h.version, bucket_.substr(slot_offset(t, slot) + sizeof(SlotHeader), rb)});
  *value = reads_.back().value;
  co_return OkStatus();
}

// Read-your-writes and repeated reads: true when the transaction has `key` already (in its
// write or read set); then *s is the answer and, when OK, *value the record.
bool Transaction::read_locally(const Table& t, uint64_t key, std::string* value, Status* s) {
  if (const WriteEntry* w = find_write(t, key)) {
    if (w->kind == Kind::kErase) {
      *s = NotFound("erased by this transaction");
    } else {
      *value = w->value;
      *s = OkStatus();
    }
    return true;
  }
  if (const ReadEntry* r = find_read(t, key)) {
    if (r->slot == kSlotsPerBucket) {
      *s = NotFound(fmt::format("no key {} in table '{}'", key, t.name()));
    } else {
      *value = r->value;
      *s = OkStatus();
    }
    return true;
  }
  return false;
}

Task<Status> Transaction::read_for_update(const Table& t, uint64_t key, std::string* value) {
  FARMEM_CO_TRY(check_write(t, {}, false));
  if (const WriteEntry* w = find_write(t, key)) {
    if (w->kind == Kind::kErase) co_return NotFound("erased by this transaction");
    *value = w->value;
    co_return OkStatus();
  }
  WriteEntry* w = nullptr;
  Status s = co_await lock_record(t, key, &w);
  FARMEM_CO_TRY(s);
  *value = w->value;
  co_return OkStatus();
}

Task<Status> Transaction::update(const Table& t, uint64_t key, std::string_view value) {
  FARMEM_CO_TRY(check_write(t, value, true));
  WriteEntry* w = find_write(t, key);
  if (w == nullptr) {
    Status s = co_await lock_record(t, key, &w);
    FARMEM_CO_TRY(s);
  } else if (w->kind == Kind::kErase) {
    co_return NotFound("erased by this transaction");
  }
  w->value.assign(value.data(), value.size());
  if (w->kind == Kind::kLocked) w->kind = Kind::kUpdate;
  co_return OkStatus();
}

Task<Status> Transaction::insert(const Table& t, uint64_t key, std::string_view value) {
  FARMEM_CO_TRY(check_write(t, value, true));
  if (WriteEntry* w = find_write(t, key)) {
    if (w->kind != Kind::kErase) co_return AlreadyExists(fmt::format("key {} exists", key));
    w->kind = Kind::kUpdate;  // erased, then inserted again: the slot stays
    w->value.assign(value.data(), value.size());
    co_return OkStatus();
  }
  FARMEM_CO_TRY(check_room());
  const uint64_t b = t.bucket_of(key);
  BucketLock* bl = nullptr;
  Status s = co_await lock_bucket(t, b, &bl);
  FARMEM_CO_TRY(s);
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
    Status e = co_await already_present(t, key, b, present);
    co_return e;
  }
  const uint32_t slot = free_slot_in_bucket(t, b);
  if (slot == kSlotsPerBucket) {
    co_return ResourceExhausted(fmt::format("bucket {} of table '{}' is full", b, t.name()));
  }
  s = co_await lock_and_read(t.primary_slot(b, slot), t.slot_bytes(), &slot_, "free slot locked");
  FARMEM_CO_TRY(s);
  const SlotHeader h = header_of(slot_);
  writes_.push_back({&t, key, b, slot, h.version, Kind::kInsert, std::string(value)});
  if (h.flags & kSlotPresent) {
    Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, "slot taken"));
    co_return e;
  }
  find_bucket(t, b)->changed = true;
  co_return OkStatus();
}

// An insert met `key` present in slot `slot` of bucket_ (bucket b, locked by this transaction):
// kAlreadyExists, the record joining the read set; a locked record aborts.
Task<Status> Transaction::already_present(const Table& t, uint64_t key, uint64_t b, uint32_t slot) {
  const SlotHeader h = header_of(bucket_, slot_offset(t, slot));
  if (h.lock != 0) {
    Status e = co_await abort_locked(t.primary_slot(b, slot), h.lock, "record locked");
    co_return e;
  }
  if (find_read(t, key) == nullptr) {
    reads_.push_back({&t, key, b, slot, h.version,
                      bucket_.substr(slot_offset(t, slot) + sizeof(SlotHeader), t.record_bytes())});
  }
  co_return AlreadyExists(fmt::format("key {} exists in table '{}'", key, t.name()));
}

Task<Status> Transaction::erase(const Table& t, uint64_t key) {
  FARMEM_CO_TRY(check_write(t, {}, false));
  WriteEntry* w = find_write(t, key);
  if (w != nullptr && w->kind == Kind::kErase) co_return NotFound("erased by this transaction");
  if (w != nullptr && w->kind == Kind::kInsert) {
    // Inserted by this transaction: forget it (the bucket stays locked until the end).
    const GlobalAddress a = t.primary_slot(w->bucket, w->slot);
    writes_.erase(writes_.begin() + (w - writes_.data()));
    Status u = co_await unlock_one(a);
    co_return u;
  }
  if (w == nullptr) {
    Status s = co_await lock_record(t, key, &w);
    FARMEM_CO_TRY(s);
  }
  const uint64_t b = w->bucket;
  const size_t index = static_cast<size_t>(w - writes_.data());
  BucketLock* bl = nullptr;
  Status s = co_await lock_bucket(t, b, &bl);
  FARMEM_CO_TRY(s);
  writes_[index].kind = Kind::kErase;
  bl->changed = true;
  co_return OkStatus();
}

}  // namespace farmem::txn
