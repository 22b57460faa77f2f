// HashTable inserts: claim a slot as pending, then commit it only when it is the only slot
// holding the key (hash_table.h, docs/formats/hash_table/protocols.md "insert").
#include <fmt/format.h>

#include "farmem/common/clock.h"
#include "farmem/ds/hash/hash_table.h"

namespace farmem::ds::hash {

using runtime::Task;

Task<Status> HashTable::insert_block(Shard& s, std::string_view key, const KeyHash& kh,
                                     GlobalAddress block, const std::string& bytes,
                                     bool block_written, bool* published) {
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  Wait wait;
  bool rivals_seen = false;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    GlobalAddress my_slot;
    uint64_t pending = 0;
    auto claim = co_await claim_slot(s, key, kh, block, bytes, !block_written, rivals_seen, backoff,
                                     &wait, &my_slot, &pending);
    block_written = true;
    FARMEM_CO_TRY(claim);
    if (*claim == Claim::kExists) co_return AlreadyExists("key already present");
    if (*claim == Claim::kRetry) continue;
    if (*claim == Claim::kLostRace) {
      rivals_seen = true;
      continue;
    }
    if (*claim == Claim::kFull) {
      // Both buckets are full: split the subtable, then try again.
      auto split_done = co_await split(s, kh);
      FARMEM_CO_TRY(split_done);
      if (!*split_done) {
        Status ws = co_await wait_for_split(s, kh, backoff, &wait);
        FARMEM_CO_TRY(ws);
      }
      continue;
    }
    *published = true;
    bool restart = false;
    Status st = co_await settle_claim(s, key, kh, my_slot, pending, backoff, &wait, &restart);
    if (!restart) co_return st;
    rivals_seen = true;
  }
  co_return RetriesExhausted("insert", options_.max_attempts);
}

Task<Result<HashTable::Claim>> HashTable::claim_slot(Shard& s, std::string_view key,
                                                     const KeyHash& kh, GlobalAddress block,
                                                     const std::string& bytes, bool write_block_too,
                                                     bool rivals_seen, runtime::Backoff& backoff,
                                                     Wait* wait, GlobalAddress* my_slot,
                                                     uint64_t* pending) {
  Buckets b;
  Status st = co_await read_buckets(s, kh, &b, write_block_too ? block : GlobalAddress(), &bytes);
  FARMEM_CO_TRY(st);
  if (!buckets_fresh(kh, b)) {
    Status rs = co_await resync(s, kh, backoff, wait, nullptr);
    FARMEM_CO_TRY(rs);
    co_return Claim::kRetry;
  }
  // After withdrawing or losing a race, pending rivals count too: one scan finds both the
  // committed copy and any rival insert still in flight.
  std::vector<Match> matches;
  auto scan = co_await find(s, key, kh, b, /*pending_too=*/rivals_seen, &matches, nullptr);
  FARMEM_CO_TRY(scan);
  if (*scan == Scan::kFrozen) {
    Status ws = co_await wait_for_split(s, kh, backoff, wait);
    FARMEM_CO_TRY(ws);
    co_return Claim::kRetry;
  }
  if (*scan == Scan::kTorn) {
    ++stats_.stale_reads;
    co_await backoff.retry();
    co_return Claim::kRetry;
  }
  for (const Match& m : matches) {
    if (!slot_pending(m.word)) co_return Claim::kExists;
  }
  if (!matches.empty()) {  // only pending rivals: wait for them to commit or withdraw
    auto cleared = co_await clear_dead_pending(s, b, matches, wait);
    FARMEM_CO_TRY(cleared);
    if (!*cleared) co_await backoff.retry();
    co_return Claim::kRetry;
  }
  // Power of two choices: the combined bucket with more free slots.
  int free_count[2] = {0, 0};
  for (int j = 0; j < 4; ++j) {
    for (uint64_t w : b.bucket[j].slots) free_count[j / 2] += (w == 0);
  }
  if (free_count[0] + free_count[1] == 0) co_return Claim::kFull;
  const int pick = free_count[1] > free_count[0] ? 1 : 0;
  Match mine;
  for (int j = 2 * pick; j < 2 * pick + 2 && mine.bucket < 0; ++j) {
    for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) {
      if (b.bucket[j].slots[k] == 0) {
        mine = Match{j, k, 0, bytes.size(), 0};
        break;
      }
    }
  }
  const uint64_t word = make_slot(kh.fp(), len_units(bytes.size()), block.offset(), true);
  uint64_t found = 0;
  *my_slot = slot_addr(b, mine);
  st = co_await client_->cas(*my_slot, 0, word, &found);
  FARMEM_CO_TRY(st);
  if (found != 0) {
    ++stats_.cas_failures;
    co_await backoff.retry();
    co_return Claim::kLostRace;
  }
  *pending = word;
  co_return Claim::kClaimed;
}

