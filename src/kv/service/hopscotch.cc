#include "hopscotch.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "farmem/kv/wire.h"

namespace farmem::kv::service {

namespace {
constexpr uint64_t kMaxProbe = 4096;  // buckets searched for a free one before growing
constexpr uint64_t kMaxSlots = 1ull << 32;
}  // namespace

uint64_t HopscotchIndex::hash_key(std::string_view key) {
  return XXH3_64bits(key.data(), key.size());
}

Status HopscotchIndex::init(uint64_t expected_count, uint64_t now_ns) {
  uint64_t want = kMinSlots;
  if (expected_count > 0) {
    const uint64_t slots = expected_count + expected_count / 3 + 1;  // load <= 75%
    want = std::bit_ceil(std::min(std::max(slots, kMinSlots), kMaxSlots));
  }
  auto off = allocate_table(want, now_ns);
  FARMEM_TRY(off);
  table_ = *off;
  slots_ = want;
  return OkStatus();
}

Result<uint64_t> HopscotchIndex::allocate_table(uint64_t n, uint64_t now_ns) {
  FARMEM_ASSERT(std::has_single_bit(n) && n >= kMinSlots && n <= kMaxSlots,
                "index tables have a power of two of slots");
  auto off = allocator_.allocate(n * sizeof(IndexBucket), now_ns);
  FARMEM_TRY(off);
  FARMEM_ASSERT(region_.ptr(*off, n * sizeof(IndexBucket)) != nullptr,
                "pool memory lies inside the region");
  std::memset(region_.at(*off), 0, n * sizeof(IndexBucket));
  return off;
}

std::string_view HopscotchIndex::key_of(uint64_t record) const {
  const uint8_t* h = region_.ptr(record, sizeof(wire::KvRecordHeader));
  if (h == nullptr || record == 0) return {};
  uint32_t key_bytes;
  std::memcpy(&key_bytes, h + offsetof(wire::KvRecordHeader, key_bytes), 4);
  const uint8_t* k = region_.ptr(record + sizeof(wire::KvRecordHeader), key_bytes);
  if (k == nullptr) return {};
  return {reinterpret_cast<const char*>(k), key_bytes};
}

uint64_t HopscotchIndex::find(uint64_t hash, std::string_view key) const {
  const IndexBucket* tb = buckets();
  const uint64_t mask = slots_ - 1;
  const uint64_t home = hash & mask;
  uint32_t hop = tb[home].hop;
  while (hop != 0) {
    const uint64_t i = (home + static_cast<uint64_t>(std::countr_zero(hop))) & mask;
    hop &= hop - 1;
    const IndexBucket& b = tb[i];
    if (b.record != 0 && b.hash == hash && key_of(b.record) == key) return i;
  }
  return kNotFound;
}

bool HopscotchIndex::place(IndexBucket* tb, uint64_t n, uint64_t hash, uint64_t record,
                           uint64_t epoch, uint64_t* at, uint64_t* span) {
  const uint64_t mask = n - 1;
  const uint64_t home = hash & mask;
  uint64_t dist = 0;
  const uint64_t probe = std::min(n, kMaxProbe);
  while (dist < probe && tb[(home + dist) & mask].record != 0) ++dist;
  if (dist == probe) return false;
  *span = dist + 1;
  uint64_t free = (home + dist) & mask;
  while (dist >= kNeighbourhood) {
    // Move an entry from the buckets just before `free` into it, if its home allows.
    bool moved = false;
    for (uint64_t k = kNeighbourhood - 1; k >= 1 && !moved; --k) {
      const uint64_t b = (free - k) & mask;
      uint32_t hop = tb[b].hop;
      while (hop != 0) {
        const uint32_t i = static_cast<uint32_t>(std::countr_zero(hop));
        hop &= hop - 1;
        if (i >= k) break;
        const uint64_t e = (b + i) & mask;
        if (tb[e].record == 0 || (tb[e].hash & mask) != b) continue;  // not consistent: skip
        tb[free].record = tb[e].record;
        tb[free].hash = tb[e].hash;
        tb[free].epoch_ns = tb[e].epoch_ns;
        tb[b].hop = (tb[b].hop | (1u << k)) & ~(1u << i);
        tb[e].record = 0;
        free = e;
        dist -= k - i;
        moved = true;
        break;
      }
    }
    if (!moved) return false;
  }
  FARMEM_ASSERT(dist < kNeighbourhood && free == ((home + dist) & mask),
                "an entry lands in its home's neighbourhood");
  tb[free].record = record;
  tb[free].hash = hash;
  tb[free].epoch_ns = epoch;
  tb[home].hop |= 1u << dist;
  *at = free;
  return true;
}

Result<uint64_t> HopscotchIndex::insert(uint64_t hash, uint64_t record, uint64_t epoch_ns,
                                        uint64_t now_ns) {
  if ((size_ + 1) * 10 > slots_ * 9) FARMEM_TRY(grow(now_ns));
  uint64_t at = 0, span = 0;
  while (!place(buckets(), slots_, hash, record, epoch_ns, &at, &span)) {
    FARMEM_TRY(grow(now_ns));
  }
  mark_span(hash & (slots_ - 1), span);
  ++size_;
  return at;
}

void HopscotchIndex::erase(uint64_t i) {
  FARMEM_ASSERT(i < slots_, "bucket positions are inside the table");
  IndexBucket* tb = buckets();
  const uint64_t mask = slots_ - 1;
  const uint64_t home = tb[i].hash & mask;
  const uint64_t dist = (i - home) & mask;
  if (dist < kNeighbourhood) tb[home].hop &= ~(1u << dist);
  tb[i].record = 0;
  if (size_ > 0) --size_;
  mark_bucket(home);
  mark_bucket(i);
}

void HopscotchIndex::mark_span(uint64_t first, uint64_t count) {
  if (dirty_ == nullptr) return;
  const uint64_t head = std::min(count, slots_ - first);
  dirty_->mark(table_ + first * sizeof(IndexBucket), head * sizeof(IndexBucket));
  if (count > head) dirty_->mark(table_, (count - head) * sizeof(IndexBucket));
}

Status HopscotchIndex::adopt(uint64_t table, uint64_t slots) {
  if (!std::has_single_bit(slots) || slots < kMinSlots || slots > kMaxSlots ||
      region_.ptr(table, slots * sizeof(IndexBucket)) == nullptr || table == 0) {
    return InvalidArgument("the pool header names no index table inside the region");
  }
  table_ = table;
  slots_ = slots;
  return OkStatus();
}

Status HopscotchIndex::grow(uint64_t now_ns) {
  uint64_t n = slots_ * 2;
  while (n <= kMaxSlots) {
    auto off = allocate_table(n, now_ns);
    FARMEM_TRY(off);
    auto* tb = reinterpret_cast<IndexBucket*>(region_.at(*off));
    bool ok = true;
    uint64_t moved = 0;
    for (uint64_t i = 0; i < slots_ && ok; ++i) {
      const IndexBucket& b = buckets()[i];
      if (b.record == 0) continue;
      uint64_t at, span;
      ok = place(tb, n, b.hash, b.record, b.epoch_ns, &at, &span);
      ++moved;
    }
    if (ok) {
      const uint64_t old = table_, old_slots = slots_;
      table_ = *off;
      slots_ = n;
      size_ = moved;
      mark_span(0, n);
      if (moved_) moved_();
      allocator_.free_now(old, old_slots * sizeof(IndexBucket));
      return OkStatus();
    }
    allocator_.free_now(*off, n * sizeof(IndexBucket));
    n *= 2;
  }
  return ResourceExhausted("pool index cannot grow past 2^32 slots");
}

}  // namespace farmem::kv::service
