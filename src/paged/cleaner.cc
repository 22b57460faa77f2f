// The proactive cleaner on the pager thread: when the buffer passes writeback_start x budget
// (or another tenant of a shared budget signalled pressure) it evicts in batches down to
// writeback_stop x budget; and flush's write-back of a region's dirty pages, which stay mapped.
#include "farmem/common/check.h"
#include "pager.h"

namespace farmem::paged {

void PageManager::Impl::maybe_start_cleaner() {
  if (cleaner_running) return;
  bool pressured = false;
  if (tenant != nullptr) {
    const uint64_t p = tenant->others_pressure();
    pressured = p != pressure_seen;
    pressure_seen = p;
    // Nothing resident: nothing to trim (other tenants fill the budget on their own).
    if (resident_bytes.load(std::memory_order_relaxed) == 0) return;
  }
  const uint64_t budget = budget_bytes.load(std::memory_order_relaxed);
  if (!pressured &&
      static_cast<double>(used_bytes()) <= options.writeback_start * static_cast<double>(budget)) {
    return;
  }
  // Trimming because the shared budget is nearly full while other tenants hold part of it:
  // they are asked to give back too (far's evacuators), not only this buffer.
  if (!pressured && tenant != nullptr &&
      tenant->budget().used_bytes() > resident_bytes.load(std::memory_order_relaxed)) {
    tenant->signal_pressure();
  }
  cleaner_running = true;
  if (!scheduler->spawn(cleaner(this)).ok()) cleaner_running = false;
}

// Proactive eviction: runs while the buffer (with a shared budget: every tenant's memory) is
// above writeback_stop x budget, in batches.
runtime::Task<void> cleaner(PageManager::Impl* m) {
  m->cleaner_runs.fetch_add(1, std::memory_order_relaxed);
  const double stop = m->options.writeback_stop;
  for (;;) {
    const uint64_t budget = m->budget_bytes.load(std::memory_order_relaxed);
    uint64_t resident = m->used_bytes();
    std::vector<PageManager::Impl::ClockEntry> victims;
    RegionState* r = nullptr;
    uint64_t page = 0;
    while (victims.size() < PageManager::Impl::kCleanerBatch &&
           static_cast<double>(resident) > stop * static_cast<double>(budget) &&
           m->pick_victim(&r, &page)) {
      victims.push_back(PageManager::Impl::ClockEntry{r, page});
      resident -= r->region->page_bytes();
    }
    if (victims.empty()) break;
    co_await evict_batch(m, std::move(victims));
    co_await m->scheduler->yield();  // faults that arrived meanwhile go first
  }
  m->cleaner_running = false;
}

// Writes back every dirty resident page of `r` (kMaxPagesPerCall per call); they stay mapped.
runtime::Task<Status> clean_pages(PageManager::Impl* m, RegionState* r) {
  const uint64_t pb = r->region->page_bytes();
  ++r->inflight;
  Status result;
  uint64_t next = 0;
  while (next < r->pages.size() && result.ok()) {
    std::vector<PageIo> ios;
    for (; next < r->pages.size() && ios.size() < PageSource::kMaxPagesPerCall; ++next) {
      PageMeta& meta = r->pages[next];
      if (meta.state != PageState::kResident || !meta.dirty) continue;
      meta.state = PageState::kCleaning;
      m->protect(r, next, true);
      ios.push_back(PageIo{next, m->page_addr(r, next)});
    }
    if (ios.empty()) break;
    Status st = co_await r->source->write_back(r->region->layout(), ios, m->deadline());
    for (const PageIo& io : ios) {
      PageMeta& meta = r->pages[io.page];
      FARMEM_ASSERT(meta.state == PageState::kCleaning,
                    "paged: a page being cleaned changed state");
      meta.state = PageState::kResident;
      if (st.ok()) {
        meta.dirty = false;
        meta.remote_valid = true;
        r->counters.bytes_written_back.fetch_add(pb, std::memory_order_relaxed);
      }
      if (meta.wp_pending || !st.ok()) {
        meta.wp_pending = false;
        meta.dirty = true;
        m->protect(r, io.page, false);  // wakes a writer that waited
      }
    }
    result = st;
  }
  FARMEM_ASSERT(r->inflight > 0, "paged: region in-flight count underflow");
  --r->inflight;
  co_return result;
}

}  // namespace farmem::paged
