// ServerPool: one named key-value space on one shard (docs/formats/kv.md), and the interface
// through which Active Data Objects plug into the kv service (PoolHooks).
//
// A pool's memory (primary index, records, allocator chunks) is owned by the node object
// "kv/<name>", so it outlives its clients and comes back when the pool is deleted. Everything
// here runs on the pool's shard (worker) thread, which is the only writer of its records, so
// no locks are taken; "locks" below are the key locks clients (and ADOs) hold across requests.
//
// Key operations keep the record rules of kv.md: a new record is written whole as `writing`,
// then in the same call the old record becomes `dead`, the index names the new one and it
// becomes `live`; dead records' memory is reused only after the grace period.
//
// On a durable node (make_durable) the pool also keeps a header block (pool_header.h) and marks
// every region byte it changes in the shard's DirtyRanges, a record before any bucket that
// names it; recover() rebuilds a pool from what a crash left (kv.md "On a durable memory node").
//
// Lock owners are session ids (clients). An ADO manager that locks keys for work of its own
// uses owner ids with kAdoOwnerBit set, which no session id has.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ado_settings.h"
#include "allocator.h"
#include "dirty_ranges.h"
#include "farmem/common/result.h"
#include "farmem/kv/record.h"
#include "farmem/kv/wire.h"
#include "farmem/memnode/service.h"
#include "hopscotch.h"
#include "pool_header.h"
#include "region.h"
#include "secondary_index.h"

namespace farmem::kv::service {

inline constexpr uint64_t kAdoOwnerBit = 1ull << 63;

// Node-wide unique record versions: a shard takes blocks of them from a shared counter.
class Versions {
 public:
  explicit Versions(std::atomic<uint64_t>& shared) : shared_(shared) {}
  uint64_t next();

 private:
  static constexpr uint64_t kBlock = 1 << 16;
  std::atomic<uint64_t>& shared_;
  uint64_t next_ = 0, end_ = 0;
};

// What list (any worker) reads of a pool without touching it.
struct PoolSummary {
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> used_bytes{0};
  std::atomic<uint64_t> capacity_bytes{0};
  std::atomic<uint32_t> open_handles{0};
};

// Where a key's current value is.
struct KeyInfo {
  uint64_t record = 0;  // region offset of the record
  uint64_t version = 0;
  uint32_t key_bytes = 0;
  uint32_t value_bytes = 0;
  uint64_t value = 0;  // region offset of the value's first byte
  uint64_t write_epoch_ns = 0;
  uint64_t record_bytes() const { return kv::record_bytes(key_bytes, value_bytes); }
};

// A lock on a key held across requests (locate/release).
struct LockGrant {
  uint64_t token = 0;
  uint64_t owner = 0;
  wire::LocateMode mode = wire::LocateMode::kRead;
  std::string key;
  uint64_t record = 0;   // the locked record (kRead, kWrite) or the new one (kPutNew)
  uint64_t version = 0;  // kPutNew: the new record's version
  uint64_t address = 0;  // region offset of byte `offset` of the value
  uint64_t length = 0;   // bytes addressable from `address`
  uint32_t value_bytes = 0;
};

class ServerPool {
 public:
  // `source` gives heap blocks as the pool's object; the pool keeps it.
  ServerPool(std::string name, uint64_t handle, uint64_t object_id, uint64_t capacity_bytes,
             RegionView region, std::unique_ptr<MemorySource> source, Versions& versions,
             uint64_t grace_ns, std::shared_ptr<PoolSummary> summary);
  Status init(uint64_t expected_count, uint64_t now_ns);

  // ---- durable node ----
  // Before init() or recover(): mark changes in `dirty`; `temporary` goes into the header.
  void make_durable(DirtyRanges* dirty, bool temporary);
  // What recover() found.
  struct Recovered {
    uint64_t keys = 0;
    uint64_t dropped = 0;      // index entries whose record did not hold
    uint64_t max_version = 0;  // the highest record version kept
  };
  // Instead of init(): the pool as its header (at `header`, read as `meta`) and index name it,
  // in the heap blocks its object holds (`blocks`, the header's included).
  // `undo` is the pool's undo block among them (0: none): an invocation's open log is rolled
  // back before the index is repaired.
  Result<Recovered> recover(const PoolMeta& meta, uint64_t header, MemorySource::Block undo,
                            std::vector<MemorySource::Block> blocks);

