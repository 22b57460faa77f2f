// HashTable: a key-value hash table in far memory, read and written with one-sided operations
// only (RACE hashing as adapted by SMART-HT). Memory nodes' CPUs do nothing on its data path
// (over TCP the node performs the one-sided operations it is sent, client/served_ops.h).
//
// The table is split into one shard per memory node (shard = hash(key) mod shards); a shard is
// an extendible-hashing directory of subtables of 64-byte buckets, with KV blocks stored out
// of place on the shard's node. Layout: ds/hash/layout.h, docs/formats/hash_table.md.
//
// Operations are coroutines (plain code runs one with runtime::sync_wait):
//   get    - 1 round trip on a speculative-cache hit, otherwise 2 (buckets, then block)
//   insert - fails with kAlreadyExists if the key is present
//   update - fails with kNotFound if the key is absent
//   put    - insert or update
//   erase  - fails with kNotFound if the key is absent
// Concurrency is lock-free: slots change only by CAS; an insert claims a slot as "pending",
// re-reads, and commits only if its slot is the only one holding the key (a committed rival
// means kAlreadyExists; with rival pending inserts the higher slot withdraws and retries, the
// lower waits). Readers ignore pending slots. CAS retry loops use the thread's backoff and give
// up with kRetriesExhausted after max_attempts. A client that dies between claiming and
// committing leaves a pending slot behind; its block names the writer's session, and an insert
// of the same key that waits on it clears it once the node reports that session ended.
// Replaced blocks are retired and reused after a grace period longer than any operation can
// hold a slot word it read (ds/common/reclaimer.h; reads also validate checksum and key).
//
// Memory: everything the table allocates belongs to its object on each node
// (ds/common/far_object.h). create() that fails part-way, or whose process dies, leaves
// nothing; destroy() returns all of it; a temporary table (HashTableOptions::temporary) is
// destroyed with its creator's sessions. A dropped handle leaves its unused chunk space and
// retired blocks allocated to the table until it is destroyed.
//
// A HashTable object is a per-thread handle: open one per thread with that thread's
// ThreadClient. Keys and values passed to an operation must stay alive until it completes.
//
// Growth is online: an insert that finds both of its buckets full splits the subtable
// (extendible hashing, RACE). The splitter takes the subtable's lease lock
// (ds/common/lease_lock.h), freezes every slot (a CAS per slot sets bit 0), copies the committed
// slots into two new subtables one depth deeper, records them in the old subtable, and
// publishes them under the directory's lease lock with an intent record; the frozen subtable is
// retired. Every operation that sees a frozen slot refreshes its directory and retries with
// backoff; one that waits longer than lease_check_ms checks the locks' holders, and takes over a
// lock whose holder's session ended: it finishes the split if its halves were recorded and
// undoes it otherwise. Splits stop at max_depth (then kResourceExhausted).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/ds/common/direct_mapped_cache.h"
#include "farmem/ds/common/far_object.h"
#include "farmem/ds/common/lease_lock.h"
#include "farmem/ds/common/object_heap.h"
#include "farmem/ds/common/procedure_support.h"
#include "farmem/ds/common/reclaimer.h"
#include "farmem/ds/common/retry.h"
#include "farmem/ds/hash/layout.h"
#include "farmem/ds/hash/served.h"
#include "farmem/runtime/backoff.h"

