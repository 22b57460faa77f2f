// HashTable: a key-value hash table in far memory, read and written with one-sided operations
// only (RACE hashing as adapted by SMART-HT). Memory nodes' CPUs do nothing on its data path.
//
// The table is split into one shard per memory node (shard = hash(key) mod shards); a shard is
// an extendible-hashing directory of subtables of 64-byte buckets, with KV blocks stored out
// of place on the shard's node. Layout: ds/hash/layout.h, docs/formats/hash_table.md.
//
// Operations are coroutines (and have blocking *_sync wrappers):
//   get    - 1 round trip on a speculative-cache hit, otherwise 2 (buckets, then block)
//   insert - fails with kAlreadyExists if the key is present
//   update - fails with kNotFound if the key is absent
//   put    - insert or update
//   erase  - fails with kNotFound if the key is absent
// Concurrency is lock-free: slots change only by CAS; an insert claims a slot as "pending",
// re-reads, and commits only if its slot is the only one holding the key (a committed rival
// means kAlreadyExists; with rival pending inserts the higher slot withdraws and retries, the
// lower waits). Readers ignore pending slots. CAS retry loops use the thread's backoff. A
// client that dies between claiming and committing leaves a pending slot behind (ignored by
// readers; a later insert of that key gives up after max_attempts). Replaced blocks are retired and reused after a grace period longer than
// any operation can hold a slot word it read (reads also validate checksum and key).
//
// A HashTable object is a per-thread handle: open one per thread with that thread's
// ThreadClient. Keys and values passed to an operation must stay alive until it completes.
//
// Growth is online: an insert that finds both of its buckets full splits the subtable (extendible
// hashing, RACE). The splitter locks the subtable, freezes every slot (a CAS per slot sets bit 0,
// so no other CAS on it can succeed), copies the committed slots into two new subtables one depth
// deeper, doubles the shard's directory if needed and publishes them, and retires the frozen
// subtable (freed after the grace period). Every operation that sees a frozen slot among its
// buckets refreshes its directory and retries with backoff, so nothing is read from or written
// to a subtable that is being replaced. Splits stop at max_depth (then kResourceExhausted).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/runtime/backoff.h"
#include "farmem/ds/hash/layout.h"

namespace farmem::ds::hash {

struct HashTableOptions {
  uint32_t main_buckets_log2 = 14;   // per subtable (create only): 16384 main buckets, 1.5 MiB
  uint32_t initial_depth = 3;        // 2^depth subtables per shard (create only)
  uint32_t max_depth = kMaxDepth;    // splits stop here (create only; initial_depth..kMaxDepth)
  bool speculative_lookup = true;    // SMART's key -> slot cache
  uint32_t spec_cache_log2 = 18;     // entries in the per-handle cache (16 B each: 4 MiB)
  // A retired block is reused only after this. 0 = auto: 2 x the client's op_timeout_ms + 1 s,
  // longer than any operation can hold a slot word it read (each remote step has that deadline).
  uint64_t retire_grace_ms = 0;
  // Bound on blocks waiting for their grace period (16 B of local memory each). The list holds
  // about retire rate x grace in steady state (7 M at 650 K updates/s and the 11 s default
  // grace); above the bound retiring operations wait, which stalls an update-heavy thread.
  size_t max_retired = size_t{1} << 24;
  uint32_t max_attempts = 100000;    // bound on retries of one operation
  // An operation waits at most this long for splits (then kTimedOut: the splitter may have
  // died). 0 = auto: max(10 s, 4 x the client's op_timeout_ms).
  uint64_t split_wait_ms = 0;
};

struct HashStats {
  uint64_t gets = 0;
  uint64_t get_round_trips = 0;  // batches waited on by get
  uint64_t spec_hits = 0;
  uint64_t spec_misses = 0;
  uint64_t inserts = 0, updates = 0, puts = 0, erases = 0;
  uint64_t cas_failures = 0;     // lost slot CAS races (each retried with backoff)
  uint64_t stale_reads = 0;      // torn or recycled blocks seen and retried
  uint64_t retired = 0, reclaimed = 0;
  uint64_t splits = 0;           // subtables this handle split
  uint64_t split_failures = 0;   // splits that failed (and undid themselves when they could)
  uint64_t split_waits = 0;      // retries because a split had frozen the buckets
  uint64_t directory_reads = 0;  // directory refreshes (stale cache, split, periodic check)
};

class HashTable {
 public:
  // Creates the table across every memory node and publishes it under the root "hash/<name>".
  static runtime::Task<Result<std::unique_ptr<HashTable>>> create(
      client::ThreadClient* client, std::string name, HashTableOptions options = {});
  // Opens a table another process created (kNotFound if none; kInvalidArgument if the root
  // does not name a hash table).
  static runtime::Task<Result<std::unique_ptr<HashTable>>> open(
      client::ThreadClient* client, std::string name, HashTableOptions options = {});

