// HashTable lookups: the addresses of a key's two combined buckets, reading them, reading the
// KV blocks their slots name, and finding the slots that hold a key (hash_table.h,
// docs/formats/hash_table/protocols.md "lookup").
#include <algorithm>

#include "farmem/common/check.h"
#include "farmem/ds/common/durable.h"
#include "farmem/ds/hash/hash_table.h"
#include "geometry.h"
#include "op_context.h"

namespace farmem::ds::hash {

using client::Batch;
using runtime::Task;

void HashTable::bucket_addrs(const Shard& s, const KeyHash& kh, Buckets* b) const {
  const GlobalAddress base = subtable_of(s, kh);
  const uint64_t main = 1ull << main_buckets_log2_;
  uint64_t i1 = (kh.h1 >> 24) & (main - 1);
  uint64_t i2 = kh.h2 & (main - 1);
  // The two combined buckets must not share a group (they would share its overflow bucket).
  if ((i2 >> 1) == (i1 >> 1)) i2 = (i2 + 2) & (main - 1);
  FARMEM_ASSERT(i1 < main && i2 < main && (i1 >> 1) != (i2 >> 1),
                "two main buckets of the subtable, in different groups");
  b->addr[0] = base + combined_bucket_offset(i1);
  b->addr[1] = b->addr[0] + kBucketBytes;
  b->addr[2] = base + combined_bucket_offset(i2);
  b->addr[3] = b->addr[2] + kBucketBytes;
}

Task<Status> HashTable::read_buckets(OpContext& op, Buckets* b) {
  if (directory_due(op.shard)) FARMEM_CO_TRY(co_await check_directory(op));
  bucket_addrs(op.shard, op.kh, b);
  Batch batch(*client_);
  NewBlock* block = op.block;
  const bool writes_block = block != nullptr && !block->written;
  if (writes_block) {
    (void)batch.write(block->addr, block->bytes.data(), block->bytes.size());
    // On a durable node the block is stable before any slot can name it (over TCP within the
    // same message; elsewhere one more once the write is done; nothing on a volatile node).
    (void)batch.persist(block->addr, block->bytes.size());
    block->written = true;
  }
  (void)batch.read(b->addr[0], &b->bucket[0], 2 * kBucketBytes);
  (void)batch.read(b->addr[2], &b->bucket[2], 2 * kBucketBytes);
  Status st = co_await batch.wait();
  ++op.round_trips;
  if (writes_block && node_durable(client_, op.shard.node) && !client_->served(op.shard.node)) {
    ++op.round_trips;
  }
  co_return st;
}

bool HashTable::buckets_fresh(const KeyHash& kh, const Buckets& b) const {
  for (const Bucket& bk : b.bucket) {
    if (bk.local_depth > 32 || (kh.h1 & suffix_mask(bk.local_depth)) != bk.suffix) return false;
  }
  return true;
}

void HashTable::add_block_reads(const Shard& s, const std::vector<Match>& cands, int round,
                                std::vector<std::string>* bufs, Batch* batch) {
  for (size_t i = 0; i < cands.size(); ++i) {
    std::string& buf = (*bufs)[i];
    const uint32_t units = slot_len_units(cands[i].word);
    if (round == 0) {
      buf.resize(units ? units * kBlockUnit : kBlockUnit);
    } else {
      // Only a large block (its slot gives no length) can be longer than round 0 read; the
      // slot test comes first, so no other block is checksummed here.
      if (units != 0) continue;
      KvBlockView v;
      size_t need = 0;
      if (check_kv_block(buf.data(), buf.size(), kMaxKeyBytes, kMaxValueBytes, &v, &need) !=
          BlockCheck::kShort) {
        continue;
      }
      buf.resize(need);
    }
    (void)batch->read(GlobalAddress(s.node, slot_offset(cands[i].word)), buf.data(), buf.size());
  }
}

Task<Status> HashTable::read_block_round(OpContext& op, const std::vector<Match>& cands, int round,
                                         std::vector<std::string>* bufs) {
  Batch batch(*client_);
  add_block_reads(op.shard, cands, round, bufs, &batch);
  if (batch.size() == 0) co_return OkStatus();
  Status st = co_await batch.wait();
  ++op.round_trips;
  co_return st;
}

Task<Status> HashTable::read_blocks(OpContext& op, const std::vector<Match>& cands,
                                    std::vector<std::string>* bufs) {
  bufs->assign(cands.size(), std::string());
  for (int round = 0; round < 2; ++round) {
    Status st = co_await read_block_round(op, cands, round, bufs);
    FARMEM_CO_TRY(st);
  }
  co_return OkStatus();
}

Task<Result<HashTable::Scan>> HashTable::find(OpContext& op, const Buckets& b, bool pending_too,
                                              std::vector<Match>* out, std::string* value) {
  out->clear();
  for (const Bucket& bk : b.bucket) {
    for (uint64_t w : bk.slots) {
      if (slot_frozen(w)) co_return Scan::kFrozen;
    }
  }
  std::vector<Match> cands;
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) {
      uint64_t w = b.bucket[j].slots[k];
      if (w == 0 || slot_fp(w) != op.kh.fp()) continue;
      if (slot_pending(w) && !pending_too) continue;
      cands.push_back(Match{j, k, w, 0, 0});
    }
  }
  if (cands.empty()) co_return Scan::kOk;
  // read_blocks, with its first round here: a lookup reads blocks on every miss of the
  // speculative cache and every update, and a coroutine call costs more than the reads.
  std::vector<std::string> bufs(cands.size());
  {
    Batch batch(*client_);
    add_block_reads(op.shard, cands, 0, &bufs, &batch);
    Status st = co_await batch.wait();
    ++op.round_trips;
    FARMEM_CO_TRY(st);
  }
  for (const Match& c : cands) {
    if (slot_len_units(c.word) == 0) {  // a large block: its header may announce more
      Status st = co_await read_block_round(op, cands, 1, &bufs);
      FARMEM_CO_TRY(st);
      break;
    }
  }
  bool torn = false;
  uint64_t first_addr = 0;
  std::string_view first_value;  // the value of the lowest matching slot (in bufs)
  for (size_t i = 0; i < cands.size(); ++i) {
    KvBlockView v;
    size_t need = 0;
    if (check_kv_block(bufs[i].data(), bufs[i].size(), kMaxKeyBytes, kMaxValueBytes, &v, &need) !=
        BlockCheck::kOk) {
      torn = true;
      continue;
    }
    if (!kv_block_key_is(v, op.key)) continue;
    Match m = cands[i];
    m.block_bytes = v.bytes;
    m.owner = v.owner;
    const uint64_t addr = slot_addr(b, m).pack();
    if (out->empty() || addr < first_addr) {
      first_addr = addr;
      first_value = v.value;
    }
    out->push_back(m);
  }
  if (out->empty()) co_return torn ? Scan::kTorn : Scan::kOk;
  bool settled = false;
  for (const Match& m : *out) {
    if (!slot_settling(m.word)) continue;
    if (op.overwrites && (m.word & kSlotErasingBit) == 0) continue;
    FARMEM_CO_TRY(co_await settle(slot_addr(b, m), m.word));
    ++stats_.settled;
    settled = true;
  }
  if (settled) co_return Scan::kTorn;
  if (out->size() > 1) {
    std::sort(out->begin(), out->end(), [&b](const Match& x, const Match& y) {
      return slot_addr(b, x).pack() < slot_addr(b, y).pack();
    });
  }
  if (value != nullptr) value->assign(first_value);
  co_return Scan::kOk;
}

