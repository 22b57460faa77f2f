// HashTable growth: splitting a full subtable, and finishing or undoing a split whose client
// died (hash_table.h, docs/formats/hash_table/split.md "Growth").
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "farmem/client/cluster.h"
#include "farmem/common/check.h"
#include "farmem/common/clock.h"
#include "farmem/ds/common/durable.h"
#include "farmem/ds/common/lease_lock.h"
#include "farmem/ds/hash/hash_table.h"
#include "geometry.h"
#include "op_context.h"

namespace farmem::ds::hash {

using client::Batch;
using runtime::Task;

namespace {

// Reads of a whole subtable and CAS rounds are cut into pieces of this many bytes / operations.
constexpr uint64_t kSplitReadBytes = 256 * 1024;
constexpr size_t kSplitOpsPerBatch = 32;
// A directory update that fails (a timed-out write) is tried this many times under the lock.
constexpr int kPublishTries = 3;

Status stopped_for_test(int step) {
  return Cancelled(fmt::format("split stopped after step {} (test hook)", step));
}

GlobalAddress lock_word_of_directory(GlobalAddress directory) {
  return directory + offsetof(DirectoryHeader, lock);
}

}  // namespace

Task<Result<bool>> HashTable::split(Shard& s, const KeyHash& kh) {
  const GlobalAddress sub = subtable_of(s, kh);
  SubtableHeader h{};
  FARMEM_CO_TRY(co_await client_->read(sub, &h, sizeof(h)));
  if (h.local_depth > kMaxDepth || (kh.h1 & suffix_mask(h.local_depth)) != h.suffix) {
    co_return false;  // our directory is stale
  }
  if (h.lock == 0 && h.local_depth >= max_depth_) {
    co_return ResourceExhausted(fmt::format(
        "hash table is full: the subtable for this key is at the maximum depth {} and its "
        "buckets are full",
        max_depth_));
  }
  LeaseLock lock(client_, sub, lease_check_ns());
  auto a = co_await lock.try_acquire();
  FARMEM_CO_TRY(a);
  if (!a->acquired) co_return false;  // being split by a live client, or retired
  if (a->taken_over) {
    ++stats_.takeovers;
    Status rs = co_await recover_split(s, sub);
    FARMEM_CO_TRY(rs);
    co_return true;
  }
  if (split_stop_after_ == 1) co_return stopped_for_test(1);
  ++stats_.splits;
  Status st = co_await run_split(s, sub, h);
  FARMEM_CO_TRY(st);
  co_return true;
}

Task<Status> HashTable::run_split(Shard& s, GlobalAddress sub, const SubtableHeader& h) {
  LeaseLock lock(client_, sub, lease_check_ns());
  // 1. Freeze every slot: from here no insert, update or erase can change this subtable, and
  //    every reader that sees a frozen slot goes back to the directory.
  std::vector<Bucket> buckets;
  Status st = co_await freeze(sub, &buckets);
  // On a durable node the lock and the frozen slots are stable before anything depends on them.
  if (st.ok()) st = co_await persist_if_durable(client_, sub, subtable_bytes(main_buckets_log2_));
  if (st.ok() && split_stop_after_ == 2) co_return stopped_for_test(2);
  // 2. Two new subtables one depth deeper, complete before anyone can see them.
  GlobalAddress halves[2];
  if (st.ok()) st = co_await build_halves(s, sub, h, buckets, halves);
  // 3. Record them in the old subtable: from here a client that takes the lock over finishes
  //    the split instead of undoing it.
  if (st.ok()) {
    const uint64_t rec[2] = {halves[0].offset(), halves[1].offset()};
    st = co_await durable_write(client_, sub + offsetof(SubtableHeader, half0), rec, sizeof(rec));
  }
  if (!st.ok()) {
    ++stats_.split_failures;
    // Undo first (the record is cleared before anything is unfrozen), then free the halves:
    // a taker must never find a record naming freed memory.
    const bool undone = co_await abandon_split(sub, lock);
    if (undone) {
      for (GlobalAddress half : halves) {
        if (!half.is_null()) (void)co_await client_->free_on(half);
      }
    }
    co_return st;
  }
  if (split_stop_after_ == 3) co_return stopped_for_test(3);
  // 4. Publish, then retire the frozen subtable (it stays locked and frozen until freed).
  bool maybe_published = false;
  st = co_await publish_split(s, sub, h.local_depth, h.suffix, halves[0], halves[1],
                              &maybe_published);
  if (!st.ok()) {
    ++stats_.split_failures;
    if (st.code() == StatusCode::kCancelled || maybe_published) co_return st;
    // Nothing reached the directory (its lock could not be had): undo, so that the subtable
    // is not left frozen behind our live lease.
    const bool undone = co_await abandon_split(sub, lock);
    if (undone) {
      for (GlobalAddress half : halves) (void)co_await client_->free_on(half);
    }
    co_return st;
  }
  const uint64_t one = 1;
  st = co_await durable_write(client_, sub + offsetof(SubtableHeader, retired), &one, 8);
  FARMEM_CO_TRY(st);
  Status rs = co_await reclaimer_.retire(sub, subtable_bytes(main_buckets_log2_),
                                         Reclaimer::Kind::kNodeBlock);
  co_return rs;
}

Task<Status> HashTable::freeze(GlobalAddress sub, std::vector<Bucket>* buckets) {
  const uint64_t nbuckets = subtable_buckets(main_buckets_log2_);
  buckets->assign(nbuckets, Bucket{});
  const GlobalAddress first = sub + sizeof(SubtableHeader);  // bucket 0
  const uint64_t total = nbuckets * kBucketBytes;
  const uint64_t per_batch = kSplitReadBytes * kSplitOpsPerBatch;
  for (uint64_t start = 0; start < total; start += per_batch) {
    Batch batch(*client_);
    for (uint64_t off = start; off < std::min(total, start + per_batch); off += kSplitReadBytes) {
      (void)batch.read(first + off, reinterpret_cast<char*>(buckets->data()) + off,
                       std::min(kSplitReadBytes, total - off));
    }
    FARMEM_CO_TRY(co_await batch.wait());
  }
  // CAS every slot to word | frozen; a lost race (a concurrent insert, update or erase) is
  // retried with the value found. Only the lock holder sets the bit.
  std::vector<uint64_t> todo;  // slot indices over the whole subtable
  todo.reserve(nbuckets * kSlotsPerBucket);
  for (uint64_t i = 0; i < nbuckets * kSlotsPerBucket; ++i) {
    if (!slot_frozen((*buckets)[i / kSlotsPerBucket].slots[i % kSlotsPerBucket])) {
      todo.push_back(i);
    }
  }
  std::vector<uint64_t> again;
  std::array<uint64_t, kSplitOpsPerBatch> found{};
  for (uint32_t round = 0; !todo.empty(); ++round) {
    if (round >= options_.max_attempts) {
      co_return RetriesExhausted("hash table split (slots kept changing while being frozen)",
                                 round);
    }
    again.clear();
    for (size_t at = 0; at < todo.size(); at += kSplitOpsPerBatch) {
      const size_t n = std::min(kSplitOpsPerBatch, todo.size() - at);
      Batch batch(*client_);
      for (size_t i = 0; i < n; ++i) {
        uint64_t idx = todo[at + i];
        uint64_t w = (*buckets)[idx / kSlotsPerBucket].slots[idx % kSlotsPerBucket];
        (void)batch.cas(sub + subtable_slot_offset(idx / kSlotsPerBucket,
                                                   static_cast<uint32_t>(idx % kSlotsPerBucket)),
                        w, w | kSlotFrozenBit, &found[i]);
      }
      FARMEM_CO_TRY(co_await batch.wait());
      for (size_t i = 0; i < n; ++i) {
        uint64_t idx = todo[at + i];
        uint64_t& w = (*buckets)[idx / kSlotsPerBucket].slots[idx % kSlotsPerBucket];
        if (found[i] == w) {
          w |= kSlotFrozenBit;
        } else {
          w = found[i];
          if (!slot_frozen(w)) again.push_back(idx);
        }
      }
    }
    todo.swap(again);
  }
  co_return OkStatus();
}

Task<Status> HashTable::build_halves(Shard& s, GlobalAddress sub, const SubtableHeader& h,
                                     const std::vector<Bucket>& buckets, GlobalAddress halves[2]) {
  // Which committed slots move where: rehash each key (read from its block). Pending slots are
  // dropped: their inserts find their slot frozen and start over in the new subtables.
  struct Item {
    uint64_t bucket;
    uint32_t slot;
    uint64_t word;  // without the frozen bit
    uint32_t side = 0;
  };
  std::vector<Item> items;
  for (uint64_t bi = 0; bi < buckets.size(); ++bi) {
    for (uint32_t k = 0; k < kSlotsPerBucket; ++k) {
      uint64_t w = buckets[bi].slots[k];
      if (!slot_used(w) || slot_pending(w)) continue;
      items.push_back(Item{bi, k, w & ~kSlotFrozenBit});
    }
  }
  const uint32_t d = h.local_depth;
  OpContext op(s);  // (a split's reads are not the inserting operation's round trips)
  for (size_t first = 0; first < items.size(); first += kSplitOpsPerBatch) {
    const size_t n = std::min(kSplitOpsPerBatch, items.size() - first);
    std::vector<Match> cands;
    for (size_t i = 0; i < n; ++i) cands.push_back(Match{0, 0, items[first + i].word, 0, 0});
    std::vector<std::string> bufs;
    FARMEM_CO_TRY(co_await read_blocks(op, cands, &bufs));
    for (size_t i = 0; i < n; ++i) {
      KvBlockView v;
      size_t need = 0;
      if (check_kv_block(bufs[i].data(), bufs[i].size(), kMaxKeyBytes, kMaxValueBytes, &v, &need) !=
          BlockCheck::kOk) {
        // Blocks of committed slots are immutable until retired, and a frozen slot cannot be
        // replaced: a bad block here is corruption, not a race.
        co_return Internal(
            fmt::format("hash table split: the block at offset {:#x} on node {} "
                        "fails its checksum",
                        slot_offset(items[first + i].word), s.node));
      }
      items[first + i].side = static_cast<uint32_t>((hash_key(v.key).h1 >> d) & 1);
    }
  }
  // Every moved word keeps its bucket and slot (a key's bucket indices do not depend on its
  // suffix).
  const uint64_t sub_bytes = subtable_bytes(main_buckets_log2_);
  for (uint32_t side = 0; side < 2; ++side) {
    std::string image = subtable_image(main_buckets_log2_, d + 1, h.suffix | (side << d));
    for (const Item& it : items) {
      if (it.side == side) {
        std::memcpy(image.data() + subtable_slot_offset(it.bucket, it.slot), &it.word, 8);
      }
    }
    auto a = co_await client_->allocate_on(s.node, sub_bytes, 4096, object_.owner(s.node));
    FARMEM_CO_TRY(a);
    halves[side] = *a;
    FARMEM_CO_TRY(co_await durable_write(client_, *a, image.data(), image.size()));
  }
  (void)sub;
  co_return OkStatus();
}

Task<bool> HashTable::abandon_split(GlobalAddress sub, LeaseLock& lock) {
  // The record of the halves goes first: from here a taker undoes rather than publishes.
  const uint64_t none[2] = {0, 0};
  Status st =
      co_await durable_write(client_, sub + offsetof(SubtableHeader, half0), none, sizeof(none));
  if (!st.ok()) co_return false;  // the node is unreachable: nothing more to do
  // Re-read rather than trust what freeze() saw: a batch that failed may have applied some of
  // its CAS. While we hold the lock, every frozen slot was frozen by a holder of it.
  const uint64_t nbuckets = subtable_buckets(main_buckets_log2_);
  std::vector<Bucket> buckets(nbuckets);
  st =
      co_await client_->read(sub + sizeof(SubtableHeader), buckets.data(), nbuckets * kBucketBytes);
  if (!st.ok()) co_return false;
  std::vector<uint64_t> frozen;  // slot indices over the whole subtable
  for (uint64_t i = 0; i < nbuckets * kSlotsPerBucket; ++i) {
    if (slot_frozen(buckets[i / kSlotsPerBucket].slots[i % kSlotsPerBucket])) frozen.push_back(i);
  }
  std::array<uint64_t, kSplitOpsPerBatch> ignored{};
  for (size_t at = 0; at < frozen.size(); at += kSplitOpsPerBatch) {
    Batch batch(*client_);
    for (size_t i = 0; i < std::min(kSplitOpsPerBatch, frozen.size() - at); ++i) {
      const uint64_t idx = frozen[at + i];
      const uint64_t w = buckets[idx / kSlotsPerBucket].slots[idx % kSlotsPerBucket];
      (void)batch.cas(sub + subtable_slot_offset(idx / kSlotsPerBucket,
                                                 static_cast<uint32_t>(idx % kSlotsPerBucket)),
                      w, w & ~kSlotFrozenBit, &ignored[i]);
    }
    st = co_await batch.wait();
    if (!st.ok()) co_return false;
  }
  st = co_await lock.release();
  if (st.ok()) st = co_await persist_if_durable(client_, sub, subtable_bytes(main_buckets_log2_));
  co_return st.ok();
}

// ------------------------------------------------------------------------------------------
// Publishing under the directory's lease lock

Task<Result<std::unique_ptr<LeaseLock>>> HashTable::lock_directory(Shard& s) {
  auto lock =
      std::make_unique<LeaseLock>(client_, lock_word_of_directory(s.directory), lease_check_ns());
  auto a = co_await lock->acquire(now_ns() + split_wait_ns());
  FARMEM_CO_TRY(a);
  if (a->taken_over) ++stats_.takeovers;
  // An intent still recorded is a change its publisher announced but may not have finished
  // (it died holding the lock, or failed part-way): redo it (idempotent).
  DirectoryHeader h{};
  FARMEM_CO_TRY(co_await client_->read(s.directory, &h, sizeof(h)));
  if (h.intent_sub != 0) {
    FARMEM_CO_TRY(co_await apply_intent(s, h));
    if (a->taken_over) FARMEM_CO_TRY(co_await retire_orphan(s, h.intent_sub));
  }
  co_return lock;
}

Task<Status> HashTable::retire_orphan(Shard& s, uint64_t sub_offset) {
  // The subtable of a published split whose splitter died before retiring it: take its lock
  // over (so that exactly one client retires it) and retire it.
  const GlobalAddress sub(s.node, sub_offset);
  SubtableHeader h{};
  FARMEM_CO_TRY(co_await client_->read(sub, &h, sizeof(h)));
  if (h.retired != 0 || h.lock == 0) co_return OkStatus();
  LeaseLock lock(client_, sub, 0);
  auto a = co_await lock.try_acquire();
  FARMEM_CO_TRY(a);
  if (!a->taken_over) co_return OkStatus();  // its splitter lives on and retires it itself
  const uint64_t one = 1;
  FARMEM_CO_TRY(co_await durable_write(client_, sub + offsetof(SubtableHeader, retired), &one, 8));
  Status rs = co_await reclaimer_.retire(sub, subtable_bytes(main_buckets_log2_),
                                         Reclaimer::Kind::kNodeBlock);
  co_return rs;
}

Task<Status> HashTable::apply_intent(Shard& s, const DirectoryHeader& intent) {
  DirectoryHeader cur{};
  FARMEM_CO_TRY(co_await client_->read(s.directory, &cur, sizeof(cur)));
  const uint32_t g = directory_depth(cur.global_depth);
  const auto d = static_cast<uint32_t>(intent.intent_dx >> 32);
  const auto x = static_cast<uint32_t>(intent.intent_dx & 0xFFFFFFFFu);
  if (g > kMaxDepth || d >= kMaxDepth) co_return ProtocolError("hash table directory is corrupt");
  std::vector<uint64_t> entries(size_t{1} << g);
  FARMEM_CO_TRY(co_await client_->read(s.directory + sizeof(DirectoryHeader), entries.data(),
                                       8 * entries.size()));
  // Entries first (readers only look below the published depth, and check bucket headers),
  // then depth and epoch. Recomputed from the current entries, so running it twice is harmless.
  const uint32_t new_g = std::max(g, d + 1);
  FARMEM_ASSERT(new_g <= kMaxDepth, "the entries fit the directory (checked just above)");
  entries.resize(size_t{1} << new_g);
  for (size_t i = size_t{1} << g; i < entries.size(); ++i) {
    entries[i] = entries[i & ((size_t{1} << g) - 1)];
  }
  for (uint64_t i = 0; i < entries.size(); ++i) {
    if ((i & suffix_mask(d)) != x) continue;
    entries[i] = dir_entry(((i >> d) & 1) ? intent.intent_half1 : intent.intent_half0, d + 1);
  }
  const uint64_t record[4] = {intent.intent_sub, intent.intent_half0, intent.intent_half1,
                              intent.intent_dx};
  const uint64_t header[2] = {uint64_t{new_g}, cur.epoch + 1};
  const uint64_t clear = 0;
  Status st;
  for (int tries = 0; tries < kPublishTries; ++tries) {
    st = co_await durable_write(client_, s.directory + offsetof(DirectoryHeader, intent_sub),
                                record, sizeof(record));
    if (st.ok() && split_stop_after_ == 4) co_return stopped_for_test(4);
    if (st.ok()) {
      st = co_await durable_write(client_, s.directory + sizeof(DirectoryHeader), entries.data(),
                                  8 * entries.size());
    }
    if (st.ok() && split_stop_after_ == 5) co_return stopped_for_test(5);
    if (st.ok()) st = co_await durable_write(client_, s.directory, header, sizeof(header));
    if (st.ok()) {
      st = co_await durable_write(client_, s.directory + offsetof(DirectoryHeader, intent_sub),
                                  &clear, 8);
    }
    if (st.ok() || st.code() != StatusCode::kTimedOut) break;
  }
  FARMEM_CO_TRY(st);
  s.global_depth = new_g;
  s.epoch = header[1];
  s.entries = std::move(entries);
  s.checked_cycles = cycles();
  spec_.clear();
  co_return OkStatus();
}

Task<Status> HashTable::publish_split(Shard& s, GlobalAddress sub, uint32_t d, uint32_t x,
                                      GlobalAddress half0, GlobalAddress half1,
                                      bool* maybe_published) {
  auto lock = co_await lock_directory(s);
  FARMEM_CO_TRY(lock);
  // Changes happen only under the lock: these reads are current.
  DirectoryHeader cur{};
  Status st = co_await client_->read(s.directory, &cur, sizeof(cur));
  const uint32_t g = directory_depth(cur.global_depth);
  std::vector<uint64_t> entries(size_t{1} << std::min(g, kMaxDepth));
  if (st.ok() && g > kMaxDepth) st = ProtocolError("hash table directory is corrupt (depth)");
  if (st.ok()) {
    st = co_await client_->read(s.directory + sizeof(DirectoryHeader), entries.data(),
                                8 * entries.size());
  }
  size_t pointing = 0, mine = 0;
  for (uint64_t i = 0; st.ok() && i < entries.size(); ++i) {
    if ((i & suffix_mask(d)) != x) continue;
    ++mine;
    if (dir_entry_offset(entries[i]) == sub.offset()) ++pointing;
  }
  if (st.ok() && pointing != 0 && pointing != mine) {
    st = Internal("hash table split: the directory points to the locked subtable only in part");
  }
  if (st.ok() && pointing != 0) {  // (none: a taker of the lock already published it)
    DirectoryHeader intent{};
    intent.intent_sub = sub.offset();
    intent.intent_half0 = half0.offset();
    intent.intent_half1 = half1.offset();
    intent.intent_dx = (uint64_t{d} << 32) | x;
    *maybe_published = true;
    st = co_await apply_intent(s, intent);
    if (st.code() == StatusCode::kCancelled) co_return st;  // test hook: "died" holding it
  }
  Status rs = co_await (*lock)->release();
  FARMEM_CO_TRY(st);
  co_return rs;
}

// ------------------------------------------------------------------------------------------
// Splits whose client died

Task<Status> HashTable::recover_split(Shard& s, GlobalAddress sub) {
  LeaseLock lock(client_, sub, lease_check_ns());
  SubtableHeader h{};
  FARMEM_CO_TRY(co_await client_->read(sub, &h, sizeof(h)));
  if (h.retired != 0) co_return OkStatus();  // published and retired by its splitter
  // Is it published? (Taking the directory lock first finishes an announced change.)
  {
    auto dl = co_await lock_directory(s);
    FARMEM_CO_TRY(dl);
    Status rel = co_await (*dl)->release();
    FARMEM_CO_TRY(rel);
  }
  OpContext op(s);  // (recovery's reads are not the waiting operation's round trips)
  FARMEM_CO_TRY(co_await refresh_directory(op));
  bool pointed = false;
  for (uint64_t e : s.entries) pointed = pointed || dir_entry_offset(e) == sub.offset();
  if (!pointed || (h.half0 != 0 && h.half1 != 0)) {
    if (pointed) {
      bool maybe_published = false;
      FARMEM_CO_TRY(co_await publish_split(s, sub, h.local_depth, h.suffix,
                                           GlobalAddress(s.node, h.half0),
                                           GlobalAddress(s.node, h.half1), &maybe_published));
    }
    const uint64_t one = 1;
    FARMEM_CO_TRY(
        co_await durable_write(client_, sub + offsetof(SubtableHeader, retired), &one, 8));
    Status rs = co_await reclaimer_.retire(sub, subtable_bytes(main_buckets_log2_),
                                           Reclaimer::Kind::kNodeBlock);
    co_return rs;
  }
  // Not published and no halves recorded: undo (unfreeze, unlock); the next insert that finds
  // the buckets full splits it again. Halves it may have allocated stay with the table's object.
  (void)co_await abandon_split(sub, lock);
  co_return OkStatus();
}

Task<Status> HashTable::repair_stuck_split(Shard& s, const KeyHash& kh) {
  const GlobalAddress sub = subtable_of(s, kh);
  SubtableHeader h{};
  FARMEM_CO_TRY(co_await client_->read(sub, &h, sizeof(h)));
  if (h.lock != 0 && h.retired == 0) {
    LeaseLock lock(client_, sub, 0);
    auto a = co_await lock.try_acquire();
    FARMEM_CO_TRY(a);
    if (a->taken_over) {
      ++stats_.takeovers;
      Status rs = co_await recover_split(s, sub);
      co_return rs;
    }
    if (a->acquired) {  // it was free after all (the split ended): let go again
      Status rs = co_await lock.release();
      co_return rs;
    }
  }
  uint64_t holder = 0;
  FARMEM_CO_TRY(co_await client_->read(lock_word_of_directory(s.directory), &holder, 8));
  if (holder == 0) co_return OkStatus();
  LeaseLock dir_lock(client_, lock_word_of_directory(s.directory), 0);
  auto gone = co_await dir_lock.holder_gone(holder);
  FARMEM_CO_TRY(gone);
  if (!*gone) co_return OkStatus();
  auto dl = co_await lock_directory(s);  // takes over and finishes the dead holder's change
  FARMEM_CO_TRY(dl);
  Status rs = co_await (*dl)->release();
  co_return rs;
}

}  // namespace farmem::ds::hash