Task<Status> HashTable::settle_claim(Shard& s, std::string_view key, const KeyHash& kh,
                                     GlobalAddress my_slot, uint64_t pending,
                                     runtime::Backoff& backoff, Wait* wait, bool* restart) {
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
    Status st = co_await read_buckets(s, kh, &again, GlobalAddress(), nullptr);
    Result<Scan> all = Scan::kOk;
    if (st.ok()) {
      all = co_await find(s, key, kh, again, true, &matches, nullptr);
    } else {
      all = st;
    }
    if (!all.ok()) {
      // Best effort: do not leave a pending slot behind.
      Status ws = co_await client_->cas(my_slot, pending, 0, &old);
      (void)ws;
      co_return all.status();
    }
    if (*all == Scan::kFrozen || !buckets_fresh(kh, again)) {
      // A split is under way: withdraw (or find the slot frozen, hence dropped) and retry.
      st = co_await client_->cas(my_slot, pending, 0, &old);
      FARMEM_CO_TRY(st);
      *restart = true;
      Status ws = co_await wait_for_split(s, kh, backoff, wait);
      co_return ws;
    }
    if (*all == Scan::kTorn) {
      ++stats_.stale_reads;
      co_await backoff.retry();
      continue;
    }
    bool committed_other = false, lower_pending = false, others = false;
    std::vector<Match> rivals;
    for (const Match& m : matches) {
      GlobalAddress a = slot_addr(again, m);
      if (a == my_slot) continue;
      others = true;
      rivals.push_back(m);
      if (!slot_pending(m.word)) committed_other = true;
      if (a.pack() < my_slot.pack()) lower_pending = true;
    }
    if (committed_other) {
      st = co_await client_->cas(my_slot, pending, 0, &old);
      FARMEM_CO_TRY(st);
      co_return AlreadyExists("key already present");
    }
    if (!others) {
      const uint64_t committed = pending & ~kSlotPendingBit;
      st = co_await client_->cas(my_slot, pending, committed, &old);
      FARMEM_CO_TRY(st);
      if (old == pending) {
        remember(kh, my_slot, committed);
        co_return OkStatus();
      }
      if (old != (pending | kSlotFrozenBit)) {
        co_return Internal("a pending slot changed under its owner");
      }
      *restart = true;
      Status ws = co_await wait_for_split(s, kh, backoff, wait);
      co_return ws;
    }
    if (lower_pending) {
      // A rival holds a lower slot: withdraw and start over (it will commit or withdraw, or
      // be cleared if its writer's session ended). If a split froze our slot, it is dropped.
      st = co_await client_->cas(my_slot, pending, 0, &old);
      FARMEM_CO_TRY(st);
      *restart = true;
      co_await backoff.retry();
      co_return OkStatus();
    }
    // Ours is the lowest: wait for the higher rivals to withdraw (or clear dead ones).
    auto cleared = co_await clear_dead_pending(s, again, rivals, wait);
    FARMEM_CO_TRY(cleared);
    ++stats_.cas_failures;
    if (!*cleared) co_await backoff.retry();
  }
  Status ws = co_await client_->cas(my_slot, pending, 0, &old);
  (void)ws;
  co_return RetriesExhausted("insert (a concurrent insert of the same key did not finish)",
                             options_.max_attempts);
}

Task<Result<bool>> HashTable::clear_dead_pending(const Shard& s, const Buckets& b,
                                                 const std::vector<Match>& matches, Wait* wait) {
  const uint64_t now = now_ns();
  if (wait->since_ns == 0) wait->since_ns = now;
  if (now - wait->since_ns < lease_check_ns() || now - wait->checked_ns < lease_check_ns()) {
    co_return false;
  }
  wait->checked_ns = now;
  std::vector<uint64_t> owners;
  std::vector<const Match*> candidates;
  for (const Match& m : matches) {
    if (!slot_pending(m.word) || m.owner == 0) continue;
    owners.push_back(m.owner);
    candidates.push_back(&m);
  }
  if (owners.empty()) co_return false;
  auto alive = co_await client_->sessions_alive(s.node, owners);
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