  const std::string& name() const { return name_; }
  uint64_t handle() const { return handle_; }
  uint64_t object_id() const { return object_id_; }
  RegionView region() const { return region_; }
  uint64_t count() const { return index_.size(); }
  uint64_t used_bytes() const { return allocator_.used_bytes(); }
  uint64_t capacity_bytes() const { return allocator_.capacity_bytes(); }
  uint64_t index_slots() const { return index_.slots(); }
  uint64_t write_epoch_ns() const { return write_epoch_ns_; }

  // ---- keys (the shard's thread) ----
  // kNotFound if absent. The KeyInfo is valid until the next change to the pool.
  Result<KeyInfo> lookup(std::string_view key) const;
  // kBusy if `owner` may not read `key` now (another owner holds a write lock).
  Status check_readable(std::string_view key, uint64_t owner) const;
  // put flags: wire::kPutCreateOnly, wire::kPutDontOverwrite. *existed: kPutDontOverwrite found
  // the key (nothing changed). *out: the key's current record afterwards.
  Status put(std::string_view key, const void* value, uint32_t value_bytes, uint8_t flags,
             uint64_t now_ns, KeyInfo* out, bool* existed);
  Status erase(std::string_view key, uint64_t now_ns);
  // Visits every key: f(key, KeyInfo). The pool must not change during the walk.
  template <typename F>
  void for_each_key(F&& f) const {
    index_.for_each([&](const IndexBucket& b) {
      auto info = info_of(b);
      if (info.has_value()) f(index_.key_of(b.record), *info);
    });
  }

  // ---- key locks (locate / release; ADO work) ----
  Result<LockGrant> lock(uint64_t owner, std::string_view key, wire::LocateMode mode,
                         uint64_t offset, uint64_t length, uint8_t flags, uint64_t now_ns);
  // flags: wire::kReleaseAbort. kNotFound if `owner` holds no such token.
  Status release(uint64_t owner, uint64_t token, uint32_t flags, uint64_t now_ns);
  // Session end: kRead dropped, kWrite published as is, kPutNew dropped.
  void release_all(uint64_t owner, uint64_t now_ns);
  // ADO resize_value: for a kWrite lock `token` of `owner`, moves the value to a new record of
  // `new_size` bytes (contents kept up to the smaller size, the rest zero). The new record is
  // the key's record at once but stays `locked` (invisible to one-sided readers) until release
  // publishes it with a new version; the old one is dead. Returns the updated grant (address,
  // length, value_bytes). kResourceExhausted if the pool is full (nothing changes).
  Result<LockGrant> resize(uint64_t owner, uint64_t token, uint64_t new_size, uint64_t now_ns);
  // The grant behind a token, if `owner` holds it.
  const LockGrant* grant(uint64_t owner, uint64_t token) const;
  size_t locks_held() const { return grants_.size(); }

  // ---- pool memory for ADOs (allocate/free pool memory callbacks) ----
  Result<uint64_t> allocate(uint64_t bytes, uint64_t now_ns);
  void free(uint64_t offset, uint64_t bytes, uint64_t now_ns);

  // ---- the ADO undo log (kv/ado/undo_log.h, server_pool_undo.cc) ----
  // The region offset of the pool's undo block, made (empty) on first use: a heap block of the
  // pool's object, like the header, outside the pool's capacity. kResourceExhausted if the heap
  // has no room.
  Result<uint64_t> undo_block();
  uint64_t undo_bytes() const { return undo_bytes_; }
  // Marks (for the log) bytes of the undo block an ADO wrote; false if they leave the block.
  bool mark_undo(uint64_t offset, uint64_t bytes);
  // Puts back the old bytes the open undo log holds for invocation `work_id` (0: whichever
  // invocation's is open), newest entry first, each only if allowed(offset, bytes); then ends
  // the log. Returns how many entries were put back. Marks what it changes.
  using UndoAllowed = std::function<bool(uint64_t offset, uint64_t bytes)>;
  size_t roll_back_undo(uint64_t work_id, const UndoAllowed& allowed);
  // Ends the undo log of invocation `work_id` if it is open (its changes stay).
  void end_undo(uint64_t work_id);

