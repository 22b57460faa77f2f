#include "farmem/agent/cache.h"

#include <algorithm>
#include <cstring>

#include "farmem/common/check.h"
#include "farmem/common/log.h"

namespace farmem::agent {

Status AgentOptions::validate() const {
  if (page_bytes < 4096 || (page_bytes & (page_bytes - 1)) != 0) {
    return InvalidArgument("agent: page_bytes must be a power of two >= 4096");
  }
  if (entry_bytes < page_bytes || entry_bytes % page_bytes != 0 || entry_bytes > (64ull << 20)) {
    return InvalidArgument("agent: entry_bytes must be a multiple of page_bytes, <= 64 MiB");
  }
  if (prefetch_workers < 1 || prefetch_workers > 8) {
    return InvalidArgument("agent: prefetch_workers must be 1..8");
  }
  if (max_queued < 1 || max_queued > 65536) return InvalidArgument("agent: max_queued 1..65536");
  if (model_window < 16) return InvalidArgument("agent: model_window must be >= 16");
  if (cost_weight <= 0 || cost_weight > 16) return InvalidArgument("agent: cost_weight (0, 16]");
  if (op_timeout_ms < 10) return InvalidArgument("agent: op_timeout_ms must be >= 10");
  return OkStatus();
}

AgentCache::AgentCache(const AgentOptions& options)
    : options_(options), entry_bytes_(options.entry_bytes) {
  counters_.dynamic_enabled = options.dynamic_cache;
}

bool AgentCache::ring_has_entry(uint64_t entry_packed) const {
  for (uint32_t i = 0; i < ring_size_; ++i) {
    const GlobalAddress page = GlobalAddress::unpack(ring_[i]);
    if (entry_base(page).pack() == entry_packed) return true;
  }
  return false;
}

bool AgentCache::record_access(GlobalAddress addr) {
  const GlobalAddress base = entry_base(addr);
  const bool ascending =
      base.offset() >= entry_bytes_ && ring_has_entry((base.pack() - entry_bytes_));
  const uint64_t page = addr.offset() / options_.page_bytes * options_.page_bytes;
  ring_[ring_next_] = GlobalAddress(addr.node(), page).pack();
  ring_next_ = (ring_next_ + 1) % ring_.size();
  ring_size_ = std::min<uint32_t>(ring_size_ + 1, ring_.size());
  return ascending;
}

std::optional<CacheHit> AgentCache::lookup(GlobalAddress addr, uint32_t bytes,
                                           std::vector<GlobalAddress>* stage, bool use_dynamic) {
  const GlobalAddress base = entry_base(addr);
  const uint64_t off = addr.offset() - base.offset();
  std::lock_guard lock(mu_);
  if (off + bytes > entry_bytes_) return std::nullopt;  // spans entries: never cached
  auto it = table_.find(Key{base.pack()});
  if (it != table_.end() && it->second->ready && it->second->is_static) {
    ++counters_.static_hits;
    return CacheHit{it->second, off, true};
  }
  if (!options_.dynamic_cache || !use_dynamic) return std::nullopt;
  const bool ascending = record_access(addr);
  if (!counters_.dynamic_enabled) {
    const bool would_hit = ghost_hit_locked(base.pack());
    account_locked(false, would_hit, bytes, would_hit ? 0 : entry_bytes_);
    return std::nullopt;
  }
  if (it != table_.end() && it->second->ready) {
    ++counters_.dynamic_hits;
    lru_.splice(lru_.begin(), lru_, it->second->lru);
    account_locked(true, false, bytes, 0);
    return CacheHit{it->second, off, false};
  }
  ++counters_.dynamic_misses;
  uint64_t staged = 0;
  if (it == table_.end() && add_placeholder_locked(base)) {
    stage->push_back(base);
    staged += entry_bytes_;
  }
  const GlobalAddress next(base.node(), base.offset() + entry_bytes_);
  if (ascending && add_placeholder_locked(next)) {
    stage->push_back(next);
    staged += entry_bytes_;
  }
  account_locked(false, false, bytes, staged);
  return std::nullopt;
}

bool AgentCache::add_placeholder_locked(GlobalAddress base) {
  if (table_.count(Key{base.pack()}) != 0) return false;
  // Evict least recently used entries that no reader holds until the new one fits.
  auto it = lru_.end();
  while (counters_.cache_bytes + entry_bytes_ > options_.cache_bytes && it != lru_.begin()) {
    --it;
    auto found = table_.find(Key{*it});
    if (found == table_.end() || !found->second->ready || found->second.use_count() > 1) continue;
    FARMEM_ASSERT(!found->second->is_static, "agent: a static entry on the dynamic LRU");
    counters_.cache_bytes -= entry_bytes_;
    ++counters_.evictions;
    table_.erase(found);
    it = lru_.erase(it);
  }
  if (counters_.cache_bytes + entry_bytes_ > options_.cache_bytes) return false;
  auto e = std::make_shared<CacheEntry>();
  e->base = base;
  lru_.push_front(base.pack());
  e->lru = lru_.begin();
  counters_.cache_bytes += entry_bytes_;
  table_.emplace(Key{base.pack()}, std::move(e));
  check_dynamic_bytes_locked();
  return true;
}

void AgentCache::apply_write(GlobalAddress addr, const uint8_t* data, uint32_t bytes) {
  std::lock_guard lock(mu_);
  uint64_t pos = addr.offset();
  const uint64_t end = pos + bytes;
  while (pos < end) {
    const GlobalAddress base = entry_base(GlobalAddress(addr.node(), pos));
    const uint64_t stop = std::min(end, base.offset() + entry_bytes_);
    auto it = table_.find(Key{base.pack()});
    if (it != table_.end()) {
      std::shared_ptr<CacheEntry>& e = it->second;
      if (!e->ready) {
        FARMEM_ASSERT(!e->is_static, "agent: a static entry that is a placeholder");
        e->stale = true;
      } else {
        if (e.use_count() > 1) {  // being served: replace by a copy
          auto copy = std::make_shared<CacheEntry>(*e);
          e = std::move(copy);
        }
        FARMEM_ASSERT(e->data.size() == entry_bytes_, "agent: a ready entry of the wrong size");
        std::memcpy(e->data.data() + (pos - base.offset()), data + (pos - addr.offset()),
                    stop - pos);
      }
    }
    pos = stop;
  }
}

void AgentCache::finish_stage(GlobalAddress base, std::vector<uint8_t> data, bool ok) {
  std::lock_guard lock(mu_);
  auto it = table_.find(Key{base.pack()});
  if (it == table_.end() || it->second->ready) return;
  FARMEM_ASSERT(!it->second->is_static, "agent: a static entry that is a placeholder");
  if (!ok || it->second->stale) {
    lru_.erase(it->second->lru);
    counters_.cache_bytes -= entry_bytes_;
    table_.erase(it);
    check_dynamic_bytes_locked();
    return;
  }
  FARMEM_ASSERT(data.size() == entry_bytes_, "agent: a staged entry of the wrong size");
  it->second->data = std::move(data);
  it->second->ready = true;
  ++counters_.staged_entries;
  counters_.staged_bytes += entry_bytes_;
}

Status AgentCache::put_static(GlobalAddress base, std::vector<uint8_t> data) {
  std::lock_guard lock(mu_);
  auto it = table_.find(Key{base.pack()});
  if (it != table_.end() && it->second->is_static) return OkStatus();  // pinned already
  if (counters_.static_bytes + entry_bytes_ > options_.static_bytes) {
    return ResourceExhausted("agent: static cache budget exhausted");
  }
  if (it != table_.end()) {  // a dynamic entry (or placeholder: its staging finds it gone)
    lru_.erase(it->second->lru);
    counters_.cache_bytes -= entry_bytes_;
    table_.erase(it);
    check_dynamic_bytes_locked();
  }
  FARMEM_ASSERT(data.size() == entry_bytes_, "agent: a static entry of the wrong size");
  auto e = std::make_shared<CacheEntry>();
  e->base = base;
  e->data = std::move(data);
  e->ready = true;
  e->is_static = true;
  counters_.static_bytes += entry_bytes_;
  table_.emplace(Key{base.pack()}, std::move(e));
  return OkStatus();
}

void AgentCache::invalidate(GlobalAddress addr, uint64_t bytes) {
  std::lock_guard lock(mu_);
  const uint64_t first = addr.offset() / entry_bytes_ * entry_bytes_;
  for (uint64_t off = first; off < addr.offset() + bytes; off += entry_bytes_) {
    auto it = table_.find(Key{GlobalAddress(addr.node(), off).pack()});
    if (it == table_.end()) continue;
    if (!it->second->ready) {
      it->second->stale = true;
      continue;
    }
    if (it->second->is_static) {
      FARMEM_ASSERT(counters_.static_bytes >= entry_bytes_, "agent: static bytes underflow");
      counters_.static_bytes -= entry_bytes_;
    } else {
      lru_.erase(it->second->lru);
      counters_.cache_bytes -= entry_bytes_;
    }
    table_.erase(it);
  }
  check_dynamic_bytes_locked();
}

void AgentCache::check_dynamic_bytes_locked() const {
  // Every dynamic entry (placeholders included) is on the LRU list and counted once.
  FARMEM_ASSERT(counters_.cache_bytes == lru_.size() * entry_bytes_,
                "agent: dynamic cache bytes differ from its LRU entries");
  FARMEM_ASSERT(counters_.cache_bytes <= options_.cache_bytes, "agent: dynamic cache over budget");
}

void AgentCache::set_bandwidths(double host_bw, double node_bw) {
  std::lock_guard lock(mu_);
  host_bw_ = host_bw;
  node_bw_ = node_bw;
}

bool AgentCache::ghost_hit_locked(uint64_t entry) {
  auto it = ghost_index_.find(entry);
  if (it != ghost_index_.end()) {
    ghost_.splice(ghost_.begin(), ghost_, it->second);
    return true;
  }
  ghost_.push_front(entry);
  ghost_index_[entry] = ghost_.begin();
  const uint64_t capacity = std::max<uint64_t>(1, options_.cache_bytes / entry_bytes_);
  while (ghost_.size() > capacity) {
    ghost_index_.erase(ghost_.back());
    ghost_.pop_back();
  }
  return false;
}

void AgentCache::account_locked(bool hit, bool shadow_hit, uint64_t bytes, uint64_t staged) {
  if (!options_.adaptive) return;
  if (hit || shadow_hit) window_hit_bytes_ += bytes;
  window_staged_bytes_ += staged;
  if (++window_lookups_ >= options_.model_window) decide_locked();
}

void AgentCache::decide_locked() {
  // Staging costs memory-node bandwidth in the background; when the host link is the slower
  // one, the node link has spare capacity and the cost weighs proportionally less.
  double weight = options_.cost_weight;
  if (host_bw_ > 0 && node_bw_ > 0) weight *= std::clamp(host_bw_ / node_bw_, 0.25, 1.0);
  const double benefit = static_cast<double>(window_hit_bytes_);
  const double cost = static_cast<double>(window_staged_bytes_) * weight;
  // A window with neither hits nor staging says nothing: keep the state.
  const bool enable = benefit + cost > 0 ? benefit >= cost : counters_.dynamic_enabled;
  if (enable != counters_.dynamic_enabled) {
    counters_.dynamic_enabled = enable;
    ++counters_.switches;
    ghost_.clear();  // the ghost starts empty, as the cache did
    ghost_index_.clear();
    log::info(
        "farmem-agent: dynamic caching {} ({} lookups: {} bytes {}hit, {} bytes {}staged, "
        "cost weight {:.2f})",
        enable ? "ON" : "OFF", window_lookups_, window_hit_bytes_, enable ? "would have " : "",
        window_staged_bytes_, enable ? "would have " : "", weight);
  }
  window_lookups_ = window_hit_bytes_ = window_staged_bytes_ = 0;
}

CacheCounters AgentCache::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

}  // namespace farmem::agent
