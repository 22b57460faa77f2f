#include "allocator.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "farmem/common/check.h"

namespace farmem::kv::service {

namespace {
constexpr uint64_t kUnit = 64;
constexpr uint64_t kMinChunk = 4096;
constexpr uint64_t kMaxChunk = 1 << 20;

uint64_t round_unit(uint64_t n) { return (n + kUnit - 1) & ~(kUnit - 1); }
}  // namespace

PoolAllocator::PoolAllocator(MemorySource& source, uint64_t capacity_bytes, uint64_t grace_ns)
    : source_(source), capacity_(capacity_bytes), grace_ns_(grace_ns) {
  chunk_ = std::clamp<uint64_t>(std::bit_floor(std::max<uint64_t>(capacity_bytes / 16, 1)),
                                kMinChunk, kMaxChunk);
  const uint64_t max_class = chunk_ / 4;
  for (uint64_t b = kUnit; b <= std::min<uint64_t>(1024, max_class); b += kUnit) {
    class_bytes_.push_back(b);
  }
  for (uint64_t base = 1024; base < max_class; base *= 2) {
    for (uint64_t step = 1; step <= 4; ++step) {
      const uint64_t b = base + step * base / 4;
      if (b <= max_class) class_bytes_.push_back(b);
    }
  }
  free_.resize(class_bytes_.size());
}

int PoolAllocator::class_of(uint64_t bytes) const {
  if (bytes > class_bytes_.back()) return -1;
  if (bytes <= 1024)
    return static_cast<int>((round_unit(std::max<uint64_t>(bytes, 1)) / kUnit) - 1);
  auto it = std::lower_bound(class_bytes_.begin(), class_bytes_.end(), bytes);
  return static_cast<int>(it - class_bytes_.begin());
}

uint64_t PoolAllocator::block_bytes(uint64_t bytes) const {
  const int c = class_of(bytes);
  if (c >= 0) return class_bytes_[static_cast<size_t>(c)];
  return std::bit_ceil(round_unit(bytes));
}

Result<uint64_t> PoolAllocator::allocate(uint64_t bytes, uint64_t now_ns) {
  if (bytes == 0) return InvalidArgument("empty allocation");
  reclaim(now_ns);
  const int c = class_of(bytes);
  if (c < 0) return allocate_large(bytes);
  auto& list = free_[static_cast<size_t>(c)];
  if (!list.empty()) {
    const uint64_t off = list.back();
    list.pop_back();
    return off;
  }
  const uint64_t need = class_bytes_[static_cast<size_t>(c)];
  if (bump_end_ - bump_ < need) {
    carve_rest();
    if (!refill_from_free(need)) FARMEM_TRY(refill());
  }
  FARMEM_ASSERT(bump_end_ - bump_ >= need && bump_ % kUnit == 0,
                "a small block is carved aligned from its chunk");
  const uint64_t off = bump_;
  bump_ += need;
  return off;
}

Result<uint64_t> PoolAllocator::allocate_large(uint64_t bytes) {
  const uint64_t want = std::bit_ceil(round_unit(bytes));
  if (want < bytes || used_ + want > capacity_) {
    return ResourceExhausted(
        fmt::format("pool full: {} more bytes would pass its capacity of {} "
                    "({} in use)",
                    want, capacity_, used_));
  }
  auto b = source_.take(want);
  FARMEM_TRY(b);
  used_ += b->bytes;
  large_[b->offset] = b->bytes;
  return b->offset;
}

Status PoolAllocator::refill() {
  if (used_ + chunk_ > capacity_) {
    return ResourceExhausted(fmt::format(
        "pool full: its capacity of {} bytes is in use ({} bytes held)", capacity_, used_));
  }
  auto b = source_.take(chunk_);
  FARMEM_TRY(b);
  FARMEM_ASSERT(b->bytes >= chunk_ && b->offset % kUnit == 0,
                "the heap gives aligned blocks of at least what was asked");
  used_ += b->bytes;
  bump_ = b->offset;
  bump_end_ = b->offset + b->bytes;
  return OkStatus();
}

bool PoolAllocator::refill_from_free(uint64_t need) {
  for (size_t c = free_.size(); c-- > 0 && class_bytes_[c] >= need;) {
    if (free_[c].empty()) continue;
    bump_ = free_[c].back();
    bump_end_ = bump_ + class_bytes_[c];
    free_[c].pop_back();
    return true;
  }
  return false;
}

// What is left of the current chunk goes to the free lists of the largest classes that fit.
void PoolAllocator::carve_rest() {
  carve(bump_, bump_end_);
  bump_ = bump_end_ = 0;
}

void PoolAllocator::carve(uint64_t begin, uint64_t end) {
  while (end - begin >= kUnit) {
    auto it = std::upper_bound(class_bytes_.begin(), class_bytes_.end(), end - begin);
    FARMEM_ASSERT(it != class_bytes_.begin(), "the smallest class is one unit");
    const size_t c = static_cast<size_t>(it - class_bytes_.begin()) - 1;
    free_[c].push_back(begin);
    begin += class_bytes_[c];
  }
}

std::vector<PoolAllocator::Live> PoolAllocator::rebuild(std::vector<MemorySource::Block> blocks,
                                                        std::vector<Live> lives) {
  FARMEM_ASSERT(used_ == 0 && large_.empty(), "rebuild runs on a fresh allocator");
  auto by_offset = [](const auto& a, const auto& b) { return a.offset < b.offset; };
  std::sort(blocks.begin(), blocks.end(), by_offset);
  std::sort(lives.begin(), lives.end(), by_offset);
  std::vector<Live> refused;
  const Live* next = lives.data();
  const Live* const end = lives.data() + lives.size();
  for (const MemorySource::Block& b : blocks) {
    for (; next != end && next->offset < b.offset; ++next) refused.push_back(*next);
    const Live* first = next;
    while (next != end && next->offset < b.offset + b.bytes) ++next;
    rebuild_block(b, first, next, &refused);
  }
  refused.insert(refused.end(), next, end);
  return refused;
}

void PoolAllocator::rebuild_block(const MemorySource::Block& b, const Live* first, const Live* last,
                                  std::vector<Live>* refused) {
  if (first != last && first->offset == b.offset && class_of(first->bytes) < 0 &&
      block_bytes(first->bytes) <= b.bytes) {
    used_ += b.bytes;
    large_[b.offset] = b.bytes;
    refused->insert(refused->end(), first + 1, last);  // nothing shares a large block
    return;
  }
  if (b.bytes != chunk_) {
    refused->insert(refused->end(), first, last);
    source_.give_back(b.offset);
    return;
  }
  used_ += b.bytes;
  uint64_t at = b.offset;
  for (const Live* l = first; l != last; ++l) {
    const uint64_t bytes = block_bytes(l->bytes);
    if (class_of(l->bytes) < 0 || l->offset < at || l->offset + bytes > b.offset + b.bytes) {
      refused->push_back(*l);
      continue;
    }
    carve(at, l->offset);
    at = l->offset + bytes;
  }
  carve(at, b.offset + b.bytes);
}

void PoolAllocator::retire(uint64_t offset, uint64_t bytes, uint64_t now_ns) {
  if (grace_ns_ == 0) return release(offset, bytes);
  retired_.push_back({offset, bytes, now_ns + grace_ns_});
}

void PoolAllocator::free_now(uint64_t offset, uint64_t bytes) { release(offset, bytes); }

void PoolAllocator::reclaim(uint64_t now_ns) {
  while (!retired_.empty() && retired_.front().ripe_ns <= now_ns) {
    release(retired_.front().offset, retired_.front().bytes);
    retired_.pop_front();
  }
}

void PoolAllocator::release(uint64_t offset, uint64_t bytes) {
  const int c = class_of(bytes);
  if (c >= 0) {
    free_[static_cast<size_t>(c)].push_back(offset);
    return;
  }
  auto it = large_.find(offset);
  if (it == large_.end()) return;
  FARMEM_ASSERT(used_ >= it->second, "a large block is counted in used_bytes");
  used_ -= it->second;
  large_.erase(it);
  source_.give_back(offset);
}

}  // namespace farmem::kv::service
