// The hash table's served procedures on the memory node (ds/hash/served.h,
// docs/formats/hash_table/served.md): a get's, update's or insert's dependent steps inside one
// kCall.
#include "hash_procedures.h"

#include <fmt/format.h>

#include <cstring>
#include <string_view>

#include "farmem/ds/common/kv_block.h"
#include "farmem/ds/hash/layout.h"
#include "farmem/ds/hash/served.h"
#include "farmem/ds/service.h"
#include "farmem/fabric/wire.h"

namespace farmem::ds::hash {

namespace {

using memnode::ProcedureCall;

// What one look at the buckets found.
struct Found {
  ServedOutcome outcome = ServedOutcome::kAbsent;
  uint64_t slot = 0;  // region offset of the key's lowest committed slot
  uint64_t word = 0;
  uint64_t block_bytes = 0;
  std::string_view value;  // in the region
  uint32_t value_bytes = 0;
};

Found only(ServedOutcome o) {
  Found f;
  f.outcome = o;
  return f;
}

// Checks a call's arguments and reply slot (`what`: the procedure, for the message).
Status check_args(const ProcedureCall& c, std::string_view what, ServedLookupArgs* a,
                  std::string_view* key) {
  if (c.out_capacity < sizeof(ServedLookupResult)) {
    return InvalidArgument(fmt::format("hash {} reply slot is too small for its result", what));
  }
  if (c.args_bytes < sizeof(*a)) return InvalidArgument("hash call arguments are truncated");
  std::memcpy(a, c.args, sizeof(*a));
  if (a->reserved != 0 || a->key_bytes == 0 || a->key_bytes > kMaxKeyBytes ||
      c.args_bytes != sizeof(*a) + a->key_bytes) {
    return InvalidArgument(fmt::format("hash call with a {}-byte key in {} argument bytes",
                                       a->key_bytes, c.args_bytes));
  }
  for (uint64_t b : a->bucket) {
    if (b % kBucketBytes != 0 || b < wire::kRegionHeaderBytes || b > c.region_bytes ||
        c.region_bytes - b < 2 * kBucketBytes) {
      return OutOfRange(fmt::format("hash call names buckets at offset {}", b));
    }
  }
  *key = std::string_view(reinterpret_cast<const char*>(c.args) + sizeof(*a), a->key_bytes);
  return OkStatus();
}

// Copies both combined buckets word by word (other clients CAS their slots meanwhile).
void load_buckets(const ProcedureCall& c, const ServedLookupArgs& a, Bucket out[4]) {
  for (int half = 0; half < 2; ++half) {
    const auto* words = reinterpret_cast<const uint64_t*>(c.region + a.bucket[half]);
    auto* dst = reinterpret_cast<uint64_t*>(&out[2 * half]);
    for (size_t i = 0; i < 2 * kBucketBytes / 8; ++i) {
      dst[i] = __atomic_load_n(words + i, __ATOMIC_ACQUIRE);
    }
  }
}

uint64_t slot_offset_of(const ServedLookupArgs& a, int bucket, int slot) {
  return a.bucket[bucket / 2] + (bucket % 2) * kBucketBytes + offsetof(Bucket, slots) + 8ull * slot;
}

// Why the buckets cannot be used as they are, or kAbsent when they can.
ServedOutcome check_buckets(const Bucket b[4], uint64_t h1) {
  for (int j = 0; j < 4; ++j) {
    if (b[j].local_depth > 32 || (h1 & suffix_mask(b[j].local_depth)) != b[j].suffix) {
      return ServedOutcome::kStale;
    }
    for (uint64_t w : b[j].slots) {
      if (slot_frozen(w)) return ServedOutcome::kFrozen;
    }
  }
  return ServedOutcome::kAbsent;
}

// Loads both combined buckets into b: kAbsent when they can be used, else why not.
ServedOutcome load_fresh(const ProcedureCall& c, const ServedLookupArgs& a, Bucket b[4]) {
  load_buckets(c, a, b);
  return check_buckets(b, a.h1);
}

// Checks the block `word` names where it lies (a published block is immutable until it is
// retired and its grace period passed, far longer than a call): kTorn, kAbsent (another key),
// kTooLarge (a large block: the client reads it) or kFound with *v viewing the region.
ServedOutcome check_block(const ProcedureCall& c, uint64_t word, std::string_view key,
                          KvBlockView* v) {
  const uint64_t offset = slot_offset(word);
  const uint64_t bytes = uint64_t{slot_len_units(word)} * kBlockUnit;
  if (bytes == 0) return ServedOutcome::kTooLarge;
  if (offset < wire::kRegionHeaderBytes || offset > c.region_bytes ||
      c.region_bytes - offset < bytes) {
    return ServedOutcome::kTorn;
  }
  size_t need = 0;
  if (check_kv_block(reinterpret_cast<const char*>(c.region + offset), bytes, kMaxKeyBytes,
                     kMaxValueBytes, v, &need) != BlockCheck::kOk) {
    return ServedOutcome::kTorn;
  }
  return kv_block_key_is(*v, key) ? ServedOutcome::kFound : ServedOutcome::kAbsent;
}

// The key's lowest committed slot in the buckets, as a client's lookup finds it.
Found find_key(const ProcedureCall& c, const ServedLookupArgs& a, std::string_view key) {
  Bucket b[4];
  Found f;
  f.outcome = load_fresh(c, a, b);
  if (f.outcome != ServedOutcome::kAbsent) return f;
  const auto fp = static_cast<uint8_t>(a.h1 >> 56);
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) {
      const uint64_t w = b[j].slots[k];
      if (w == 0 || slot_fp(w) != fp || slot_pending(w)) continue;
      const uint64_t at = slot_offset_of(a, j, k);
      if (f.outcome == ServedOutcome::kFound && at > f.slot) continue;
      KvBlockView v;
      const ServedOutcome o = check_block(c, w, key, &v);
      if (o == ServedOutcome::kAbsent) continue;
      if (o != ServedOutcome::kFound) return only(o);
      if (slot_settling(w)) return only(ServedOutcome::kTorn);  // the client settles it
      f = Found{o, at, w, v.bytes, v.value, static_cast<uint32_t>(v.value.size())};
    }
  }
  return f;
}

