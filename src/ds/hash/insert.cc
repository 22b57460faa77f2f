// HashTable inserts: write the KV block, claim a slot as pending, then commit it only when it is
// the only slot holding the key (hash_table.h, docs/formats/hash_table/protocols.md "insert").
#include <fmt/format.h>

#include "farmem/common/check.h"
#include "farmem/common/clock.h"
#include "farmem/ds/common/durable.h"
#include "farmem/ds/hash/hash_table.h"
#include "geometry.h"
#include "op_context.h"

namespace farmem::ds::hash {

using runtime::Task;

Task<Status> HashTable::write_block(const OpContext& op, std::string_view value, NewBlock* block) {
  const uint16_t node = op.shard.node;
  encode_kv_block(op.key, value, client_->session_id(node), &block->bytes);
  FARMEM_ASSERT(block->bytes.size() % kBlockUnit == 0 &&
                    block->bytes.size() <= block_bytes(kMaxKeyBytes, kMaxValueBytes),
                "a KV block is whole 64-byte units within the size limits");
  auto a = co_await heap_.allocate(node, block->bytes.size());
  FARMEM_CO_TRY(a);
  if (a->offset() % kBlockUnit != 0) {
    co_return Internal(fmt::format("KV block allocated at offset {:#x}, not {}-byte aligned",
                                   a->offset(), kBlockUnit));
  }
  block->addr = *a;
  co_return OkStatus();
}

Task<Status> HashTable::release_block(const NewBlock& block) {
  // (Each co_await its own statement: GCC 12 miscompiles co_await inside ?: and similar.)
  if (block.published) {
    Status st = co_await reclaimer_.retire(block.addr, block.bytes.size());
    co_return st;
  }
  Status st = co_await heap_.free(block.addr, block.bytes.size());
  co_return st;
}

Task<Status> HashTable::insert(std::string_view key, std::string_view value) {
  FARMEM_CO_TRY(check_sizes(key, value));
  const KeyHash kh = hash_key(key);
  OpContext op(key, kh, shard_of(kh));
  ++stats_.inserts;
  NewBlock block;
  FARMEM_CO_TRY(co_await write_block(op, value, &block));
  op.block = &block;
  Status st = co_await insert_block(op);
  if (!st.ok()) {
    Status rs = co_await release_block(block);
    (void)rs;
  }
  co_return st;
}

Task<Status> HashTable::insert_block(OpContext& op) {
  FARMEM_ASSERT(op.block != nullptr, "an insert publishes a new block");
  if (served_path(op)) {
    auto step = co_await served_insert(op);
    FARMEM_CO_TRY(step);
    if (*step == ServedStep::kDone) co_return OkStatus();
    if (*step == ServedStep::kAbsent) co_return AlreadyExists("key already present");
  }
  Wait wait(*client_);
  bool rivals_seen = false;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    PendingSlot mine;
    auto claim = co_await claim_slot(op, wait, rivals_seen, &mine);
    FARMEM_CO_TRY(claim);
    if (*claim == Claim::kExists) co_return AlreadyExists("key already present");
    if (*claim == Claim::kRetry) continue;
    if (*claim == Claim::kLostRace) {
      rivals_seen = true;
      continue;
    }
    if (*claim == Claim::kFull) {
      // Both buckets are full: split the subtable, then try again.
      auto split_done = co_await split(op.shard, op.kh);
      FARMEM_CO_TRY(split_done);
      if (!*split_done) {
        Status ws = co_await wait_for_split(op, wait);
        FARMEM_CO_TRY(ws);
      }
      continue;
    }
    op.block->published = true;
    bool restart = false;
    Status st = co_await settle_claim(op, wait, mine, &restart);
    if (!restart) co_return st;
    rivals_seen = true;
  }
  co_return RetriesExhausted("insert", options_.max_attempts);
}