namespace farmem::ds::hash {

struct HashTableOptions {
  uint32_t main_buckets_log2 = 14;  // per subtable (create only): 16384 main buckets, 1.5 MiB
  uint32_t initial_depth = 3;       // 2^depth subtables per shard (create only)
  uint32_t max_depth = kMaxDepth;   // splits stop here (create only; initial_depth..kMaxDepth)
  // create only: the table lives as long as the creating thread's sessions (a benchmark's
  // scratch table); otherwise it lives until destroy().
  bool temporary = false;
  bool speculative_lookup = true;  // SMART's key -> slot cache
  uint32_t spec_cache_log2 = 18;   // entries in the per-handle cache (16 B each: 4 MiB)
  // A retired block is reused only after this. 0 = auto: 2 x the client's op_timeout_ms + 1 s,
  // longer than any operation can hold a slot word it read (each remote step has that deadline).
  uint64_t retire_grace_ms = 0;
  // Bound on blocks waiting for their grace period (16 B of local memory each). The list holds
  // about retire rate x grace in steady state (7 M at 650 K updates/s and the 11 s default
  // grace); above the bound retiring operations wait, which stalls an update-heavy thread.
  size_t max_retired = size_t{1} << 24;
  uint32_t max_attempts = 100000;  // bound on retries of one operation
  // An operation waits at most this long for splits (then kTimedOut: the splitter is alive but
  // stopped or very slow). 0 = auto: max(10 s, 4 x the client's op_timeout_ms).
  uint64_t split_wait_ms = 0;
  // How long an operation waits on a frozen subtable or a pending rival before it asks the node
  // whether the holder's session is still open (and takes over if not).
  uint64_t lease_check_ms = 20;
  // The node's served procedures (ds/hash/served.h): a get, update or insert as one call the node
  // runs, on nodes whose one-sided operations are served anyway (TCP) and that are volatile;
  // elsewhere, and with false, every operation stays one-sided.
  bool served_procedures = true;
};

struct HashStats {
  uint64_t gets = 0;
  uint64_t get_round_trips = 0;  // batches waited on by get
  uint64_t spec_hits = 0;
  uint64_t spec_misses = 0;
  uint64_t inserts = 0, updates = 0, puts = 0, erases = 0;
  uint64_t cas_failures = 0;  // lost slot CAS races (each retried with backoff)
  uint64_t stale_reads = 0;   // torn or recycled blocks seen and retried
  uint64_t settled = 0;       // slots a durable node's writer had not persisted, persisted here
  uint64_t retired = 0, reclaimed = 0;
  uint64_t splits = 0;            // subtables this handle split
  uint64_t split_failures = 0;    // splits that failed (and undid themselves when they could)
  uint64_t split_waits = 0;       // retries because a split had frozen the buckets
  uint64_t directory_reads = 0;   // directory refreshes (stale cache, split, periodic check)
  uint64_t takeovers = 0;         // locks taken over from ended sessions (splits finished/undone)
  uint64_t pending_cleared = 0;   // pending slots of ended sessions cleared
  uint64_t served_gets = 0;       // gets answered by the node's procedure
  uint64_t served_updates = 0;    // updates and puts whose slot the node's procedure swung
  uint64_t served_inserts = 0;    // inserts (and puts of new keys) the node's procedure committed
  uint64_t served_fallbacks = 0;  // procedure calls that sent the operation one-sided
};

class HashTable {
 public:
  // Creates the table across every memory node and publishes it under the root "hash/<name>".
  static runtime::Task<Result<std::unique_ptr<HashTable>>> create(client::ThreadClient* client,
                                                                  std::string name,
                                                                  HashTableOptions options = {});
  // Opens a table another process created (kNotFound if none; kInvalidArgument if the root
  // does not name a hash table).
  static runtime::Task<Result<std::unique_ptr<HashTable>>> open(client::ThreadClient* client,
                                                                std::string name,
                                                                HashTableOptions options = {});
  // Destroys the named table: frees all of its far memory and its root. Precondition: no
  // handle uses it any more.
  static runtime::Task<Status> destroy(client::ThreadClient* client, std::string name);
  ~HashTable();

  // true and *value filled if present; false if absent.
  runtime::Task<Result<bool>> get(std::string_view key, std::string* value);
  runtime::Task<Status> insert(std::string_view key, std::string_view value);
  runtime::Task<Status> update(std::string_view key, std::string_view value);
  runtime::Task<Status> put(std::string_view key, std::string_view value);
  runtime::Task<Status> erase(std::string_view key);
  // Destroys this handle's table (as the static destroy); the handle is unusable afterwards.
  runtime::Task<Status> destroy();

  const HashStats& stats() const;
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

