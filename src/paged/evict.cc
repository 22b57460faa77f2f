// Eviction on the pager thread: CLOCK picks victims among the resident pages; a batch of them
// is written back (the dirty ones) and dropped; a fault short of room evicts for it
// (docs/modules/paged.md "Eviction").
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "farmem/common/check.h"
#include "farmem/common/clock.h"
#include "pager.h"

namespace farmem::paged {

// CLOCK over the resident pages: a page with its bit set gets a second chance; pinned pages
// and pages in flight are skipped (and entries of pages no longer resident dropped).
bool PageManager::Impl::pick_victim(RegionState** out, uint64_t* out_page) {
  for (size_t scanned = 0, limit = 2 * clock.size() + 1; scanned < limit && !clock.empty();
       ++scanned) {
    ClockEntry e = clock.front();
    clock.pop_front();
    PageMeta& m = e.region->pages[e.page];
    if (m.state != PageState::kResident || e.region->closing) {
      if (m.state == PageState::kMissing || e.region->closing) m.in_clock = false;
      if (m.in_clock) clock.push_back(e);  // cleaning: still a candidate later
      continue;
    }
    if (m.pinned || m.referenced) {
      m.referenced = false;
      clock.push_back(e);
      continue;
    }
    m.in_clock = false;
    m.state = PageState::kEvicting;
    *out = e.region;
    *out_page = e.page;
    return true;
  }
  return false;
}

// Evicts CLOCK victims until `bytes` more fit in the budget, then counts them as resident.
// When nothing can be evicted now (every resident page pinned or in flight): without a shared
// budget they are counted anyway (the budget is then exceeded by pages in flight); with one, a
// prefetch (!must) gets false, and a fault signals pressure and waits for the other tenants to
// give memory back, up to the op deadline, then charges past the limit (the budget's overdraft)
// rather than hang the faulting thread.
runtime::Task<bool> reserve_room(PageManager::Impl* m, uint64_t bytes, bool must) {
  bool waited = false;
  uint64_t deadline = 0;
  for (;;) {
    if (m->try_reserve(bytes)) co_return true;
    if (m->tenant != nullptr) m->tenant->signal_pressure();
    // A few victims at once: their drops and write-backs share system calls and messages.
    std::vector<PageManager::Impl::ClockEntry> victims;
    RegionState* r = nullptr;
    uint64_t page = 0;
    while (victims.size() < PageManager::Impl::kFaultEvictBatch && m->pick_victim(&r, &page)) {
      victims.push_back(PageManager::Impl::ClockEntry{r, page});
    }
    if (!victims.empty()) {
      if (!waited) m->fault_waits.fetch_add(1, std::memory_order_relaxed);
      waited = true;
      co_await evict_batch(m, std::move(victims));
      continue;
    }
    if (m->tenant == nullptr) break;
    if (!must) co_return false;
    if (deadline == 0) deadline = m->deadline();
    if (now_ns() > deadline) break;
    co_await m->scheduler->sleep_for_ns(PageManager::Impl::kSharedWaitNs);
  }
  m->force_reserve(bytes);
  co_return true;
}

namespace {

using ClockEntry = PageManager::Impl::ClockEntry;

// Write-protects the dirty ones of a region's victims (writers now wait: their fault is
// answered after the drop) and returns them, to be written back.
std::vector<PageIo> protect_dirty(PageManager::Impl* m, RegionState* r,
                                  std::span<const ClockEntry> victims) {
  std::vector<PageIo> dirty;
  for (const ClockEntry& v : victims) {
    FARMEM_ASSERT(r->pages[v.page].state == PageState::kEvicting,
                  "paged: a victim is not evicting (a page in flight chosen by CLOCK?)");
    if (!r->pages[v.page].dirty) continue;
    m->protect(r, v.page, true);
    dirty.push_back(PageIo{v.page, m->page_addr(r, v.page)});
  }
  return dirty;
}

// Unmaps a region's victims (sorted by page): one MADV_DONTNEED per run of adjacent pages.
void drop_victims(PageManager::Impl* m, RegionState* r, std::span<const ClockEntry> victims) {
  const uint64_t pb = r->region->page_bytes();
  for (size_t i = 0; i < victims.size();) {
    size_t j = i + 1;
    while (j < victims.size() && victims[j].page == victims[j - 1].page + 1) ++j;
    const uint64_t first = victims[i].page;
    if (madvise(m->page_addr(r, first), (j - i) * pb, MADV_DONTNEED) != 0) {
      m->fatal(r, first, "MADV_DONTNEED failed", Internal(std::strerror(errno)));
    }
    i = j;
  }
}

// The dropped victims are missing now; their room is given back and the threads that faulted
// on one meanwhile are woken (they fault again, as missing).
void finish_evictions(PageManager::Impl* m, RegionState* r, std::span<const ClockEntry> victims) {
  const uint64_t pb = r->region->page_bytes();
  for (const ClockEntry& v : victims) {
    PageMeta& meta = r->pages[v.page];
    meta.state = PageState::kMissing;
    meta.prefetched = false;
    meta.wp_pending = false;
    m->unreserve(pb);
    const uint64_t resident = r->counters.resident_pages.fetch_sub(1, std::memory_order_relaxed);
    FARMEM_ASSERT(resident > 0, "paged: a region's resident page count underflow");
    r->counters.evictions.fetch_add(1, std::memory_order_relaxed);
    if (meta.waiters) {
      meta.waiters = false;
      m->wake(r, v.page);
    }
  }
}

}  // namespace

// Precondition: every victim is kEvicting (pick_victim). Dirty victims are write-protected and
// written back (one PageSource call per region and 64 pages), then every victim is dropped
// (one MADV_DONTNEED per run of adjacent pages) and the threads that faulted on one meanwhile
// are woken (they fault again, as missing).
runtime::Task<void> evict_batch(PageManager::Impl* m, std::vector<ClockEntry> victims) {
  std::sort(victims.begin(), victims.end(), [](const auto& a, const auto& b) {
    return a.region != b.region ? a.region < b.region : a.page < b.page;
  });
  size_t begin = 0;
  while (begin < victims.size()) {
    RegionState* r = victims[begin].region;
    size_t end = begin;
    while (end < victims.size() && victims[end].region == r) ++end;
    const std::span<const ClockEntry> run(victims.data() + begin, end - begin);
    ++r->inflight;
    const uint64_t pb = r->region->page_bytes();
    const std::vector<PageIo> dirty = protect_dirty(m, r, run);
    for (size_t k = 0; k < dirty.size(); k += PageSource::kMaxPagesPerCall) {
      const size_t count = std::min(dirty.size() - k, PageSource::kMaxPagesPerCall);
      std::span<const PageIo> part(dirty.data() + k, count);
      Status st = co_await r->source->write_back(r->region->layout(), part, m->deadline());
      if (!st.ok()) m->fatal(r, part[0].page, "cannot write back an evicted page", st);
      for (const PageIo& io : part) {
        r->pages[io.page].dirty = false;
        r->pages[io.page].remote_valid = true;
      }
      r->counters.bytes_written_back.fetch_add(count * pb, std::memory_order_relaxed);
    }
    drop_victims(m, r, run);
    finish_evictions(m, r, run);
    FARMEM_ASSERT(r->inflight > 0, "paged: region in-flight count underflow");
    --r->inflight;
    begin = end;
  }
}

}  // namespace farmem::paged
