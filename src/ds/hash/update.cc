// HashTable updates, puts and erases: locate the committed slot holding the key and swing it by
// CAS to a new block (or to empty), retiring the block it named (hash_table.h,
// docs/formats/hash_table/protocols.md "update").
#include "farmem/ds/common/durable.h"
#include "farmem/ds/common/retry.h"
#include "farmem/ds/hash/hash_table.h"
#include "geometry.h"
#include "op_context.h"

namespace farmem::ds::hash {

using runtime::Task;

Task<Status> HashTable::replace(std::string_view key, std::string_view value,
                                bool insert_if_absent) {
  FARMEM_CO_TRY(check_sizes(key, value));
  const KeyHash kh = hash_key(key);
  ++(insert_if_absent ? stats_.puts : stats_.updates);
  OpContext op(key, kh, shard_of(kh));
  op.overwrites = true;
  NewBlock block;
  FARMEM_CO_TRY(co_await write_block(op, value, &block));
  op.block = &block;  // the first bucket read writes it (or the served call's message)
  if (served_path(op)) {
    Status done;
    if (co_await served_put(op, block, insert_if_absent, &done)) co_return done;
  }
  const uint64_t new_word =
      block_slot_word(op.kh, block.addr, block.bytes.size(), /*pending=*/false);
  RetryLoop loop(client_, insert_if_absent ? "put" : "update", options_.max_attempts);
  Status result;
  for (;;) {
    Buckets b;
    auto m = co_await locate(op, &b);
    if (!m.ok()) {
      result = m.status();
      break;
    }
    if (m->bucket < 0) {
      if (!insert_if_absent) {
        result = NotFound("key not present");
        break;
      }
      Status st = co_await insert_block(op);
      if (st.code() == StatusCode::kAlreadyExists) {  // inserted meanwhile: update it
        if (loop.exhausted()) {
          result = loop.give_up();
          break;
        }
        co_await loop.retry();
        continue;
      }
      if (st.ok()) co_return st;
      result = st;
      break;
    }
    uint64_t found = 0;
    GlobalAddress slot = slot_addr(b, *m);
    const uint64_t published = new_word | unstable_bit(op.shard.node);
    Status st = co_await client_->cas(slot, m->word, published, &found);
    if (!st.ok()) {
      block.published = true;  // the CAS may have happened
      result = st;
      break;
    }
    if (found == m->word) {
      loop.succeeded();
      remember(op.kh, slot, new_word);
      if (published != new_word) FARMEM_CO_TRY(co_await settle(slot, published));
      Status rs = co_await reclaimer_.retire(GlobalAddress(op.shard.node, slot_offset(m->word)),
                                             m->block_bytes);
      co_return rs;
    }
    ++stats_.cas_failures;
    if (loop.exhausted()) {
      result = loop.give_up();
      break;
    }
    co_await loop.retry();
  }
  Status rs = co_await release_block(block);
  (void)rs;
  co_return result;
}

Task<bool> HashTable::served_put(OpContext& op, NewBlock& block, bool insert_if_absent,
                                 Status* done) {
  auto step = co_await served_replace(op, block, done);
  if (step.ok() && *step == ServedStep::kDone) co_return true;
  if (step.ok() && *step == ServedStep::kOneSided) co_return false;
  if (step.ok() && insert_if_absent) {
    // Absent: insert it (one call on the node, or the one-sided protocol); a key inserted
    // meanwhile goes to the one-sided update loop.
    *done = co_await insert_block(op);
    if (done->code() == StatusCode::kAlreadyExists) co_return false;
  } else {
    *done = step.ok() ? NotFound("key not present") : step.status();
  }
  if (!done->ok()) {
    Status rs = co_await release_block(block);
    (void)rs;
  }
  co_return true;
}

Task<Status> HashTable::update(std::string_view key, std::string_view value) {
  Status st = co_await replace(key, value, /*insert_if_absent=*/false);
  co_return st;
}

Task<Status> HashTable::put(std::string_view key, std::string_view value) {
  Status st = co_await replace(key, value, /*insert_if_absent=*/true);
  co_return st;
}

Task<Status> HashTable::finish_erase(OpContext& op, GlobalAddress slot, uint64_t erased) {
  uint64_t found = 0;
  FARMEM_CO_TRY(co_await settle(slot, erased, &found));
  if (found != (erased | kSlotFrozenBit)) co_return OkStatus();  // settled, here or by a reader
  // A split froze the slot and moved the marked word: a lookup settles it where it is now.
  Buckets b;
  auto m = co_await locate(op, &b);
  co_return m.ok() ? OkStatus() : m.status();
}

Task<Status> HashTable::erase(std::string_view key) {
  FARMEM_CO_TRY(check_sizes(key, {}));
  const KeyHash kh = hash_key(key);
  OpContext op(key, kh, shard_of(kh));
  op.overwrites = true;
  ++stats_.erases;
  RetryLoop loop(client_, "erase", options_.max_attempts);
  for (;;) {
    Buckets b;
    auto m = co_await locate(op, &b);
    FARMEM_CO_TRY(m);
    if (m->bucket < 0) co_return NotFound("key not present");
    uint64_t found = 0;
    const GlobalAddress slot = slot_addr(b, *m);
    // On a durable node the key is erased by marking its slot, then settled (persisted, then 0).
    const uint64_t erased = unstable_bit(op.shard.node) != 0 ? m->word | kSlotErasingBit : 0;
    Status st = co_await client_->cas(slot, m->word, erased, &found);
    FARMEM_CO_TRY(st);
    if (found == m->word) {
      loop.succeeded();
      forget(kh);
      if (erased != 0) FARMEM_CO_TRY(co_await finish_erase(op, slot, erased));
      Status rs = co_await reclaimer_.retire(GlobalAddress(op.shard.node, slot_offset(m->word)),
                                             m->block_bytes);
      co_return rs;
    }
    ++stats_.cas_failures;
    if (loop.exhausted()) co_return loop.give_up();
    co_await loop.retry();
  }
}

}  // namespace farmem::ds::hash