// Whether `word` may be installed by an update of the key hashed to h1 on this region.
Status check_new_word(const ProcedureCall& c, uint64_t word, uint64_t h1) {
  const uint64_t offset = slot_offset(word);
  const uint64_t bytes = uint64_t{slot_len_units(word)} * kBlockUnit;
  if (slot_fp(word) != static_cast<uint8_t>(h1 >> 56) || slot_pending(word) || slot_frozen(word) ||
      slot_settling(word) || (word & (kBlockUnit - 1)) != 0 || offset < wire::kRegionHeaderBytes ||
      offset > c.region_bytes || c.region_bytes - offset < bytes) {
    return InvalidArgument(fmt::format("hash update installs slot word {:#x}", word));
  }
  return OkStatus();
}

// What an insert's scan of the buckets found: a committed or pending slot of the key, a torn
// block, or where it may claim (the combined bucket with more free slots, RACE's two choices).
struct InsertScan {
  ServedOutcome outcome = ServedOutcome::kAbsent;  // kAbsent: free to claim `free_slot`
  uint64_t free_slot = 0;                          // region offset; 0: none (kFull)
};

InsertScan scan_for_insert(const ProcedureCall& c, const ServedLookupArgs& a, std::string_view key,
                           uint64_t mine) {
  Bucket b[4];
  InsertScan s;
  s.outcome = load_fresh(c, a, b);
  if (s.outcome != ServedOutcome::kAbsent) return s;
  const auto fp = static_cast<uint8_t>(a.h1 >> 56);
  int free_count[2] = {0, 0};
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) {
      const uint64_t w = b[j].slots[k];
      free_count[j / 2] += (w == 0);
      if (w == 0 || slot_fp(w) != fp || slot_offset_of(a, j, k) == mine) continue;
      KvBlockView v;
      const ServedOutcome o = check_block(c, w, key, &v);
      if (o == ServedOutcome::kAbsent) continue;
      if (o != ServedOutcome::kFound) return InsertScan{o, 0};
      // The key is there: committed (it exists) or a rival's pending claim (the client's path
      // waits for it, or clears it if its writer died).
      return InsertScan{slot_pending(w) ? ServedOutcome::kContended : ServedOutcome::kExists, 0};
    }
  }
  const int pick = free_count[1] > free_count[0] ? 1 : 0;
  for (int j = 2 * pick; j < 2 * pick + 2 && s.free_slot == 0; ++j) {
    for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) {
      if (b[j].slots[k] == 0) {
        s.free_slot = slot_offset_of(a, j, k);
        break;
      }
    }
  }
  if (s.free_slot == 0) s.outcome = ServedOutcome::kFull;
  return s;
}

