#include "farmem/ds/btree/index_cache.h"

#include "farmem/ds/btree/layout.h"

namespace farmem::ds::btree {

size_t IndexCache::upper(std::string_view key) const {
  const uint64_t kp = key_prefix(key);
  size_t lo = 0, hi = order_.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const Slot& s = order_[mid];
    const bool le = s.prefix != kp ? s.prefix < kp : entries_[s.entry].low <= key;
    if (le) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

size_t IndexCache::covering(std::string_view key) const {
  const size_t pos = upper(key);
  if (pos == 0) return order_.size();
  const Entry& e = entries_[order_[pos - 1].entry];
  if (!e.high_infinite && compare_keys(key, e.high) >= 0) return order_.size();
  return pos - 1;
}

GlobalAddress IndexCache::leaf_for(std::string_view key) {
  if (budget_ == 0) return GlobalAddress();
  const size_t pos = covering(key);
  if (pos == order_.size()) {
    ++stats_.misses;
    return GlobalAddress();
  }
  Entry& e = entries_[order_[pos].entry];
  PageView v;
  if (v.parse(e.image.data(), page_bytes_, tree_id_, /*verify_checksum=*/false) !=
      PageView::Check::kWhole) {  // cannot happen: validated when inserted
    erase_at(pos);
    ++stats_.misses;
    return GlobalAddress();
  }
  e.used = ++tick_;
  ++stats_.hits;
  return GlobalAddress::unpack(v.child_for(key));
}

void IndexCache::insert(GlobalAddress addr, const char* image) {
  (void)addr;
  if (budget_ < entry_bytes()) return;
  PageView v;
  if (v.parse(image, page_bytes_, tree_id_) != PageView::Check::kWhole || v.level() != 1 ||
      v.dead()) {
    return;
  }
  const std::string_view low = v.low_infinite() ? std::string_view() : v.low();
  // Drop every cached page whose range overlaps [low, high): older copies of this range.
  size_t pos = upper(low);
  if (pos > 0) {
    const Entry& prev = entries_[order_[pos - 1].entry];
    if (prev.high_infinite || low < prev.high) --pos;
  }
  while (pos < order_.size() && (v.high_infinite() || entries_[order_[pos].entry].low < v.high())) {
    erase_at(pos);
  }
  while (bytes() + entry_bytes() > budget_ && !order_.empty()) evict_one();
  uint32_t idx;
  if (!free_.empty()) {
    idx = free_.back();
    free_.pop_back();
  } else {
    idx = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  Entry& e = entries_[idx];
  e.image.assign(image, page_bytes_);
  e.low.assign(low);
  e.high.assign(v.high());
  e.high_infinite = v.high_infinite();
  e.used = ++tick_;
  order_.insert(order_.begin() + static_cast<ptrdiff_t>(upper(low)), Slot{key_prefix(low), idx});
  ++stats_.inserts;
}

void IndexCache::invalidate(std::string_view key) {
  const size_t pos = covering(key);
  if (pos == order_.size()) return;
  erase_at(pos);
  ++stats_.invalidations;
}

void IndexCache::erase_at(size_t pos) {
  const uint32_t idx = order_[pos].entry;
  entries_[idx] = Entry{};
  free_.push_back(idx);
  order_.erase(order_.begin() + static_cast<ptrdiff_t>(pos));
}

void IndexCache::evict_one() {
  // The least recently used of up to 8 sampled entries.
  size_t victim = 0;
  uint64_t oldest = UINT64_MAX;
  for (int i = 0; i < 8; ++i) {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    const size_t pos = rng_ % order_.size();
    const uint64_t used = entries_[order_[pos].entry].used;
    if (used < oldest) {
      oldest = used;
      victim = pos;
    }
  }
  erase_at(victim);
  ++stats_.evictions;
}

void IndexCache::clear() {
  order_.clear();
  entries_.clear();
  free_.clear();
}

}  // namespace farmem::ds::btree
