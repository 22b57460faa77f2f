// Faults on the pager thread: a missing page starts a fetch (with read-ahead under sequential
// advice), a write to a write-protected page marks it dirty; fetch groups fetch pages from
// their source and install them (docs/modules/paged.md "Fault path").
#include <linux/userfaultfd.h>

#include <algorithm>

#include "farmem/common/check.h"
#include "pager.h"

namespace farmem::paged {

void PageManager::Impl::on_missing(RegionState* r, uint64_t page, bool write) {
  PageMeta& m = r->pages[page];
  switch (m.state) {
    case PageState::kFetching:
      if (m.prefetched) {
        r->counters.prefetch_hits.fetch_add(1, std::memory_order_relaxed);
        // The thread caught up with the read-ahead: start the next window now.
        if (m.advice == Advice::kSequential && r->seq_next > page &&
            r->seq_next - page <= r->window) {
          read_ahead(r, r->seq_next);
        }
      }
      return;  // the install wakes the thread
    case PageState::kResident:
    case PageState::kCleaning:
      wake(r, page);  // an older event: the page is mapped now
      return;
    case PageState::kEvicting:
      m.waiters = true;  // the eviction wakes it; it faults again
      return;
    case PageState::kMissing:
      break;
  }
  if (r->closing) return;
  if (inflight_fetches >= options.max_inflight) {
    pending.push_back(PendingFault{r, page, write});
    return;
  }
  m.state = PageState::kFetching;
  m.prefetched = false;
  ++r->inflight;
  ++inflight_fetches;
  FARMEM_ASSERT(inflight_fetches <= options.max_inflight, "paged: fetches past max_inflight");
  Status st = scheduler->spawn(fault_task(this, r, {page}, true, write));
  if (!st.ok()) fatal(r, page, "cannot start a fetch", st);
  if (m.advice != Advice::kSequential) return;
  // A fault right after the previous window means a stream: the window doubles (up to 64
  // pages). A fault whose previous page is mapped or in flight starts a stream at
  // readahead_pages. Any other fault (the first of a stream, or a random access into a
  // sequential section, e.g. a sparse BFS round reading one vertex's neighbours) reads no
  // more than its page: a read-ahead there would mostly fetch what is never read.
  const bool continues = page + 1 == r->seq_next || page == r->seq_next;
  if (!continues && (page == 0 || r->pages[page - 1].state == PageState::kMissing)) return;
  const uint32_t base = std::max<uint32_t>(r->readahead, 1);
  r->window = continues ? std::min<uint32_t>(2 * r->window, PageSource::kMaxPagesPerCall) : base;
  r->window = std::max(r->window, base);
  read_ahead(r, page + 1);
}

// Fetches the missing pages of [from, from + window) ahead of the faults, in groups of
// kReadAheadGroup (so the first ones are installed early), while fetch slots are free.
void PageManager::Impl::read_ahead(RegionState* r, uint64_t from) {
  const uint64_t end = std::min<uint64_t>(r->pages.size(), from + r->window);
  r->seq_next = end;
  uint64_t p = from;
  while (p < end && inflight_fetches < options.max_inflight) {
    std::vector<uint64_t> group;
    for (; p < end && group.size() < kReadAheadGroup; ++p) {
      PageMeta& pm = r->pages[p];
      if (pm.state != PageState::kMissing || pm.advice != Advice::kSequential) continue;
      pm.state = PageState::kFetching;
      pm.prefetched = true;
      group.push_back(p);
    }
    if (group.empty()) continue;
    ++r->inflight;
    ++inflight_fetches;
    FARMEM_ASSERT(inflight_fetches <= options.max_inflight, "paged: fetches past max_inflight");
    const uint64_t first = group[0];
    Status st = scheduler->spawn(fault_task(this, r, std::move(group), false, false));
    if (!st.ok()) fatal(r, first, "cannot start a read-ahead", st);
  }
}

void PageManager::Impl::on_write_protect(RegionState* r, uint64_t page) {
  PageMeta& m = r->pages[page];
  switch (m.state) {
    case PageState::kResident:
      if (!m.dirty) {
        m.dirty = true;
        r->counters.wp_faults.fetch_add(1, std::memory_order_relaxed);
      }
      protect(r, page, false);  // also wakes the writer
      return;
    case PageState::kCleaning:
      m.wp_pending = true;  // finished when the write-back is
      return;
    case PageState::kMissing:
      wake(r, page);  // evicted meanwhile: the writer faults again (missing)
      return;
    case PageState::kEvicting:
      m.waiters = true;  // the eviction wakes it
      return;
    case PageState::kFetching:
      // An installer mapped it write-protected before the pager saw the install finish (the
      // install woke nobody then): fetch_group finishes this fault when it does.
      m.wp_pending = true;
      return;
  }
}

void PageManager::Impl::start_pending() {
  while (!pending.empty() && inflight_fetches < options.max_inflight) {
    PendingFault f = pending.front();
    pending.pop_front();
    on_missing(f.region, f.page, f.write);
  }
}

namespace {

// A fetch group's pages and where the bytes each one is installed from come from.
struct GroupSources {
  std::vector<PageIo> ios;     // every page of the group, with its install source
  std::vector<PageIo> remote;  // those the region's source fetches (into staging buffers)
  std::vector<bool> staged;    // parallel to ios: the buffer is a staging buffer
};

// A page of a group that found no room: back to missing (a thread waiting for it faults again).
void drop_from_group(PageManager::Impl* m, RegionState* r, uint64_t p) {
  PageMeta& meta = r->pages[p];
  FARMEM_ASSERT(meta.state == PageState::kFetching, "paged: a grouped page is not fetching");
  meta.state = PageState::kMissing;
  meta.prefetched = false;
  m->wake(r, p);
}

// Where each page's bytes come from: the zero page when far memory never held it, the
// source's own memory when it has the page in place, else a staging buffer it fetches into.
GroupSources plan_sources(PageManager::Impl* m, RegionState* r, const std::vector<uint64_t>& kept) {
  const uint64_t pb = r->region->page_bytes();
  const RemoteLayout& layout = r->region->layout();
  GroupSources g;
  for (uint64_t p : kept) {
    const void* in_place = nullptr;
    if (!r->pages[p].remote_valid) {
      g.ios.push_back(PageIo{p, m->staging.zero_page(pb)});
    } else if ((in_place = r->source->page_in_place(layout, p)) != nullptr) {
      g.ios.push_back(PageIo{p, const_cast<void*>(in_place)});  // only read (UFFDIO_COPY source)
    } else {
      g.ios.push_back(PageIo{p, m->staging.get(pb)});
      g.remote.push_back(g.ios.back());
    }
    g.staged.push_back(!g.remote.empty() && g.remote.back().page == p);
  }
  return g;
}

// The group was fetched: counts its pages (before the install: the install wakes the faulting
// thread, which may read the counters), sets their bits, enters them into CLOCK, and returns
// the installs to make. `faulting` is the faulting page (when `fault`); it is mapped writable
// after a write fault.
std::vector<InstallIo> admit_group(PageManager::Impl* m, RegionState* r, const GroupSources& g,
                                   bool fault, uint64_t faulting, bool write_fault) {
  const uint64_t pb = r->region->page_bytes();
  std::vector<InstallIo> installs;
  for (const PageIo& io : g.ios) {
    const uint64_t p = io.page;
    PageMeta& meta = r->pages[p];
    const bool is_fault = fault && p == faulting;
    const bool writable = is_fault && write_fault;
    r->counters.resident_pages.fetch_add(1, std::memory_order_relaxed);
    if (meta.remote_valid) {
      r->counters.bytes_fetched.fetch_add(pb, std::memory_order_relaxed);
    } else if (is_fault) {
      r->counters.zero_fills.fetch_add(1, std::memory_order_relaxed);
    }
    if (is_fault) {
      r->counters.faults.fetch_add(1, std::memory_order_relaxed);
    } else {
      r->counters.prefetched.fetch_add(1, std::memory_order_relaxed);
    }
    meta.dirty = writable;
    meta.referenced = true;
    if (!meta.in_clock) {
      meta.in_clock = true;
      m->clock.push_back(PageManager::Impl::ClockEntry{r, p});
    }
    installs.push_back(InstallIo{p, io.buf, writable});
  }
  return installs;
}

// The group's fetch failed (a prefetch): its pages go back to missing, their room is given
// back and threads waiting for them fault again.
void abandon_group(PageManager::Impl* m, RegionState* r, const GroupSources& g) {
  const uint64_t pb = r->region->page_bytes();
  for (const PageIo& io : g.ios) {
    PageMeta& meta = r->pages[io.page];
    FARMEM_ASSERT(meta.state == PageState::kFetching, "paged: a fetched page is not fetching");
    meta.state = PageState::kMissing;
    meta.prefetched = false;
    meta.wp_pending = false;
    m->unreserve(pb);
    m->wake(r, io.page);
  }
}

// The group is mapped: its pages are resident; a write fault that came while an installer
// mapped one is served now, as on a resident page (dirty, writer woken).
void finish_installs(PageManager::Impl* m, RegionState* r, const std::vector<InstallIo>& installs) {
  for (const InstallIo& io : installs) {
    PageMeta& meta = r->pages[io.page];
    FARMEM_ASSERT(meta.state == PageState::kFetching, "paged: an installed page is not fetching");
    meta.state = PageState::kResident;
    if (meta.wp_pending) {
      meta.wp_pending = false;
      m->on_write_protect(r, io.page);
    }
  }
}

void release_staging(PageManager::Impl* m, const GroupSources& g, uint64_t page_bytes) {
  for (size_t i = 0; i < g.ios.size(); ++i) {
    if (g.staged[i]) m->staging.put(static_cast<uint8_t*>(g.ios[i].buf), page_bytes);
  }
}

}  // namespace

// Fetches `pages` (all kFetching, counted in r->inflight by the caller) and installs them.
// With `fault`, pages[0] is a faulting page: it gets room by eviction if needed, and a failure
// ends the process. Other pages are prefetches: taken only if they fit in the budget (or, with
// evict_for_room, after evicting others); a failed
// prefetch returns its pages to kMissing (a thread waiting for one faults again).
runtime::Task<Status> fetch_group(PageManager::Impl* m, RegionState* r, std::vector<uint64_t> pages,
                                  bool fault, bool write_fault, bool evict_for_room) {
  const uint64_t pb = r->region->page_bytes();
  std::vector<uint64_t> kept;
  for (size_t i = 0; i < pages.size(); ++i) {
    const uint64_t p = pages[i];
    const bool must = fault && i == 0;
    const bool room =
        must || evict_for_room ? co_await reserve_room(m, pb, must) : m->try_reserve(pb);
    if (room) {
      kept.push_back(p);
    } else {
      drop_from_group(m, r, p);
    }
  }
  const GroupSources g = plan_sources(m, r, kept);
  Status st;
  if (!g.remote.empty()) {
    st = co_await r->source->fetch(r->region->layout(), g.remote, m->deadline());
    if (!st.ok() && fault) m->fatal(r, pages[0], "cannot fetch page", st);
  }
  std::vector<InstallIo> installs;
  if (st.ok()) {
    installs = admit_group(m, r, g, fault, fault ? pages[0] : 0, write_fault);
  } else {
    abandon_group(m, r, g);
  }
  // A fault's group is mapped here (its thread waits: a hand-off would only add latency); a
  // read-ahead group on an installer thread, if any (still kFetching meanwhile: CLOCK passes
  // them by).
  co_await m->install_all(r, installs, fault);
  finish_installs(m, r, installs);
  release_staging(m, g, pb);
  co_return st;
}

runtime::Task<void> fault_task(PageManager::Impl* m, RegionState* r, std::vector<uint64_t> pages,
                               bool fault, bool write_fault) {
  (void)co_await fetch_group(m, r, std::move(pages), fault, write_fault, false);
  FARMEM_ASSERT(r->inflight > 0 && m->inflight_fetches > 0, "paged: fetch counts underflow");
  --r->inflight;
  --m->inflight_fetches;
  m->start_pending();
}

}  // namespace farmem::paged