bool cas_word(const ProcedureCall& c, uint64_t offset, uint64_t expected, uint64_t desired) {
  return __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(c.region + offset), &expected,
                                     desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

// One claim of a free slot and its settling; kAbsent means the claim CAS lost (try again).
ServedOutcome claim_and_commit(const ProcedureCall& c, const ServedLookupArgs& a,
                               std::string_view key, uint64_t* slot) {
  const InsertScan first = scan_for_insert(c, a, key, 0);
  if (first.outcome != ServedOutcome::kAbsent) return first.outcome;
  const uint64_t pending = a.new_word | kSlotPendingBit;
  if (!cas_word(c, first.free_slot, 0, pending)) return ServedOutcome::kAbsent;
  // Claimed: commit only when ours is the only slot holding the key (a rival that claimed
  // meanwhile sees ours, and one of us withdraws: settle_claim's rule on the client).
  const InsertScan again = scan_for_insert(c, a, key, first.free_slot);
  if (again.outcome != ServedOutcome::kAbsent && again.outcome != ServedOutcome::kFull) {
    (void)cas_word(c, first.free_slot, pending, 0);  // withdraw (a frozen slot was dropped)
    return again.outcome;
  }
  if (!cas_word(c, first.free_slot, pending, a.new_word)) return ServedOutcome::kFrozen;
  *slot = first.free_slot;
  return ServedOutcome::kInserted;
}

// The frame the writing procedures share: checked arguments, then at most kMaxServedCasAttempts
// calls of attempt(args, key, &result), which returns true once it decided; refused on a durable
// node, kContended when no attempt decided.
template <typename Attempt>
Result<size_t> writing_call(const ProcedureCall& c, std::string_view what, Attempt attempt) {
  ServedLookupArgs a;
  std::string_view key;
  FARMEM_TRY(check_args(c, what, &a, &key));
  FARMEM_TRY(check_new_word(c, a.new_word, a.h1));
  ServedLookupResult r{
      static_cast<uint32_t>(c.durable ? ServedOutcome::kRefused : ServedOutcome::kContended), 0, 0,
      0, 0};
  for (uint32_t i = 0; !c.durable && i < kMaxServedCasAttempts; ++i) {
    if (attempt(a, key, &r)) break;
  }
  std::memcpy(c.out, &r, sizeof(r));
  return sizeof(r);
}

}  // namespace

Result<size_t> served_insert(const ProcedureCall& c) {
  return writing_call(c, "insert",
                      [&c](const ServedLookupArgs& a, std::string_view key, ServedLookupResult* r) {
                        uint64_t slot = 0;
                        const ServedOutcome o = claim_and_commit(c, a, key, &slot);
                        if (o == ServedOutcome::kAbsent) return false;  // lost the claim CAS
                        r->outcome = static_cast<uint32_t>(o);
                        r->slot = slot;
                        return true;
                      });
}

Result<size_t> served_update(const ProcedureCall& c) {
  return writing_call(c, "update",
                      [&c](const ServedLookupArgs& a, std::string_view key, ServedLookupResult* r) {
                        const Found f = find_key(c, a, key);
                        if (f.outcome != ServedOutcome::kFound) {
                          r->outcome = static_cast<uint32_t>(f.outcome);
                          return true;
                        }
                        if (!cas_word(c, f.slot, f.word, a.new_word))
                          return false;  // changed meanwhile
                        *r = ServedLookupResult{static_cast<uint32_t>(ServedOutcome::kReplaced), 0,
                                                f.slot, f.word, f.block_bytes};
                        return true;
                      });
}

Result<size_t> served_get(const ProcedureCall& c) {
  ServedLookupArgs a;
  std::string_view key;
  FARMEM_TRY(check_args(c, "get", &a, &key));
  if (a.new_word != 0) return InvalidArgument("hash get carries a new word");
  const Found f = find_key(c, a, key);
  ServedLookupResult r{static_cast<uint32_t>(f.outcome), f.value_bytes, f.slot, f.word,
                       f.block_bytes};
  size_t bytes = sizeof(r);
  if (f.outcome == ServedOutcome::kFound) {
    if (f.value.size() > c.out_capacity - sizeof(r)) {
      r.outcome = static_cast<uint32_t>(ServedOutcome::kTooLarge);
    } else {
      std::memcpy(c.out + sizeof(r), f.value.data(), f.value.size());
      bytes += f.value.size();
    }
  }
  std::memcpy(c.out, &r, sizeof(r));
  return bytes;
}

}  // namespace farmem::ds::hash