  // ---- secondary index, ADO settings ----
  void add_index();  // builds it from the current keys
  void remove_index();
  const SecondaryIndex* secondary() const { return secondary_.get(); }
  const AdoSettings& ado() const { return ado_; }
  // kResourceExhausted (nothing changes) if a durable pool's header cannot hold them.
  Status set_ado(AdoSettings settings);

  // ---- handles ----
  void open(uint64_t session, bool writable);
  // false if the session has no handle open.
  bool close(uint64_t session);
  void close_all(uint64_t session);
  bool is_open(uint64_t session) const { return opens_.count(session) != 0; }
  bool writable(uint64_t session) const;
  bool open_by_others(uint64_t session) const;
  uint32_t open_handles() const { return open_handles_; }

 private:
  struct KeyLock {
    uint32_t readers = 0;
    uint64_t writer = 0;  // token of the kWrite / kPutNew grant, 0 = none
  };
  struct Opens {
    uint32_t handles = 0;
    uint32_t writable = 0;
  };
  std::optional<KeyInfo> info_of(const IndexBucket& b) const;
  // Marks the record at `record` dead; retire() its memory once the index no longer names it
  // (a durable pool may log the memory's return before the index's change otherwise).
  struct Killed {
    uint64_t record = 0;
    uint64_t bytes = 0;  // 0: not a record inside the region (nothing to retire)
  };
  Killed kill(uint64_t record);
  void retire(Killed k, uint64_t now_ns);
  // Publishes record `rec` (written, state writing) as the key's value (rule 1 of kv.md).
  Status publish(std::string_view key, uint64_t hash, uint64_t bucket, uint64_t rec,
                 uint64_t version, uint64_t now_ns);
  void drop_grant(const LockGrant& g);
  // Region writes that a durable pool marks (record.h does the writing).
  void write_record_marked(uint64_t rec, uint64_t version, std::string_view key, const void* value,
                           uint32_t value_bytes);
  void store_state_marked(uint64_t rec, uint64_t state);
  void mark(uint64_t offset, uint64_t bytes) {
    if (dirty_ != nullptr) dirty_->mark(offset, bytes);
  }
  // Rewrites a durable pool's header (after its table, index flag or ADO settings changed).
  Status write_header();
  // write_header() on a durable pool, which cannot fail here (its settings were checked).
  void rewrite_header();
  // rewrite_header() if the index moved to another table.
  void follow_table();
  // recover(): whether the record `b` names holds (and makes it live), for HopscotchIndex::repair;
  // adds a kept record to `lives`.
  bool keep_on_recovery(const IndexBucket& b, uint64_t* max_version,
                        std::vector<PoolAllocator::Live>* lives);
  // Pool memory for a record (or an ADO's block); it lies inside the region.
  Result<uint64_t> allocate_record(uint64_t bytes, uint64_t now_ns);
  void refresh_summary();

  std::string name_;
  uint64_t handle_;
  uint64_t object_id_;
  RegionView region_;
  std::unique_ptr<MemorySource> source_;
  Versions& versions_;
  PoolAllocator allocator_;
  HopscotchIndex index_;
  std::unique_ptr<SecondaryIndex> secondary_;
  AdoSettings ado_;
  std::shared_ptr<PoolSummary> summary_;
  uint64_t write_epoch_ns_ = 0;
  std::unordered_map<std::string, KeyLock> locks_;
  std::unordered_map<uint64_t, LockGrant> grants_;  // by token
  uint64_t next_token_ = 1;
  std::unordered_map<uint64_t, Opens> opens_;  // by session
  uint32_t open_handles_ = 0;
  DirtyRanges* dirty_ = nullptr;  // durable node
  bool temporary_ = false;
  uint64_t header_ = 0;  // region offset of the header block (durable node)
  uint64_t undo_ = 0;    // region offset of the undo block (0: none yet)
  uint64_t undo_bytes_ = 0;
  uint64_t header_sequence_ = 0;
  uint64_t header_table_ = 0;  // the table the header names
};

}  // namespace farmem::kv::service
