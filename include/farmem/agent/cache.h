// AgentCache: the agent's cache table (static and dynamic entries), its recent-access ring and
// the adaptive model that switches dynamic caching.
//
// Entries are keyed by (memory node, entry-aligned offset) so every host process reading the
// same remote memory shares them. An entry is reference counted (shared_ptr): a reader takes a
// reference under the lock and serves from it without the lock; eviction only takes entries
// nobody else holds, and a write to a held entry replaces it by a copy (copy-on-write), so a
// reply being sent never sees a torn page. Dynamic entries are staged by background workers:
// begin_stage() inserts a placeholder, a write that overlaps a placeholder marks it stale and
// finish_stage() then drops it, so a staged entry never holds data older than a write the agent
// acked. Static entries are never evicted.
// Thread safety: every method may be called from any thread (one mutex).
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "farmem/agent/options.h"
#include "farmem/client/global_address.h"

namespace farmem::agent {

struct CacheEntry {
  GlobalAddress base;         // entry-aligned
  std::vector<uint8_t> data;  // entry_bytes once ready
  bool ready = false;         // false: a placeholder being staged
  bool stale = false;         // a write overlapped the placeholder
  bool is_static = false;
  std::list<uint64_t>::iterator lru;  // dynamic entries only
};

// A reference to cached bytes: keeps the entry alive while the reply is sent.
struct CacheHit {
  std::shared_ptr<const CacheEntry> entry;
  uint64_t offset = 0;  // into entry->data
  bool is_static = false;
};

struct CacheCounters {
  uint64_t static_hits = 0, dynamic_hits = 0, dynamic_misses = 0;
  uint64_t staged_entries = 0, staged_bytes = 0, evictions = 0;
  uint64_t cache_bytes = 0, static_bytes = 0, switches = 0;
  bool dynamic_enabled = true;
};

class AgentCache {
 public:
  explicit AgentCache(const AgentOptions& options);

  // The entry-aligned base of addr.
  GlobalAddress entry_base(GlobalAddress addr) const {
    return GlobalAddress(addr.node(), addr.offset() / entry_bytes_ * entry_bytes_);
  }
  // Looks up [addr, addr + bytes) (within one entry) and records the access in the ring. On a
  // dynamic miss, *stage receives the entries worth staging (the one missed, plus the next one
  // when the ring shows an ascending pattern), each already inserted as a placeholder.
  // With use_dynamic false only a static entry can serve it (no dynamic lookup, nothing recorded
  // or staged: wire::kReadNoDynamic).
  std::optional<CacheHit> lookup(GlobalAddress addr, uint32_t bytes,
                                 std::vector<GlobalAddress>* stage, bool use_dynamic = true);
  // Applies a write to every entry it overlaps (copy-on-write for referenced entries) and
  // marks overlapping placeholders stale.
  void apply_write(GlobalAddress addr, const uint8_t* data, uint32_t bytes);
  // Completes a placeholder: installs `data` unless it went stale (or ok is false).
  void finish_stage(GlobalAddress base, std::vector<uint8_t> data, bool ok);
  // Installs one static entry (entry-aligned base). kResourceExhausted past the static budget.
  Status put_static(GlobalAddress base, std::vector<uint8_t> data);
  // Drops every entry (static or dynamic) overlapping [addr, addr + bytes) that no reader holds
  // a reference to (held ones leave the table and die with their last reference); placeholders
  // are marked stale. For memory changed behind the agent's back (freed, rewritten directly).
  void invalidate(GlobalAddress addr, uint64_t bytes);
  // Bandwidth figures for the model (bytes per second, 0 = unknown).
  void set_bandwidths(double host_bw, double node_bw);
  CacheCounters counters() const;

 private:
  struct Key {
    uint64_t packed;
    bool operator==(const Key& o) const { return packed == o.packed; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.packed); }
  };
  using Table = std::unordered_map<Key, std::shared_ptr<CacheEntry>, KeyHash>;

  // Records a page id; returns whether the ring held a page of the previous entry (ascending).
  bool record_access(GlobalAddress addr);
  bool ring_has_entry(uint64_t entry_packed) const;
  // Inserts a placeholder for `base` if absent and the budget allows (evicting LRU entries no
  // one references). Requires mu_.
  bool add_placeholder_locked(GlobalAddress base);
  // While dynamic caching is off: whether a cache of the same budget would hold `entry` (a
  // ghost LRU of entry keys), recording the access. Requires mu_.
  bool ghost_hit_locked(uint64_t entry);
  // One lookup's outcome for the adaptive model. Requires mu_.
  void account_locked(bool hit, bool shadow_hit, uint64_t bytes, uint64_t staged);
  void decide_locked();
  // Asserts that cache_bytes counts the dynamic entries (the LRU) within the budget. Requires
  // mu_.
  void check_dynamic_bytes_locked() const;

  const AgentOptions options_;
  const uint64_t entry_bytes_;
  mutable std::mutex mu_;
  Table table_;                       // (mu_) static and dynamic entries
  std::list<uint64_t> lru_;           // (mu_) dynamic entry keys, most recent at the front
  std::array<uint64_t, 128> ring_{};  // (mu_) the last 128 page ids (packed page addresses)
  uint32_t ring_next_ = 0;
  uint32_t ring_size_ = 0;
  CacheCounters counters_;     // (mu_)
  std::list<uint64_t> ghost_;  // (mu_) entry keys a cache of this budget would hold, MRU first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> ghost_index_;  // (mu_)
  // The current model window (mu_).
  uint64_t window_lookups_ = 0, window_hit_bytes_ = 0, window_staged_bytes_ = 0;
  double host_bw_ = 0, node_bw_ = 0;
};

}  // namespace farmem::agent
