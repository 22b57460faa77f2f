// HashTable::get: a lookup through the speculative cache (SMART's key -> slot cache: one round
// trip reads the slot word and the block it names together), falling back to a lookup of both
// buckets (hash_table.h, docs/formats/hash_table/protocols.md "lookup").
#include "farmem/ds/hash/hash_table.h"
#include "geometry.h"
#include "op_context.h"

namespace farmem::ds::hash {

using client::Batch;
using runtime::Task;

Task<Result<bool>> HashTable::speculative_get(OpContext& op, std::string* value) {
  const KeyHash& kh = op.kh;
  // A snapshot: other coroutines of this handle may rewrite the entry while we wait, and the
  // block we read must be the one the slot word we compare against points to.
  const SpecEntry e = spec_.at(kh.h1);
  if (e.slot_addr == 0 || slot_fp(e.slot_word) != kh.fp()) co_return false;
  uint32_t units = slot_len_units(e.slot_word);
  if (units == 0) co_return false;
  uint64_t word = 0;
  char small[1024];
  std::string big;
  char* buf = small;
  size_t bytes = units * kBlockUnit;
  if (bytes > sizeof(small)) {
    big.resize(bytes);
    buf = big.data();
  }
  Batch batch(*client_);
  (void)batch.read(GlobalAddress::unpack(e.slot_addr), &word, 8);
  (void)batch.read(GlobalAddress(op.shard.node, slot_offset(e.slot_word)), buf, bytes);
  Status st = co_await batch.wait();
  ++op.round_trips;
  FARMEM_CO_TRY(st);
  KvBlockView v;
  size_t need = 0;
  if (word != e.slot_word ||
      check_kv_block(buf, bytes, kMaxKeyBytes, kMaxValueBytes, &v, &need) != BlockCheck::kOk ||
      !kv_block_key_is(v, op.key)) {
    SpecEntry& live = spec_.at(kh.h1);
    if (live.slot_addr == e.slot_addr && live.slot_word == e.slot_word) live.slot_addr = 0;
    ++stats_.spec_misses;
    co_return false;
  }
  value->assign(v.value);
  ++stats_.spec_hits;
  co_return true;
}

bool HashTable::spec_first(bool served) {
  if (spec_score_ >= kSpecFirstScore || !served) return true;
  return (++spec_probes_ % kSpecProbeEvery) == 0;  // keep measuring now and then
}

void HashTable::note_spec(bool hit) {
  spec_score_ += hit ? (kSpecScoreOne - spec_score_) / 16 : -(spec_score_ / 16);
}

void HashTable::remember(const KeyHash& kh, GlobalAddress slot, uint64_t word) {
  if (!spec_.enabled() || slot_len_units(word) == 0) return;
  spec_.at(kh.h1) = SpecEntry{slot.pack(), word};
}

void HashTable::forget(const KeyHash& kh) {
  if (!spec_.enabled()) return;
  SpecEntry& e = spec_.at(kh.h1);
  if (slot_fp(e.slot_word) == kh.fp()) e.slot_addr = 0;
}

Task<Result<bool>> HashTable::get(std::string_view key, std::string* value) {
  FARMEM_CO_TRY(check_sizes(key, {}));
  const KeyHash kh = hash_key(key);
  // Counts this get's own round trips (coroutines of the handle interleave).
  OpContext op(key, kh, shard_of(kh));
  ++stats_.gets;
  if (directory_due(op.shard)) FARMEM_CO_TRY(co_await check_directory(op));
  const bool served = served_path(op);
  if (spec_.enabled() && spec_first(served)) {
    // The cache entry is likely a cache miss: start loading it, and let the thread's other
    // coroutines run meanwhile when there are any.
    spec_.prefetch(kh.h1);
    if (client_->scheduler().others_ready()) co_await client_->scheduler().yield();
    const uint32_t trips = op.round_trips;
    auto hit = co_await speculative_get(op, value);
    FARMEM_CO_TRY(hit);
    // (Only tries that cost a round trip count: an empty entry costs nothing.)
    if (op.round_trips > trips && served) note_spec(*hit);
    if (*hit) {
      stats_.get_round_trips += op.round_trips;
      co_return true;
    }
  }
  // Over TCP the node looks the key up in one call: after a miss of the cache, or instead of
  // trying the cache while it mostly misses (two reads of the cache cost the node less than
  // one lookup, so while it mostly hits it stays the first try).
  if (served) {
    auto step = co_await served_get(op, value);
    FARMEM_CO_TRY(step);
    if (*step != ServedStep::kOneSided) {
      stats_.get_round_trips += op.round_trips;
      co_return *step == ServedStep::kDone;
    }
  }
  Buckets b;
  auto m = co_await locate(op, &b, value);
  stats_.get_round_trips += op.round_trips;
  FARMEM_CO_TRY(m);
  if (m->bucket < 0) co_return false;
  remember(kh, slot_addr(b, *m), m->word);
  co_return true;
}

}  // namespace farmem::ds::hash