  // true and *value filled if present; false if absent.
  runtime::Task<Result<bool>> get(std::string_view key, std::string* value);
  runtime::Task<Status> insert(std::string_view key, std::string_view value);
  runtime::Task<Status> update(std::string_view key, std::string_view value);
  runtime::Task<Status> put(std::string_view key, std::string_view value);
  runtime::Task<Status> erase(std::string_view key);

  Result<bool> get_sync(std::string_view key, std::string* value);
  Status insert_sync(std::string_view key, std::string_view value);
  Status update_sync(std::string_view key, std::string_view value);
  Status put_sync(std::string_view key, std::string_view value);
  Status erase_sync(std::string_view key);

  const HashStats& stats() const { return stats_; }
  uint32_t shard_count() const { return static_cast<uint32_t>(shards_.size()); }
  // Global depth of shard i's directory as this handle last read it.
  uint32_t global_depth(uint32_t shard) const { return shards_.at(shard).global_depth; }
  // Number of distinct subtables in shard i's cached directory.
  size_t subtable_count(uint32_t shard) const;
  client::ThreadClient& client() { return *client_; }
  // Diagnostic: how many committed slots hold `key` (the invariant is at most one).
  runtime::Task<Result<int>> committed_copies(std::string_view key);
  // Returns every retired block whose grace period has passed to the allocator.
  runtime::Task<void> reclaim(bool wait_for_all);

 private:
  struct Shard {
    uint16_t node = 0;
    GlobalAddress directory;
    uint32_t global_depth = 0;
    uint64_t epoch = 0;             // directory epoch of the cached entries
    uint64_t checked_cycles = 0;    // TSC when the cached directory was last known current
    std::vector<uint64_t> entries;  // cached directory, 2^global_depth entries
  };
  struct Buckets {
    Bucket bucket[4];
    GlobalAddress addr[4];
  };
  struct Match {
    int bucket = -1;
    int slot = -1;
    uint64_t word = 0;
    uint64_t block_bytes = 0;  // size of the KV block the slot points to
  };
  // Indexed by h1; the word's fingerprint is the tag. A wrong entry (another key with the same
  // index and fingerprint) only costs a wasted round trip: the block's key is compared.
  struct SpecEntry {
    uint64_t slot_addr = 0;  // packed GlobalAddress; 0 = empty
    uint64_t slot_word = 0;
  };
  static_assert(sizeof(SpecEntry) == 16);
  struct Retired {
    uint64_t addr;     // packed GlobalAddress
    uint32_t bytes;
    uint32_t when_ms;  // now_ns() / 1e6, truncated: ages are compared modulo 2^32 ms
  };
  static_assert(sizeof(Retired) == 16);
  // kFrozen: a split froze some slot of the buckets; refresh the directory and retry.
  enum class Scan { kOk, kTorn, kFrozen };