Task<Result<HashTable::Claim>> HashTable::claim_slot(OpContext& op, Wait& wait, bool rivals_seen,
                                                     PendingSlot* mine) {
  Buckets b;
  Status st = co_await read_buckets(op, &b);
  FARMEM_CO_TRY(st);
  if (!buckets_fresh(op.kh, b)) {
    Status rs = co_await resync(op, wait);
    FARMEM_CO_TRY(rs);
    co_return Claim::kRetry;
  }
  // After withdrawing or losing a race, pending rivals count too: one scan finds both the
  // committed copy and any rival insert still in flight.
  std::vector<Match> matches;
  auto scan = co_await find(op, b, /*pending_too=*/rivals_seen, &matches, nullptr);
  FARMEM_CO_TRY(scan);
  if (*scan == Scan::kFrozen) {
    Status ws = co_await wait_for_split(op, wait);
    FARMEM_CO_TRY(ws);
    co_return Claim::kRetry;
  }
  if (*scan == Scan::kTorn) {
    ++stats_.stale_reads;
    co_await wait.backoff.retry();
    co_return Claim::kRetry;
  }
  for (const Match& m : matches) {
    if (!slot_pending(m.word)) co_return Claim::kExists;
  }
  if (!matches.empty()) {  // only pending rivals: wait for them to commit or withdraw
    auto cleared = co_await clear_dead_pending(op, b, matches, wait);
    FARMEM_CO_TRY(cleared);
    if (!*cleared) co_await wait.backoff.retry();
    co_return Claim::kRetry;
  }
  // Power of two choices: the combined bucket with more free slots.
  int free_count[2] = {0, 0};
  for (int j = 0; j < 4; ++j) {
    for (uint64_t w : b.bucket[j].slots) free_count[j / 2] += (w == 0);
  }
  if (free_count[0] + free_count[1] == 0) co_return Claim::kFull;
  const int pick = free_count[1] > free_count[0] ? 1 : 0;
  Match slot;
  for (int j = 2 * pick; j < 2 * pick + 2 && slot.bucket < 0; ++j) {
    for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) {
      if (b.bucket[j].slots[k] == 0) {
        slot = Match{j, k, 0, op.block->bytes.size(), 0};
        break;
      }
    }
  }
  const uint64_t word =
      block_slot_word(op.kh, op.block->addr, op.block->bytes.size(), /*pending=*/true);
  uint64_t found = 0;
  mine->addr = slot_addr(b, slot);
  st = co_await client_->cas(mine->addr, 0, word, &found);
  FARMEM_CO_TRY(st);
  if (found != 0) {
    ++stats_.cas_failures;
    co_await wait.backoff.retry();
    co_return Claim::kLostRace;
  }
  mine->word = word;
  co_return Claim::kClaimed;
}

client::OpAwaitable HashTable::withdraw(const PendingSlot& mine, uint64_t* old) {
  return client_->cas(mine.addr, mine.word, 0, old);
}

HashTable::Rivals HashTable::rivals_of(const Buckets& b, const std::vector<Match>& matches,
                                       GlobalAddress mine) {
  Rivals r;
  for (const Match& m : matches) {
    const GlobalAddress a = slot_addr(b, m);
    if (a == mine) continue;
    r.all.push_back(m);
    if (!slot_pending(m.word)) r.committed = true;
    if (a.pack() < mine.pack()) r.lower_pending = true;
  }
  return r;
}

