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

// The same for a short array, by counting: every load is independent of the others, so their
// cache misses overlap instead of forming the binary search's chain.
constexpr size_t kLinearCount = 64;
size_t count_at_most_linear(const uint64_t* a, size_t n, uint64_t x) {
  size_t c = 0;
  for (size_t i = 0; i < n; ++i) c += a[i] <= x ? 1 : 0;
  return c;
}

}  // namespace

uint64_t IndexCache::child_for(const Route& r, std::string_view key, uint64_t prefix) const {
  // Separators with a smaller prefix are < key, with a larger one > key; among the ones with
  // an equal prefix (the last of those counted), whole keys decide.
  const uint64_t* w = r.words;
  size_t n = r.count <= kLinearCount ? count_at_most_linear(w, r.count, prefix)
                                     : count_at_most(w, r.count, prefix);
  while (n > 0 && w[n - 1] == prefix && entries_[r.entry].key(static_cast<uint32_t>(n - 1)) > key) {
    --n;
  }
  return w[r.count + n];
}

size_t IndexCache::upper(std::string_view key, uint64_t prefix) const {
  size_t pos = count_at_most(low_prefixes_.data(), low_prefixes_.size(), prefix);
  while (pos > 0 && low_prefixes_[pos - 1] == prefix && entries_[routes_[pos - 1].entry].low > key)
    --pos;
  return pos;
}

size_t IndexCache::covering(std::string_view key, uint64_t prefix) const {
  const size_t pos = upper(key, prefix);
  if (pos == 0) return routes_.size();
  const Route& r = routes_[pos - 1];
  if (r.high_infinite || prefix < r.high_prefix) return pos - 1;
  if (prefix > r.high_prefix || key >= entries_[r.entry].high) return routes_.size();
  return pos - 1;
}

GlobalAddress IndexCache::leaf_for(std::string_view key) {
  if (budget_ == 0) return GlobalAddress();
  const uint64_t prefix = key_prefix(key);
  const size_t pos = covering(key, prefix);
  if (pos == routes_.size()) {
    ++stats_.misses;
    return GlobalAddress();
  }
  Route& r = routes_[pos];
  r.used = ++tick_;
  ++stats_.hits;
  return GlobalAddress::unpack(child_for(r, key, prefix));
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
  const uint64_t low_prefix = key_prefix(low);
  // Drop every cached page whose range overlaps [low, high): older copies of this range.
  size_t pos = upper(low, low_prefix);
  if (pos > 0) {
    const Route& prev = routes_[pos - 1];
    if (prev.high_infinite || low < entries_[prev.entry].high) --pos;
  }
  while (pos < routes_.size() &&
         (v.high_infinite() || entries_[routes_[pos].entry].low < v.high())) {
    erase_at(pos);
  }
  while (bytes() + entry_bytes() > budget_ && !routes_.empty()) evict_one();
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
  Route r{};
  r.words = e.words.data();
  r.high_prefix = key_prefix(v.high());
  r.used = ++tick_;
  r.entry = idx;
  r.count = static_cast<uint16_t>(n);
  r.high_infinite = v.high_infinite();
  const size_t at = upper(low, low_prefix);
  routes_.insert(routes_.begin() + static_cast<ptrdiff_t>(at), r);
  low_prefixes_.insert(low_prefixes_.begin() + static_cast<ptrdiff_t>(at), low_prefix);
  ++stats_.inserts;
}

void IndexCache::invalidate(std::string_view key) {
  const size_t pos = covering(key, key_prefix(key));
  if (pos == routes_.size()) return;
  erase_at(pos);
  ++stats_.invalidations;
}

void IndexCache::erase_at(size_t pos) {
  const uint32_t idx = routes_[pos].entry;
  entries_[idx] = Entry{};
  free_.push_back(idx);
  routes_.erase(routes_.begin() + static_cast<ptrdiff_t>(pos));
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
    const size_t pos = rng_ % routes_.size();
    if (routes_[pos].used < oldest) {
      oldest = routes_[pos].used;
      victim = pos;
    }
  }
  erase_at(victim);
  ++stats_.evictions;
}

void IndexCache::clear() {
  routes_.clear();
  low_prefixes_.clear();
  entries_.clear();
  free_.clear();
}

}  // namespace farmem::ds::btree
