#include "farmem/ds/btree/index_cache.h"

#include "farmem/ds/btree/layout.h"

namespace farmem::ds::btree {

IndexCache::Map::iterator IndexCache::covering(std::string_view key) {
  auto it = by_low_.upper_bound(key);  // first low > key
  if (it == by_low_.begin()) return by_low_.end();
  --it;
  if (!it->second.high_infinite && key >= it->second.high) return by_low_.end();
  return it;
}

GlobalAddress IndexCache::leaf_for(std::string_view key) {
  if (budget_ == 0) return GlobalAddress();
  auto it = covering(key);
  if (it == by_low_.end()) {
    ++stats_.misses;
    return GlobalAddress();
  }
  PageView v;
  if (v.parse(it->second.image.data(), page_bytes_, tree_id_, /*verify_checksum=*/false) !=
      PageView::Check::kWhole) {  // cannot happen: validated when inserted
    erase(it);
    ++stats_.misses;
    return GlobalAddress();
  }
  lru_.splice(lru_.begin(), lru_, it->second.lru);
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
  auto it = by_low_.upper_bound(low);
  if (it != by_low_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.high_infinite || low < prev->second.high) it = prev;
  }
  while (it != by_low_.end() && (v.high_infinite() || it->first < v.high())) {
    auto next = std::next(it);
    erase(it);
    it = next;
  }
  while (bytes_ + entry_bytes() > budget_ && !lru_.empty()) {
    erase(by_low_.find(lru_.back()));
    ++stats_.evictions;
  }
  lru_.emplace_front(low);
  Entry e;
  e.image.assign(image, page_bytes_);
  e.high = std::string(v.high());
  e.high_infinite = v.high_infinite();
  e.lru = lru_.begin();
  by_low_.emplace(std::string(low), std::move(e));
  bytes_ += entry_bytes();
  ++stats_.inserts;
}

void IndexCache::invalidate(std::string_view key) {
  auto it = covering(key);
  if (it == by_low_.end()) return;
  erase(it);
  ++stats_.invalidations;
}

void IndexCache::erase(Map::iterator it) {
  lru_.erase(it->second.lru);
  by_low_.erase(it);
  bytes_ -= entry_bytes();
}

void IndexCache::clear() {
  by_low_.clear();
  lru_.clear();
  bytes_ = 0;
}

}  // namespace farmem::ds::btree