  // Test hook: a split stops (as if its client died) after this step, leaving its locks held
  // and whatever it wrote. 0 = never. Steps: 1 locked, 2 frozen, 3 halves recorded,
  // 4 directory locked with the intent written, 5 entries written.
  void set_split_stop_after_for_test(int step) { split_stop_after_ = step; }

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
    uint64_t owner = 0;        // the session that wrote the block
  };
  // Indexed by h1; the word's fingerprint is the tag. A wrong entry (another key with the same
  // index and fingerprint) only costs a wasted round trip: the block's key is compared.
  struct SpecEntry {
    uint64_t slot_addr = 0;  // packed GlobalAddress; 0 = empty
    uint64_t slot_word = 0;
  };
  static_assert(sizeof(SpecEntry) == 16);
  // kFrozen: a split froze some slot of the buckets; refresh the directory and retry.
  // kTorn: a block was read mid-write, or a slot of the key was just settled: read again.
  enum class Scan { kOk, kTorn, kFrozen };
  // What an insert learned from one look at its buckets.
  enum class Claim { kClaimed, kExists, kRetry, kLostRace, kFull };
  // The state one operation's steps share, and one pass of its retries (op_context.h).
  struct NewBlock;
  struct OpContext;
  struct Wait;
  // An insert's claimed pending slot: where, and the word it holds.
  struct PendingSlot {
    GlobalAddress addr;
    uint64_t word = 0;
  };
  // What settle_claim's re-read found besides our own pending slot.
  struct Rivals {
    bool committed = false;      // a committed slot holds the key: it wins
    bool lower_pending = false;  // a pending rival holds a lower slot: we withdraw
    std::vector<Match> all;      // every other slot holding the key
  };

  HashTable(client::ThreadClient* client, HashTableOptions options, FarObject object);
  Status check_sizes(std::string_view key, std::string_view value) const;
  Shard& shard_of(const KeyHash& kh) { return shards_[(kh.h2 >> 32) % shards_.size()]; }
  GlobalAddress subtable_of(const Shard& s, const KeyHash& kh) const;
  void bucket_addrs(const Shard& s, const KeyHash& kh, Buckets* b) const;
  static runtime::Task<Status> create_shard(client::ThreadClient* c, const FarObject& object,
                                            uint16_t node, const HashTableOptions& o, Shard* s);

  // ---- the directory cache (directory.cc); each read counts in op.round_trips
  runtime::Task<Status> refresh_directory(OpContext& op);
  // Re-reads the directory header when the cache is older than a quarter of the grace period,
  // so no handle uses a subtable that was retired and freed (and the entries if it changed).
  runtime::Task<Status> check_directory(OpContext& op);
  bool directory_due(const Shard& s) const;
  // After seeing frozen slots: back off, check the split's locks when waiting long, then
  // re-read the directory. kTimedOut once the pass has waited split_wait_ms in all.
  runtime::Task<Status> wait_for_split(OpContext& op, Wait& wait);
  // After reading buckets that belong to another subtable: refresh the directory, and when
  // it has not changed, wait like for a split (a split is publishing, or died doing so).
  runtime::Task<Status> resync(OpContext& op, Wait& wait);
  uint64_t split_wait_ns() const;
  uint64_t lease_check_ns() const { return options_.lease_check_ms * 1'000'000; }

  // ---- growth (split.cc)
  // Splits the subtable that holds kh if it is still live and below max_depth: true when this
  // call split it (or finished a dead splitter's split), false when it is being split by a live
  // client or the cache was stale (retry either way), kResourceExhausted at max_depth.
  runtime::Task<Result<bool>> split(Shard& s, const KeyHash& kh);
  // With the subtable's lock held: freeze, copy into two halves, record them, publish, retire.
  runtime::Task<Status> run_split(Shard& s, GlobalAddress sub, const SubtableHeader& h);
  // With the lock taken over from a dead splitter: finish (halves recorded) or undo.
  runtime::Task<Status> recover_split(Shard& s, GlobalAddress sub);
  // If a split has frozen kh's subtable (or locked the directory) for a session that ended,
  // takes over and finishes or undoes it.
  runtime::Task<Status> repair_stuck_split(Shard& s, const KeyHash& kh);
  runtime::Task<Status> freeze(GlobalAddress sub, std::vector<Bucket>* buckets);
  runtime::Task<Status> build_halves(Shard& s, GlobalAddress sub, const SubtableHeader& h,
                                     const std::vector<Bucket>& buckets, GlobalAddress halves[2]);
  // Clears the record of the halves, unfreezes the slots frozen so far and unlocks (after a
  // failed or abandoned split); true when all of it was done.
  runtime::Task<bool> abandon_split(GlobalAddress sub, ds::LeaseLock& lock);
  // Retires the subtable of a published split whose splitter died before retiring it.
  runtime::Task<Status> retire_orphan(Shard& s, uint64_t sub_offset);
  // Takes the directory lock (taking it over from a dead holder, finishing its intent).
  runtime::Task<Result<std::unique_ptr<ds::LeaseLock>>> lock_directory(Shard& s);
  // With the directory locked: writes the intent, the entries and the header, clears the
  // intent. The entries are recomputed from the current ones, so it may run again.
  // (lock_directory re-applies an intent it finds recorded.)
  runtime::Task<Status> apply_intent(Shard& s, const DirectoryHeader& intent);
  // *maybe_published: the directory may have been changed (do not undo after that).
  runtime::Task<Status> publish_split(Shard& s, GlobalAddress sub, uint32_t depth, uint32_t suffix,
                                      GlobalAddress half0, GlobalAddress half1,
                                      bool* maybe_published);