  HashTable(client::ThreadClient* client, HashTableOptions options);
  Status check_sizes(std::string_view key, std::string_view value) const;
  Shard& shard_of(const KeyHash& kh) { return shards_[(kh.h2 >> 32) % shards_.size()]; }
  void bucket_addrs(const Shard& s, const KeyHash& kh, Buckets* b) const;
  runtime::Task<Status> refresh_directory(Shard& s, uint32_t* rtt = nullptr);
  // Re-reads the directory header when the cache is older than a quarter of the grace period,
  // so no handle uses a subtable that was retired and freed (and the entries if it changed).
  runtime::Task<Status> check_directory(Shard& s, uint32_t* rtt = nullptr);
  bool directory_due(const Shard& s) const;
  void clear_spec_cache();
  // After seeing frozen slots: back off, then re-read the directory. kTimedOut once the
  // operation has waited split_wait_ms in all (*since_ns: when it started waiting, 0 = not yet).
  runtime::Task<Status> wait_for_split(Shard& s, runtime::Backoff& backoff, uint64_t* since_ns,
                                       uint32_t* rtt = nullptr);
  uint64_t split_wait_ns() const;
  // Splits the subtable that holds kh if it is still live and below max_depth: true when this
  // call split it, false when it is already being split or the cache was stale (retry either
  // way), kResourceExhausted at max_depth.
  runtime::Task<Result<bool>> split(Shard& s, const KeyHash& kh);
  // Best effort after a failed split: unfreezes the slots frozen so far and unlocks.
  runtime::Task<void> abandon_split(GlobalAddress sub);
  runtime::Task<Status> freeze(GlobalAddress sub, std::vector<Bucket>* buckets);
  // *maybe_published: the directory entries may have been written (no undo after that).
  runtime::Task<Status> publish_split(Shard& s, uint32_t depth, uint32_t suffix,
                                      GlobalAddress old_sub, GlobalAddress sub0,
                                      GlobalAddress sub1, bool* maybe_published);
  // `rtt` (optional) counts the round trips the calling operation waited on.
  // Reads both combined buckets (and writes `block` in the same batch when given).
  runtime::Task<Status> read_buckets(Shard& s, const KeyHash& kh, Buckets* b,
                                     GlobalAddress block, const std::string* block_bytes,
                                     uint32_t* rtt = nullptr);
  bool buckets_fresh(const KeyHash& kh, const Buckets& b) const;
  // Finds the committed (or, with pending_too, any) slot holding `key`, lowest address first.
  runtime::Task<Result<Scan>> find(const Shard& s, std::string_view key, const KeyHash& kh,
                                   const Buckets& b, bool pending_too, std::vector<Match>* out,
                                   std::string* value, uint32_t* rtt = nullptr);
  // The lowest committed slot holding `key` (bucket < 0: absent); `all`, when given, receives
  // every committed slot holding it.
  runtime::Task<Result<Match>> locate(Shard& s, std::string_view key, const KeyHash& kh,
                                      Buckets* b, std::string* value, GlobalAddress block,
                                      const std::string* block_bytes, uint32_t* rtt = nullptr,
                                      std::vector<Match>* all = nullptr);
  runtime::Task<Result<bool>> speculative_get(const Shard& s, std::string_view key,
                                              const KeyHash& kh, std::string* value,
                                              uint32_t* rtt);
  runtime::Task<Result<GlobalAddress>> write_block(const Shard& s, std::string_view key,
                                                   std::string_view value, std::string* bytes);
  // Claims a slot for an already written block and resolves duplicates. *published tells
  // whether the block was ever visible (then it must be retired, not freed, if unused).
  runtime::Task<Status> insert_block(Shard& s, std::string_view key, const KeyHash& kh,
                                     GlobalAddress block, const std::string& bytes,
                                     bool block_written, bool* published);
  runtime::Task<Status> release_block(GlobalAddress block, uint64_t bytes, bool published);
  runtime::Task<Status> replace(Shard& s, std::string_view key, const KeyHash& kh,
                                std::string_view value, bool insert_if_absent);
  void remember(const KeyHash& kh, GlobalAddress slot, uint64_t word);
  void forget(const KeyHash& kh);
  runtime::Task<Status> retire(GlobalAddress addr, uint64_t bytes);
  uint64_t grace_ns() const;
  static uint64_t age_ns(const Retired& r);
  static GlobalAddress slot_addr(const Buckets& b, const Match& m) {
    return b.addr[m.bucket] + 8 + 8 * static_cast<uint64_t>(m.slot);
  }

  client::ThreadClient* client_;
  HashTableOptions options_;
  uint32_t main_buckets_log2_ = 0;
  uint32_t max_depth_ = kMaxDepth;
  uint64_t check_interval_cycles_ = 0;  // directory re-check period: a quarter of the grace
  uint64_t split_token_ = 0;            // written into a subtable's lock while splitting it
  std::vector<Shard> shards_;
  std::vector<SpecEntry> spec_;
  std::deque<Retired> retired_;
  HashStats stats_;
};

}  // namespace farmem::ds::hash
