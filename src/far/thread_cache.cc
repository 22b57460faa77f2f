#include "farmem/far/thread_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "farmem/client/batch.h"
#include "farmem/client/cluster.h"
#include "farmem/common/check.h"
#include "farmem/common/clock.h"
#include "farmem/common/huge_page_allocator.h"

namespace farmem::far {

using runtime::Task;

namespace {
constexpr size_t kEntriesPerChunk = 4096;
// Past this many small chunks, entries come in huge-page-sized chunks (THP where the kernel
// allows it): a container's entries are looked up at random, and a TLB miss per lookup would
// cost as much as the lookup.
constexpr size_t kSmallEntryChunks = 8;
constexpr uint32_t kYieldEvery = 256;  // evacuator: objects handled between yields
}  // namespace

ThreadCache::ThreadCache(ObjectManager* manager, client::ThreadClient* client)
    : manager_(manager),
      pool_(manager->pool()),
      client_(client),
      low_(manager->low_segments()),
      high_(manager->high_segments()),
      admit_(manager->admit_segments()),
      max_object_(manager->max_object_bytes()) {
  uint32_t ms = manager->options().space_wait_ms;
  if (ms == 0) ms = client->cluster().config().options.op_timeout_ms;
  space_wait_ns_ = uint64_t{ms} * 1'000'000;
  live_.push_back(0);
}

ThreadCache::~ThreadCache() {
  // Background coroutines (evacuator, prefetches) refer to this cache: let them finish.
  while (evacuating_ || prefetch_inflight_ > 0) client_->scheduler().poll_once();
  for (Segment* s : {&current_, &current_nt_, &compact_}) {
    if (s->base != nullptr) pool_.give(s->base);
  }
  for (Segment& s : sealed_) pool_.give(s.base);
  pool_.release_warm();  // a thread that ends keeps no memory charged for the next one
}

// ---------------------------------------------------------------- entries

Entry* ThreadCache::new_entry() {
  if (free_entries_ == nullptr) {
    size_t n = kEntriesPerChunk;
    if (entry_chunks_.size() < kSmallEntryChunks) {
      entry_chunks_.emplace_back(new Entry[n], [](Entry* p) { delete[] p; });
    } else {
      n = kHugePageBytes / sizeof(Entry);
      void* m = allocate_maybe_huge(kHugePageBytes);
      entry_chunks_.emplace_back(new (m) Entry[n],
                                 [](Entry* p) { free_maybe_huge(p, kHugePageBytes); });
    }
    Entry* chunk = entry_chunks_.back().get();
    for (size_t i = n; i-- > 0;) {
      chunk[i].next_free = free_entries_;
      free_entries_ = &chunk[i];
    }
  }
  Entry* e = free_entries_;
  free_entries_ = e->next_free;
  *e = Entry{};
  e->refs = 1;
  ++live_entries_;
  return e;
}

void ThreadCache::recycle(Entry* e) {
  *e = Entry{};
  e->next_free = free_entries_;
  free_entries_ = e;
  --live_entries_;
}

Entry* ThreadCache::adopt(GlobalAddress remote, uint32_t bytes, bool zero_fill, bool nt) {
  Entry* e = new_entry();
  e->remote = remote;
  e->bytes = bytes;
  e->flags = static_cast<uint8_t>((zero_fill ? kZeroFill : 0) | (nt ? kNonTemporal : 0));
  return e;
}

void ThreadCache::release(Entry* e) {
  FARMEM_ASSERT(e->refs > 0, "far: an entry released with no reference left");
  if (--e->refs > 0) return;
  if (e->flags & (kFetching | kWriteback)) {
    e->flags |= kFreePending;  // the fetch or the write-back finishes the free
    return;
  }
  finish_free(e);
}

void ThreadCache::finish_free(Entry* e) {
  FARMEM_ASSERT(!(e->flags & (kFetching | kWriteback)),
                "far: an entry freed while a fetch or write-back uses it");
  if (e->local != nullptr) kill_slot(header_of(e->local));
  if (e->flags & kOwnsRemote) pending_frees_.push_back(PendingFree{e->remote, e->bytes});
  recycle(e);
}

Task<Status> ThreadCache::reclaim() {
  Status first;
  while (!pending_frees_.empty()) {
    PendingFree f = pending_frees_.back();
    pending_frees_.pop_back();
    Status s = co_await client_->free(f.addr, f.bytes);
    ++stats_.remote_frees;
    if (!s.ok() && first.ok()) first = s;
  }
  co_return first;
}

Task<Result<Entry*>> ThreadCache::allocate(uint32_t bytes, bool nt) {
  if (bytes == 0 || bytes > max_object_) {
    co_return InvalidArgument(fmt::format(
        "far object of {} bytes: sizes are 1..{} (half a segment)", bytes, max_object_));
  }
  if (!pending_frees_.empty()) {
    Status s = co_await reclaim();  // freed far memory is reused by the allocation below
    FARMEM_CO_TRY(s);
  }
  auto remote = co_await client_->allocate(bytes);
  FARMEM_CO_TRY(remote);
  // Small sizes are carved locally: a lost node is only noticed here.
  if (Status st = client_->node_status(remote->node()); !st.ok()) co_return st;
  Entry* e = new_entry();
  e->remote = *remote;
  e->bytes = bytes;
  e->flags = static_cast<uint8_t>(kOwnsRemote | (nt ? kNonTemporal : 0));
  e->flags |= kFetching;  // holds the slot against a release while waiting for space
  auto s = co_await slot(e, bytes, nt, kSlotLive);
  e->flags &= ~kFetching;
  if (!s.ok()) {
    finish_free(e);
    co_return s.status();
  }
  std::memset(*s, 0, bytes);
  set_local(e, *s);
  stamp_live(*s, epoch_);
  e->flags |= kDirty;
  ++stats_.allocations;
  co_return e;
}

// ---------------------------------------------------------------- segments and slots

uint64_t ThreadCache::segments_held() const {
  uint64_t n = sealed_.size();
  for (const Segment* s : {&current_, &current_nt_, &compact_}) n += s->base != nullptr;
  return n;
}

void ThreadCache::seal(Segment* s) {
  if (s->base != nullptr) sealed_.push_back(*s);
  *s = Segment{};
}

uint8_t* ThreadCache::try_slot(Entry* e, uint32_t bytes, bool nt, uint32_t state) {
  Segment* seg = nt ? &current_nt_ : &current_;
  const uint64_t need = slot_bytes(bytes);
  if (seg->base == nullptr || seg->used + need > pool_.segment_bytes()) {
    uint8_t* fresh = pool_.take();
    if (fresh == nullptr) return nullptr;
    seal(seg);
    *seg = Segment{fresh, 0, nt};
    // Short of space because another tenant holds the shared budget: tell it (once a segment).
    if (pool_.free_segments() < low_) pool_.signal_short();
  }
  if (pool_.free_segments() < low_) kick_evacuator();
  auto* h = reinterpret_cast<SlotHeader*>(seg->base + seg->used);
  h->stamp_state = state;
  h->entry = e;
  seg->used += need;
  return reinterpret_cast<uint8_t*>(h + 1);
}

uint64_t ThreadCache::wait_deadline() const { return now_ns() + space_wait_ns_; }

Task<Result<uint8_t*>> ThreadCache::slot(Entry* e, uint32_t bytes, bool nt, uint32_t state) {
  uint8_t* p = try_slot(e, bytes, nt, state);
  if (p != nullptr) co_return p;
  ++stats_.space_waits;
  const uint64_t deadline = wait_deadline();
  for (;;) {
    kick_evacuator();
    co_await client_->scheduler().yield();
    p = try_slot(e, bytes, nt, state);
    if (p != nullptr) co_return p;
    if (now_ns() > deadline) {
      co_return ResourceExhausted(fmt::format(
          "no local cache space for a {}-byte object within {} ms: live scopes pin the whole "
          "budget ({} segments of {} bytes)",
          bytes, space_wait_ns_ / 1'000'000, pool_.total(), pool_.segment_bytes()));
    }
    if (Status st = client_->node_status(e->remote.node()); !st.ok()) co_return st;
  }
}

uint8_t* ThreadCache::compact_slot(Entry* e, uint32_t bytes) {
  const uint64_t need = slot_bytes(bytes);
  if (compact_.base == nullptr || compact_.used + need > pool_.segment_bytes()) {
    // Compaction takes a segment only while enough stay free for the mutators.
    if (pool_.free_segments() <= admit_) return nullptr;
    uint8_t* fresh = pool_.take();
    if (fresh == nullptr) return nullptr;
    seal(&compact_);
    compact_ = Segment{fresh, 0, false};
  }
  auto* h = reinterpret_cast<SlotHeader*>(compact_.base + compact_.used);
  h->stamp_state = kSlotLive;
  h->entry = e;
  compact_.used += need;
  return reinterpret_cast<uint8_t*>(h + 1);
}

// ---------------------------------------------------------------- fetches

Task<Status> ThreadCache::fetch(Entry* e) {
  if (e->flags & kFetching) {  // someone else's fetch: wait for it (the clock read only here)
    const uint64_t deadline = wait_deadline() + space_wait_ns_;
    while (e->flags & kFetching) {
      co_await client_->scheduler().yield();
      if (now_ns() > deadline) co_return TimedOut("far object fetch did not finish");
    }
  }
  if (e->local != nullptr) {
    stamp_live(e->local, epoch_);
    co_return OkStatus();
  }
  const bool nt = e->flags & kNonTemporal;
  FARMEM_ASSERT(!(e->flags & kWriteback), "far: an absent entry is being written back");
  e->flags |= kFetching;
  // A free slot without a coroutine of its own (the common case); else wait for space.
  uint8_t* data = try_slot(e, e->bytes, nt, kSlotFilling);
  if (data == nullptr) {
    auto s = co_await slot(e, e->bytes, nt, kSlotFilling);
    if (!s.ok()) {
      e->flags &= ~kFetching;
      if (e->flags & kFreePending) finish_free(e);
      co_return s.status();
    }
    data = *s;
  }
  Status st;
  if (e->flags & kZeroFill) {
    std::memset(data, 0, e->bytes);
    ++stats_.zero_fills;
  } else {
    const bool sample = (stats_.fetches & 15) == 0;
    const uint64_t t0 = sample ? now_ns() : 0;
    st = co_await client_->read(e->remote, data, e->bytes);
    if (sample && st.ok()) {
      const uint64_t took = now_ns() - t0;
      miss_latency_ns_ = miss_latency_ns_ == 0 ? took : (miss_latency_ns_ * 7 + took) / 8;
    }
    ++stats_.fetches;
    stats_.fetch_bytes += e->bytes;
  }
  e->flags &= ~kFetching;
  SlotHeader* h = header_of(data);
  FARMEM_ASSERT(state_of(h) == kSlotFilling && h->entry == e,
                "far: a fetch's slot is no longer filling for its entry");
  if (!st.ok() || (e->flags & kFreePending)) {
    kill_slot(h);
    if (e->flags & kFreePending) finish_free(e);
    co_return st.ok() ? Cancelled("far object freed while it was fetched") : st;
  }
  if (e->flags & kZeroFill) e->flags = static_cast<uint8_t>((e->flags & ~kZeroFill) | kDirty);
  set_local(e, data);
  stamp_live(data, epoch_);
  co_return OkStatus();
}

bool ThreadCache::prefetch(Entry* e) {
  if (e->local != nullptr || (e->flags & kFetching)) return false;
  if (prefetch_inflight_ >= manager_->options().max_prefetch_inflight) return false;
  if (pool_.free_segments() < low_) return false;  // never evict to prefetch
  ++e->refs;
  ++prefetch_inflight_;
  if (!client_->scheduler().spawn(prefetch_task(e)).ok()) {
    --prefetch_inflight_;
    release(e);
    return false;
  }
  ++stats_.prefetches;
  return true;
}

Task<void> ThreadCache::prefetch_task(Entry* e) {
  if (e->local == nullptr) {
    Status s = co_await fetch(e);
    (void)s;  // a failed prefetch is retried (and reported) by the dereference that needs it
    // Prefetched, not dereferenced: not hot and not pinned by any scope.
    if (e->local != nullptr) stamp_live(e->local, 0);
  }
  --prefetch_inflight_;
  release(e);
}

Task<Status> ThreadCache::flush(Entry* e) {
  if (e->local == nullptr || !(e->flags & kDirty) || (e->flags & kWriteback)) co_return OkStatus();
  e->flags = static_cast<uint8_t>((e->flags & ~kDirty) | kWriteback);
  ++e->refs;
  Status s;
  if (e->flags & kDurable) {
    client::Batch batch(*client_);
    s = batch.write(e->remote, e->local, e->bytes);
    if (s.ok()) s = batch.persist(e->remote, e->bytes);
    Status w = co_await batch.wait();
    if (s.ok()) s = w;
  } else {
    s = co_await client_->write(e->remote, e->local, e->bytes);
  }
  e->flags &= ~kWriteback;
  if (!s.ok()) e->flags |= kDirty;
  ++stats_.writebacks;
  stats_.writeback_bytes += e->bytes;
  release(e);
  co_return s;
}

// ---------------------------------------------------------------- scopes

uint64_t ThreadCache::oldest_live_epoch() const {
  for (size_t i = 0; i < live_.size(); ++i) {
    if (live_[i] != 0) return live_base_ + i;
  }
  return UINT64_MAX;
}

Task<Status> ThreadCache::wait_admission() {
  ++stats_.space_waits;
  const uint64_t deadline = wait_deadline();
  while (!admits()) {
    kick_evacuator();
    co_await client_->scheduler().yield();
    if (now_ns() > deadline) {
      co_return ResourceExhausted(fmt::format(
          "no local cache space for a new scope within {} ms ({} live scopes pin the budget)",
          space_wait_ns_ / 1'000'000, live_scopes_));
    }
  }
  co_return OkStatus();
}

// ---------------------------------------------------------------- evacuation

void ThreadCache::kick_evacuator() {
  if (evacuating_ || sealed_.empty()) return;
  evacuating_ = true;
  if (!client_->scheduler().spawn(evacuator()).ok()) evacuating_ = false;
}

bool ThreadCache::relieve_pressure() {
  bool pressured = false;
  if (LocalBudget::Tenant* t = pool_.tenant(); t != nullptr) {
    const uint64_t p = t->others_pressure();
    pressured = p != pressure_seen_;
    pressure_seen_ = p;
  }
  if (pressured) pool_.release_warm();
  if (pressured || pool_.free_segments() < low_) kick_evacuator();
  return evacuating_;
}

Task<void> ThreadCache::evacuator() {
  ++stats_.evacuation_rounds;
  const uint64_t hot_since = last_round_epoch_;
  ++epoch_;  // objects dereferenced before now are movable once their scopes have ended
  while (live_base_ + live_.size() <= epoch_) live_.push_back(0);
  last_round_epoch_ = epoch_;
  // Only the segments sealed before this round: what it compacts goes to the back and waits
  // for the next round (hot objects would otherwise move from segment to segment forever).
  size_t to_visit = sealed_.size();
  while (pool_.free_segments() < high_ && to_visit > 0) {
    // Read-once (NT) segments go first.
    size_t pick = 0;
    for (size_t i = 0; i < to_visit; ++i) {
      if (sealed_[i].nt) {
        pick = i;
        break;
      }
    }
    Segment seg = sealed_[pick];
    sealed_.erase(sealed_.begin() + static_cast<std::ptrdiff_t>(pick));
    --to_visit;
    SegmentOutcome out = co_await evacuate_segment(seg, hot_since);
    if (out == SegmentOutcome::kFreed) {
      pool_.give(seg.base);
      ++stats_.segments_freed;
    } else {
      sealed_.push_back(seg);
    }
  }
  // What compaction filled is now an ordinary segment (oldest-first order kept).
  if (compact_.base != nullptr && compact_.used > 0) seal(&compact_);
  evacuating_ = false;
}

Task<Status> ThreadCache::write_back(std::vector<Entry*>* entries) {
  Status first;
  // A durable entry's write and its persist take two of a batch's operations.
  const bool durable = std::any_of(entries->begin(), entries->end(),
                                   [](const Entry* e) { return (e->flags & kDurable) != 0; });
  const size_t step = durable ? client::Batch::kMaxOps / 2 : client::Batch::kMaxOps;
  for (size_t i = 0; i < entries->size(); i += step) {
    const size_t end = std::min(entries->size(), i + step);
    Status s;
    {
      client::Batch batch(*client_);
      for (size_t j = i; j < end && s.ok(); ++j) {
        Entry* e = (*entries)[j];
        s = batch.write(e->remote, e->local, e->bytes);
        if (s.ok() && (e->flags & kDurable)) s = batch.persist(e->remote, e->bytes);
      }
      Status w = co_await batch.wait();
      if (s.ok()) s = w;
    }
    for (size_t j = i; j < end; ++j) {
      Entry* e = (*entries)[j];
      FARMEM_ASSERT(e->flags & kWriteback, "far: an entry written back without kWriteback");
      e->flags &= ~kWriteback;
      if (!s.ok()) e->flags |= kDirty;  // not written: keep it (and its slot)
      ++stats_.writebacks;
      stats_.writeback_bytes += e->bytes;
    }
    if (!s.ok() && first.ok()) first = s;
  }
  co_return first;
}

Task<ThreadCache::SegmentOutcome> ThreadCache::evacuate_segment(Segment seg, uint64_t hot_since) {
  const uint64_t seg_bytes = seg.used;
  // Pass 1: write back the dirty objects that will be dropped (cold, or no room to compact).
  std::vector<Entry*> dirty;
  uint64_t oldest = oldest_live_epoch();
  const bool roomy = pool_.free_segments() > admit_;
  for (uint64_t off = 0; off < seg_bytes;) {
    auto* h = reinterpret_cast<SlotHeader*>(seg.base + off);
    off += slot_size(h);
    if (state_of(h) != kSlotLive) continue;
    Entry* e = h->entry;
    if (pinned(e, oldest) || !(e->flags & kDirty) || (e->flags & kWriteback)) continue;
    const bool hot = stamp_of(h) >= hot_since && !(e->flags & kNonTemporal);
    if (hot && roomy) continue;  // will be compacted, dirty and all
    e->flags = static_cast<uint8_t>((e->flags & ~kDirty) | kWriteback);
    dirty.push_back(e);
  }
  if (!dirty.empty()) {
    Status s = co_await write_back(&dirty);
    if (!s.ok() && evacuation_error_.ok()) evacuation_error_ = s;
    for (Entry* e : dirty) {
      if ((e->flags & kFreePending) && e->refs == 0) finish_free(e);
    }
  }
  // Pass 2, without suspending: move hot objects, drop clean cold ones.
  oldest = oldest_live_epoch();
  bool busy = false;
  uint32_t handled = 0;
  for (uint64_t off = 0; off < seg_bytes;) {
    auto* h = reinterpret_cast<SlotHeader*>(seg.base + off);
    off += slot_size(h);
    if (state_of(h) == kSlotDead) continue;
    Entry* e = h->entry;
    if (state_of(h) == kSlotFilling || pinned(e, oldest) || (e->flags & kWriteback)) {
      busy = true;
      continue;
    }
    ++handled;
    uint8_t* data = reinterpret_cast<uint8_t*>(h + 1);
    FARMEM_ASSERT(e->local == data, "far: a live slot's entry points elsewhere");
    const bool hot = stamp_of(h) >= hot_since && !(e->flags & kNonTemporal);
    if (hot) {
      if (uint8_t* to = compact_slot(e, e->bytes)) {
        std::memcpy(to, data, e->bytes);
        header_of(to)->stamp_state = h->stamp_state;  // its stamp moves with it
        set_local(e, to);
        kill_slot(h);
        ++stats_.compacted;
        continue;
      }
    }
    if (e->flags & kDirty) {  // written during the write-back, or the write failed
      busy = true;
      continue;
    }
    set_local(e, nullptr);
    kill_slot(h);
    ++stats_.evicted;
  }
  if (handled >= kYieldEvery) co_await client_->scheduler().yield();
  co_return busy ? SegmentOutcome::kBusy : SegmentOutcome::kFreed;
}

Task<Status> ThreadCache::flush_all() {
  std::vector<Entry*> dirty;
  auto collect = [&](const Segment& seg) {
    for (uint64_t off = 0; off < seg.used;) {
      auto* h = reinterpret_cast<SlotHeader*>(seg.base + off);
      off += slot_size(h);
      if (state_of(h) != kSlotLive) continue;
      Entry* e = h->entry;
      if (!(e->flags & kDirty) || (e->flags & kWriteback)) continue;
      e->flags = static_cast<uint8_t>((e->flags & ~kDirty) | kWriteback);
      ++e->refs;
      dirty.push_back(e);
    }
  };
  for (const Segment& s : sealed_) collect(s);
  for (const Segment* s : {&current_, &current_nt_, &compact_}) {
    if (s->base != nullptr) collect(*s);
  }
  Status s = co_await write_back(&dirty);
  for (Entry* e : dirty) release(e);
  co_return s;
}

Task<Status> ThreadCache::flush_entries(std::vector<Entry*> entries) {
  std::vector<Entry*> dirty;
  for (Entry* e : entries) {
    if (e->local == nullptr || !(e->flags & kDirty) || (e->flags & kWriteback)) continue;
    e->flags = static_cast<uint8_t>((e->flags & ~kDirty) | kWriteback);
    ++e->refs;
    dirty.push_back(e);
  }
  Status s = co_await write_back(&dirty);
  for (Entry* e : dirty) release(e);
  co_return s;
}

Task<Status> ThreadCache::invalidate(Entry* e) {
  if (e->local == nullptr) co_return OkStatus();
  if (e->flags & kDirty) {
    Status s = co_await flush(e);
    FARMEM_CO_TRY(s);
  }
  if (e->local == nullptr || (e->flags & (kDirty | kWriteback | kFetching))) co_return OkStatus();
  if (pinned(e, oldest_live_epoch())) {
    co_return Internal("a far object rewritten remotely is still referenced by a live scope");
  }
  kill_slot(header_of(e->local));
  set_local(e, nullptr);
  co_return OkStatus();
}

Task<Result<uint64_t>> ThreadCache::evict_all() {
  while (evacuating_) co_await client_->scheduler().yield();
  Status s = co_await flush_all();
  FARMEM_CO_TRY(s);
  evacuating_ = true;  // keeps the background evacuator out while segments are rearranged
  const uint64_t oldest = oldest_live_epoch();
  uint64_t stay = 0;
  std::deque<Segment> keep;
  auto drop = [&](const Segment& seg) {
    bool busy = false;
    for (uint64_t off = 0; off < seg.used;) {
      auto* h = reinterpret_cast<SlotHeader*>(seg.base + off);
      off += slot_size(h);
      if (state_of(h) == kSlotDead) continue;
      Entry* e = h->entry;
      if (state_of(h) == kSlotFilling || pinned(e, oldest) || (e->flags & (kDirty | kWriteback))) {
        busy = true;
        ++stay;
        continue;
      }
      set_local(e, nullptr);
      kill_slot(h);
      ++stats_.evicted;
    }
    return busy;
  };
  seal(&current_);
  seal(&current_nt_);
  seal(&compact_);
  for (Segment& seg : sealed_) {
    if (drop(seg)) {
      keep.push_back(seg);
    } else {
      pool_.give(seg.base);
      ++stats_.segments_freed;
    }
  }
  sealed_.swap(keep);
  evacuating_ = false;
  co_return stay;
}

}  // namespace farmem::far