  // ---- lookups (lookup.cc, get.cc)
  // Reads both combined buckets of op's key (and writes op's new block in the same batch when
  // it is not written yet).
  runtime::Task<Status> read_buckets(OpContext& op, Buckets* b);
  bool buckets_fresh(const KeyHash& kh, const Buckets& b) const;
  // Finds the committed (or, with pending_too, any) slot holding op's key, lowest address first.
  // A slot of the key its writer has not settled is settled first (kTorn: read again), unless
  // op overwrites it (OpContext::overwrites) and it is not an erasing one.
  runtime::Task<Result<Scan>> find(OpContext& op, const Buckets& b, bool pending_too,
                                   std::vector<Match>* out, std::string* value);
  // Persists `slot` (holding `word`, with kSlotUnstableBit or kSlotErasingBit) and clears the
  // bit by CAS; losing that CAS is fine (someone else settled or replaced the word). *found:
  // what the CAS found.
  runtime::Task<Status> settle(GlobalAddress slot, uint64_t word, uint64_t* found = nullptr);
  // What a durable node's writer ORs into the word it publishes (0 on a volatile node).
  uint64_t unstable_bit(uint16_t node) const;
  // Reads the blocks of `cands` into bufs (a second round for blocks longer than the slot
  // says).
  runtime::Task<Status> read_blocks(OpContext& op, const std::vector<Match>& cands,
                                    std::vector<std::string>* bufs);
  // One round of read_blocks (bufs sized to cands): round 0 sizes every buffer as its slot says
  // (64 bytes for a large block, whose slot gives no length) and reads it; round 1 reads the
  // whole of each large block whose header announced more.
  runtime::Task<Status> read_block_round(OpContext& op, const std::vector<Match>& cands, int round,
                                         std::vector<std::string>* bufs);
  void add_block_reads(const Shard& s, const std::vector<Match>& cands, int round,
                       std::vector<std::string>* bufs, client::Batch* batch);
  // The lowest committed slot holding op's key (bucket < 0: absent), its value into *value when
  // given; `all`, when given, receives every committed slot holding it.
  runtime::Task<Result<Match>> locate(OpContext& op, Buckets* b, std::string* value = nullptr,
                                      std::vector<Match>* all = nullptr);
  runtime::Task<Result<bool>> speculative_get(OpContext& op, std::string* value);
  void remember(const KeyHash& kh, GlobalAddress slot, uint64_t word);
  // Over TCP, whether a get tries the speculative cache before the node's procedure: while its
  // recent hit rate (an average over about 16 tries, of kSpecScoreOne) is at least 7/8, and
  // on every kSpecProbeEvery-th get otherwise, to keep measuring.
  bool spec_first(bool served);
  void note_spec(bool hit);
  static constexpr int32_t kSpecScoreOne = 4096;
  static constexpr int32_t kSpecFirstScore = kSpecScoreOne / 8 * 7;
  static constexpr uint32_t kSpecProbeEvery = 16;
  void forget(const KeyHash& kh);

