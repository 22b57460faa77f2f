#include "farmem/ds/btree/index_cache.h"

#include "farmem/ds/btree/layout.h"

namespace farmem::ds::btree {

namespace {

// The number of elements <= x in the sorted array a[0, n), by a binary search without
// data-dependent branches (a conditional move per step).
size_t count_at_most(const uint64_t* a, size_t n, uint64_t x) {
  if (n == 0) return 0;
  const uint64_t* base = a;
  while (n > 1) {
    const size_t half = n / 2;
    base = base[half] <= x ? base + half : base;
    n -= half;
  }
  return static_cast<size_t>(base - a) + (*base <= x ? 1 : 0);
}

}  // namespace

uint64_t IndexCache::Entry::child_for(std::string_view key, uint64_t prefix) const {
  // Separators with a smaller prefix are < key, with a larger one > key; among the ones with
  // an equal prefix (the last of those counted), whole keys decide.
  size_t n = count_at_most(words.data(), count, prefix);
  while (n > 0 && words[n - 1] == prefix && this->key(static_cast<uint32_t>(n - 1)) > key) --n;
  return words[count + n];
}

size_t IndexCache::upper(std::string_view key) const {
  const uint64_t kp = key_prefix(key);
  size_t pos = count_at_most(low_prefixes_.data(), low_prefixes_.size(), kp);
  while (pos > 0 && low_prefixes_[pos - 1] == kp && entries_[order_[pos - 1]].low > key) --pos;
  return pos;
}

size_t IndexCache::covering(std::string_view key) const {
  const size_t pos = upper(key);
  if (pos == 0) return order_.size();
  const Entry& e = entries_[order_[pos - 1]];
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
  Entry& e = entries_[order_[pos]];
  e.used = ++tick_;
  ++stats_.hits;
  return GlobalAddress::unpack(e.child_for(key, key_prefix(key)));
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
    const Entry& prev = entries_[order_[pos - 1]];
    if (prev.high_infinite || low < prev.high) --pos;
  }
  while (pos < order_.size() && (v.high_infinite() || entries_[order_[pos]].low < v.high())) {
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
  const uint32_t n = v.count();
  e.count = n;
  e.words.resize(2 * size_t{n} + 1);
  e.keys.clear();
  e.key_ends.resize(n);
  e.words[n] = v.header().child0;
  for (uint32_t i = 0; i < n; ++i) {
    const std::string_view k = v.key(i);
    e.words[i] = key_prefix(k);
    e.words[n + 1 + i] = v.child(i);
    e.keys.append(k);
    e.key_ends[i] = static_cast<uint16_t>(e.keys.size());
  }
  e.low.assign(low);
  e.high.assign(v.high());
  e.high_infinite = v.high_infinite();
  e.used = ++tick_;
  const size_t at = upper(low);
  order_.insert(order_.begin() + static_cast<ptrdiff_t>(at), idx);
  low_prefixes_.insert(low_prefixes_.begin() + static_cast<ptrdiff_t>(at), key_prefix(low));
  ++stats_.inserts;
}

void IndexCache::invalidate(std::string_view key) {
  const size_t pos = covering(key);
  if (pos == order_.size()) return;
  erase_at(pos);
  ++stats_.invalidations;
}

void IndexCache::erase_at(size_t pos) {
  const uint32_t idx = order_[pos];
  entries_[idx] = Entry{};
  free_.push_back(idx);
  order_.erase(order_.begin() + static_cast<ptrdiff_t>(pos));
  low_prefixes_.erase(low_prefixes_.begin() + static_cast<ptrdiff_t>(pos));
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
    const uint64_t used = entries_[order_[pos]].used;
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
  low_prefixes_.clear();
  entries_.clear();
  free_.clear();
}

}  // namespace farmem::ds::btree