Task<Status> HashTable::settle_claim(OpContext& op, Wait& wait, const PendingSlot& mine,
                                     bool* restart) {
  // Commit only when ours is the only slot holding this key: then no other inserter can also
  // see itself alone (it claimed its slot before or after our re-read, and either way one of
  // us sees the other). With rival pending inserts, the lower slot waits and the higher one
  // withdraws and starts over; a committed rival wins. A split that freezes our pending slot
  // drops it (only committed slots are copied): the commit CAS then fails on the frozen word
  // and the insert starts over in the new subtable.
  std::vector<Match> matches;
  uint64_t old = 0;
  for (uint32_t round = 0; round < options_.max_attempts; ++round) {
    Buckets again;
    Status st = co_await read_buckets(op, &again);
    Result<Scan> all = Scan::kOk;
    if (st.ok()) {
      all = co_await find(op, again, /*pending_too=*/true, &matches, nullptr);
    } else {
      all = st;
    }
    if (!all.ok()) {
      Status ws = co_await withdraw(mine, &old);  // best effort: leave no pending slot behind
      (void)ws;
      co_return all.status();
    }
    if (*all == Scan::kFrozen || !buckets_fresh(op.kh, again)) {
      // A split is under way: withdraw (or find the slot frozen, hence dropped) and retry.
      FARMEM_CO_TRY(co_await withdraw(mine, &old));
      *restart = true;
      Status ws = co_await wait_for_split(op, wait);
      co_return ws;
    }
    if (*all == Scan::kTorn) {
      ++stats_.stale_reads;
      co_await wait.backoff.retry();
      continue;
    }
    const Rivals rivals = rivals_of(again, matches, mine.addr);
    if (rivals.committed) {
      FARMEM_CO_TRY(co_await withdraw(mine, &old));
      co_return AlreadyExists("key already present");
    }
    if (rivals.all.empty()) {
      Status cs = co_await commit_claim(op, wait, mine, restart);
      co_return cs;
    }
    if (rivals.lower_pending) {
      // A rival holds a lower slot: withdraw and start over (it will commit or withdraw, or
      // be cleared if its writer's session ended). If a split froze our slot, it is dropped.
      FARMEM_CO_TRY(co_await withdraw(mine, &old));
      *restart = true;
      co_await wait.backoff.retry();
      co_return OkStatus();
    }
    // Ours is the lowest: wait for the higher rivals to withdraw (or clear dead ones).
    auto cleared = co_await clear_dead_pending(op, again, rivals.all, wait);
    FARMEM_CO_TRY(cleared);
    ++stats_.cas_failures;
    if (!*cleared) co_await wait.backoff.retry();
  }
  Status ws = co_await withdraw(mine, &old);
  (void)ws;
  co_return RetriesExhausted("insert (a concurrent insert of the same key did not finish)",
                             options_.max_attempts);
}

Task<Status> HashTable::commit_claim(OpContext& op, Wait& wait, const PendingSlot& mine,
                                     bool* restart) {
  const uint64_t committed = mine.word & ~kSlotPendingBit;
  const uint64_t published = committed | unstable_bit(op.shard.node);
  uint64_t old = 0;
  Status st = co_await client_->cas(mine.addr, mine.word, published, &old);
  FARMEM_CO_TRY(st);
  if (old == mine.word) {
    remember(op.kh, mine.addr, committed);
    if (published != committed) FARMEM_CO_TRY(co_await settle(mine.addr, published));
    co_return OkStatus();
  }
  if (old != (mine.word | kSlotFrozenBit)) {
    co_return Internal("a pending slot changed under its owner");
  }
  // A split froze (and so dropped) our pending slot: start over in the new subtable.
  *restart = true;
  Status ws = co_await wait_for_split(op, wait);
  co_return ws;
}

Task<Result<bool>> HashTable::clear_dead_pending(OpContext& op, const Buckets& b,
                                                 const std::vector<Match>& matches, Wait& wait) {
  const uint64_t now = now_ns();
  if (wait.since_ns == 0) wait.since_ns = now;
  if (now - wait.since_ns < lease_check_ns() || now - wait.checked_ns < lease_check_ns()) {
    co_return false;
  }
  wait.checked_ns = now;
  std::vector<uint64_t> owners;
  std::vector<const Match*> candidates;
  for (const Match& m : matches) {
    if (!slot_pending(m.word) || m.owner == 0) continue;
    owners.push_back(m.owner);
    candidates.push_back(&m);
  }
  if (owners.empty()) co_return false;
  auto alive = co_await client_->sessions_alive(op.shard.node, owners);
  FARMEM_CO_TRY(alive);
  bool cleared = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if ((*alive)[i]) continue;
    // Its writer's session ended: it will never commit or withdraw. The block stays with the
    // table's object (it may have been read); it is not reused.
    uint64_t old = 0;
    Status st = co_await client_->cas(slot_addr(b, *candidates[i]), candidates[i]->word, 0, &old);
    FARMEM_CO_TRY(st);
    if (old == candidates[i]->word) {
      ++stats_.pending_cleared;
      cleared = true;
    }
  }
  co_return cleared;
}

}  // namespace farmem::ds::hash