Task<Status> HashTable::settle(GlobalAddress slot, uint64_t word, uint64_t* found) {
  FARMEM_CO_TRY(co_await persist_if_durable(client_, slot, 8));
  uint64_t ignored = 0;
  Status st = co_await client_->cas(slot, word, slot_settled(word), found ? found : &ignored);
  co_return st;
}

uint64_t HashTable::unstable_bit(uint16_t node) const {
  return node_durable(client_, node) ? kSlotUnstableBit : 0;
}

Task<Result<HashTable::Match>> HashTable::locate(OpContext& op, Buckets* b, std::string* value,
                                                 std::vector<Match>* all) {
  Wait wait(*client_);
  std::vector<Match> matches;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    // (The first read also writes op's new block if it is not written yet.)
    Status st = co_await read_buckets(op, b);
    FARMEM_CO_TRY(st);
    if (!buckets_fresh(op.kh, *b)) {
      Status rs = co_await resync(op, wait);
      FARMEM_CO_TRY(rs);
      continue;
    }
    auto scan = co_await find(op, *b, /*pending_too=*/false, &matches, value);
    FARMEM_CO_TRY(scan);
    if (*scan == Scan::kFrozen) {
      Status ws = co_await wait_for_split(op, wait);
      FARMEM_CO_TRY(ws);
      continue;
    }
    if (*scan == Scan::kTorn) {
      ++stats_.stale_reads;
      co_await wait.backoff.retry();
      continue;
    }
    if (all != nullptr) *all = matches;
    co_return matches.empty() ? Match{} : matches.front();
  }
  co_return RetriesExhausted("hash table lookup (buckets kept changing)", options_.max_attempts);
}

Task<Result<int>> HashTable::committed_copies(std::string_view key) {
  FARMEM_CO_TRY(check_sizes(key, {}));
  const KeyHash kh = hash_key(key);
  OpContext op(key, kh, shard_of(kh));
  Buckets b;
  std::vector<Match> all;
  auto m = co_await locate(op, &b, nullptr, &all);
  FARMEM_CO_TRY(m);
  co_return static_cast<int>(all.size());
}

}  // namespace farmem::ds::hash