  // ---- served procedures (served.cc; ds/hash/served.h)
  // What a procedure call told the operation to do.
  enum class ServedStep { kDone, kAbsent, kOneSided };
  // Whether op's node runs this table's procedures for this handle, and op's key fits a call.
  bool served_path(const OpContext& op) const;
  // A get as one call: kDone (*value filled), kAbsent, or kOneSided.
  runtime::Task<Result<ServedStep>> served_get(OpContext& op, std::string* value);
  // Writes op's new block and swings the key's slot to it in one message: kDone (the block is
  // published; *retired: how retiring the old one went), kAbsent (the block is written, not
  // published), or kOneSided.
  runtime::Task<Result<ServedStep>> served_replace(OpContext& op, NewBlock& block, Status* retired);
  // replace's served path: true when the operation is finished (*done: its outcome; an unused
  // block released), false when it goes on one-sided.
  runtime::Task<bool> served_put(OpContext& op, NewBlock& block, bool insert_if_absent,
                                 Status* done);
  // Claims, settles and commits a slot for op's new block in one call: kDone, kAbsent (here:
  // the key exists), or kOneSided. The block counts as published afterwards.
  runtime::Task<Result<ServedStep>> served_insert(OpContext& op);
  // Posts one call of `procedure` for op's key (buckets from the cached directory), after the
  // write of `block` in the same message when given and not yet written; a get's value goes to
  // *value.
  runtime::Task<Result<ServedLookupResult>> call_procedure(OpContext& op, uint16_t procedure,
                                                           NewBlock* block, std::string* value);
  // The result in a call's reply slot (a get's value into *value); a node without the
  // procedures is remembered and reads as kRefused.
  Result<ServedLookupResult> read_result(uint16_t node, const void* slot, size_t slot_bytes,
                                         std::string* value);

  // ---- writes (insert.cc, update.cc)
  // Encodes op's key and `value` into *block and allocates its place (written later, along with
  // the first bucket read).
  runtime::Task<Status> write_block(const OpContext& op, std::string_view value, NewBlock* block);
  // Claims a slot for op's new block and resolves duplicates.
  runtime::Task<Status> insert_block(OpContext& op);
  // One look at the buckets: claims a free slot as pending (*mine) or says why not.
  runtime::Task<Result<Claim>> claim_slot(OpContext& op, Wait& wait, bool rivals_seen,
                                          PendingSlot* mine);
  // With our pending slot claimed: commits it when it is the only one holding the key.
  // kAlreadyExists (withdrawn), OK (committed), or kRetry-like: *restart set.
  runtime::Task<Status> settle_claim(OpContext& op, Wait& wait, const PendingSlot& mine,
                                     bool* restart);
  static Rivals rivals_of(const Buckets& b, const std::vector<Match>& matches, GlobalAddress mine);
  // settle_claim's last step, with no rival left: CAS our slot from pending to committed.
  runtime::Task<Status> commit_claim(OpContext& op, Wait& wait, const PendingSlot& mine,
                                     bool* restart);
  // Withdraws our pending slot: CAS back to 0 (a frozen slot stays: the split dropped it).
  client::OpAwaitable withdraw(const PendingSlot& mine, uint64_t* old);
  // Clears pending slots among `matches` whose writer's session ended (after waiting on them
  // for lease_check_ms); true if it cleared any.
  runtime::Task<Result<bool>> clear_dead_pending(OpContext& op, const Buckets& b,
                                                 const std::vector<Match>& matches, Wait& wait);
  // Frees an unused new block, or retires it when a slot may ever have named it.
  runtime::Task<Status> release_block(const NewBlock& block);
  // Settles an erase's marked slot; if a split froze it first, settles the moved word too.
  runtime::Task<Status> finish_erase(OpContext& op, GlobalAddress slot, uint64_t erased);
  // update (insert_if_absent false) and put (true): checks, counts, and swings the key's slot
  // to a new block.
  runtime::Task<Status> replace(std::string_view key, std::string_view value,
                                bool insert_if_absent);
  uint64_t grace_ns() const { return reclaimer_.grace_ns(); }
  static GlobalAddress slot_addr(const Buckets& b, const Match& m);

  client::ThreadClient* client_;
  HashTableOptions options_;
  FarObject object_;
  ObjectHeap heap_;
  Reclaimer reclaimer_;
  uint32_t main_buckets_log2_ = 0;
  uint32_t max_depth_ = kMaxDepth;
  uint64_t check_interval_cycles_ = 0;  // directory re-check period: a quarter of the grace
  int split_stop_after_ = 0;
  std::vector<Shard> shards_;
  DirectMappedCache<SpecEntry> spec_;
  ProcedureSupport procedures_;         // nodes that answered they have none
  uint32_t served_value_hint_ = 24;     // value bytes a get's reply slot makes room for
  int32_t spec_score_ = kSpecScoreOne;  // recent speculative hit rate (spec_first)
  uint32_t spec_probes_ = 0;
  mutable HashStats stats_;
};

}  // namespace farmem::ds::hash
