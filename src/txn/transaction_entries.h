// A transaction's read set, write set and bucket locks (the private types Transaction declares
// in include/farmem/txn/transaction.h), and the slot-image helpers its sources share. Entries
// point at their Table, which must outlive the transaction.
// Thread safety: owned by one Transaction (one coroutine).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "farmem/txn/layout.h"
#include "farmem/txn/transaction.h"
#include "redo_log.h"

namespace farmem::txn {

enum class Transaction::Kind : uint8_t {
  kLocked,  // locked (read_for_update) and not changed
  kUpdate,
  kInsert,
  kErase,
};

// A record read and not locked, validated at commit by its version.
struct Transaction::ReadEntry {
  const Table* table;
  uint64_t key;
  uint64_t bucket;
  uint32_t slot;     // kSlotsPerBucket: an absent key (validated by the bucket header)
  uint64_t version;  // slot's or bucket's
  std::string value;
  // Read as a stable snapshot (read_stable): {lock, version} unlocked and the same before and
  // after the slot, so a read-only transaction of this one read needs no validation.
  bool stable = false;
};

// A record this transaction holds the lock of (its slot's lock word names our log slot).
struct Transaction::WriteEntry {
  const Table* table;
  uint64_t key;
  uint64_t bucket;
  uint32_t slot;
  uint64_t version;  // the slot's version when locked
  Kind kind;
  std::string value;
};

// A bucket header this transaction holds the lock of (an insert or erase in the bucket).
struct Transaction::BucketLock {
  const Table* table;
  uint64_t bucket;
  uint64_t version;  // when locked
  bool changed;      // an insert or erase of this transaction
};

// The redo log of a commit and the in-place writes it describes (pointing into the log).
struct Transaction::CommitPlan {
  std::string log;
  std::vector<ImageWrite> writes;
};

// The entries of `key` (of bucket `bucket`) in the sets, or nullptr; linear searches (a
// transaction touches at most max_records records), inline for the execution's hot path.
inline Transaction::ReadEntry* Transaction::find_read(const Table& t, uint64_t key) {
  for (auto& r : reads_) {
    if (r.table == &t && r.key == key) return &r;
  }
  return nullptr;
}

inline Transaction::WriteEntry* Transaction::find_write(const Table& t, uint64_t key) {
  for (auto& w : writes_) {
    if (w.table == &t && w.key == key) return &w;
  }
  return nullptr;
}

inline Transaction::BucketLock* Transaction::find_bucket(const Table& t, uint64_t bucket) {
  for (auto& b : buckets_) {
    if (b.table == &t && b.bucket == bucket) return &b;
  }
  return nullptr;
}

inline constexpr uint64_t kZeroWord = 0;  // written to release a lock word or clear a log

// The slot header at `at` of an image read from a node.
inline SlotHeader header_of(const std::string& image, size_t at = 0) {
  SlotHeader h;
  std::memcpy(&h, image.data() + at, sizeof(h));
  return h;
}

// Where slot `slot` starts in an image of its bucket.
inline uint64_t slot_offset(const Table& t, uint32_t slot) {
  return sizeof(BucketHeader) + slot * t.slot_bytes();
}

// Whether a slot with header h holds a present record of `key`.
inline bool holds(const SlotHeader& h, uint64_t key) {
  return (h.flags & kSlotPresent) && h.key == key;
}

}  // namespace farmem::txn
