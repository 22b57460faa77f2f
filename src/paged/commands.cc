// The pager thread's commands: region creation and release, prefetch, flush, advise, stop.
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "farmem/client/thread_client.h"
#include "farmem/common/check.h"
#include "farmem/paged/huge_pool.h"
#include "farmem/runtime/when_all.h"
#include "pager.h"

namespace farmem::paged {

namespace {

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t huge_page_bytes() { return huge_pool().page_bytes; }

// A huge-page region holds at most its pages or the budget's worth (plus the fetches in flight),
// whichever is fewer; the pool must have that many free now (MAP_NORESERVE reserves nothing; an
// empty pool later is a fatal UFFDIO_COPY error).
Status check_huge_pool(const PageManager::Impl* m, const RemoteLayout& layout) {
  const HugePool pool = huge_pool();
  const uint64_t need =
      huge_pages_needed(layout.page_count * layout.page_bytes, layout.page_bytes,
                        m->budget_bytes.load(), m->options.max_inflight, pool.page_bytes);
  if (pool.free >= need) return OkStatus();
  return ResourceExhausted("paged: a huge-page region of " + std::to_string(layout.page_count) +
                           " pages needs " + std::to_string(need) +
                           " free huge pages, the pool has " + std::to_string(pool.free) +
                           " (as root: " + huge_pool_sysctl(pool, need) + ")");
}

Status check_options(const RegionOptions& o) {
  if (!power_of_two(o.page_bytes) || o.page_bytes < kMinPageBytes || o.page_bytes > kMaxPageBytes) {
    return InvalidArgument("paged: page_bytes must be a power of two in [4 KiB, 4 MiB]");
  }
  if (o.huge_pages) {
    const uint64_t hp = huge_page_bytes();
    if (hp == 0) return Unavailable("paged: this kernel offers no huge pages (hugetlbfs)");
    if (o.page_bytes % hp != 0) {
      return InvalidArgument(
          "paged: huge_pages needs page_bytes a multiple of the huge page size (" +
          std::to_string(hp) + " bytes)");
    }
  }
  if (o.readahead_pages > PageSource::kMaxPagesPerCall) {
    return InvalidArgument("paged: readahead_pages must be at most 64");
  }
  return OkStatus();
}

// Allocates one stripe per memory node (fewer when there are fewer pages than nodes).
runtime::Task<Status> allocate_stripes(PageManager::Impl* m, RemoteLayout* layout) {
  const auto& nodes = m->cluster->nodes();
  const size_t n = std::min<uint64_t>(nodes.size(), layout->page_count);
  for (size_t s = 0; s < n; ++s) layout->stripes.push_back(GlobalAddress(nodes[s].node_id, 0));
  for (size_t s = 0; s < n; ++s) {
    auto a = co_await m->client->allocate_on(nodes[s].node_id, layout->stripe_bytes(s), 4096);
    if (!a.ok()) {
      layout->stripes.resize(s);
      co_return a.status();
    }
    layout->stripes[s] = *a;
  }
  co_return OkStatus();
}

runtime::Task<void> free_stripes(PageManager::Impl* m, std::vector<GlobalAddress> stripes) {
  for (GlobalAddress a : stripes) {
    Status st = co_await m->client->free_on(a);
    (void)st;  // a dead node frees everything of this session anyway
  }
}

// Maps `bytes` of address space for a region and registers it for missing and write-protect
// faults. On failure nothing stays mapped.
Status map_region(PageManager::Impl* m, const RemoteLayout& layout, bool huge, void** out) {
  const uint64_t bytes = layout.page_count * layout.page_bytes;
  if (huge) FARMEM_TRY(check_huge_pool(m, layout));
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (huge ? MAP_HUGETLB : 0), -1, 0);
  if (base == MAP_FAILED) {
    return ResourceExhausted(std::string("paged: mmap: ") + std::strerror(errno));
  }
  if (!huge) (void)madvise(base, bytes, MADV_NOHUGEPAGE);
  uffdio_register reg{};
  reg.range.start = reinterpret_cast<uint64_t>(base);
  reg.range.len = bytes;
  reg.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
  Status st;
  if (ioctl(m->uffd, UFFDIO_REGISTER, &reg) != 0) {
    st = Unavailable(std::string("paged: UFFDIO_REGISTER: ") + std::strerror(errno));
  } else if ((reg.ioctls & (uint64_t{1} << _UFFDIO_COPY)) == 0 ||
             (reg.ioctls & (uint64_t{1} << _UFFDIO_WRITEPROTECT)) == 0) {
    st = Unavailable("paged: the kernel offers no UFFDIO_COPY/WRITEPROTECT on this range");
  }
  if (!st.ok()) {
    munmap(base, bytes);
    return st;
  }
  *out = base;
  return OkStatus();
}

runtime::Task<Status> free_region(PageManager::Impl* m, RegionState* r);

// Maps and registers the region, with its remote layout made. On failure frees the stripes.
runtime::Task<Result<Region*>> create_region(PageManager::Impl* m, RemoteLayout layout,
                                             const RegionOptions& options, bool remote_valid) {
  const uint64_t bytes = layout.page_count * layout.page_bytes;
  void* base = nullptr;
  if (Status st = map_region(m, layout, options.huge_pages, &base); !st.ok()) {
    co_await free_stripes(m, layout.stripes);
    co_return st;
  }
  auto state = std::make_unique<RegionState>();
  state->init(m->self, static_cast<uint8_t*>(base), std::move(layout), options.name);
  Region* r = state->region.get();
  state->pages.resize(r->layout().page_count);
  for (PageMeta& p : state->pages) {
    p.remote_valid = remote_valid;
    p.advice = options.advice == Advice::kStatic ? Advice::kRandom : options.advice;
  }
  state->source = options.source ? options.source : m->direct;
  if (std::find(m->sources_used.begin(), m->sources_used.end(), state->source) ==
      m->sources_used.end()) {
    m->sources_used.push_back(state->source);
  }
  state->readahead = options.readahead_pages;
  state->huge = options.huge_pages;
  m->by_addr[reinterpret_cast<uintptr_t>(base)] = state.get();
  {
    std::lock_guard<std::mutex> lock(m->regions_mu);
    m->regions.push_back(std::move(state));
  }
  m->footprint_bytes.fetch_add(bytes);
  m->recompute_budget();
  RegionState* rs = RegionState::of(r);
  Status st = co_await rs->source->region_opened(r->layout());
  if (!st.ok()) {
    (void)co_await free_region(m, rs);
    co_return st;
  }
  co_return r;
}

runtime::Task<Status> free_region(PageManager::Impl* m, RegionState* r) {
  r->closing = true;
  while (r->inflight > 0) co_await m->scheduler->sleep_for_ns(20'000);
  std::erase_if(m->pending,
                [r](const PageManager::Impl::PendingFault& f) { return f.region == r; });
  std::erase_if(m->clock, [r](const PageManager::Impl::ClockEntry& e) { return e.region == r; });
  Region* reg = r->region.get();
  Status st = co_await r->source->region_closed(reg->layout());
  uffdio_range range{reinterpret_cast<uint64_t>(reg->data()), reg->size()};
  (void)ioctl(m->uffd, UFFDIO_UNREGISTER, &range);
  munmap(reg->data(), reg->size());
  uint64_t resident = 0;
  for (const PageMeta& p : r->pages) {
    if (p.state != PageState::kMissing) resident += reg->page_bytes();
  }
  for (const PageMeta& p : r->pages) {
    if (!p.pinned) continue;
    FARMEM_ASSERT(m->pinned_bytes >= reg->page_bytes(), "paged: pinned bytes underflow");
    m->pinned_bytes -= reg->page_bytes();
  }
  m->unreserve(resident);
  m->footprint_bytes.fetch_sub(reg->size());
  if (!reg->layout().shared) co_await free_stripes(m, reg->layout().stripes);
  m->by_addr.erase(reinterpret_cast<uintptr_t>(reg->data()));
  {
    std::lock_guard<std::mutex> lock(m->regions_mu);
    RegionStats s = r->counters.snapshot();
    m->freed.faults += s.faults;
    m->freed.wp_faults += s.wp_faults;
    m->freed.zero_fills += s.zero_fills;
    m->freed.bytes_fetched += s.bytes_fetched;
    m->freed.bytes_written_back += s.bytes_written_back;
    m->freed.evictions += s.evictions;
    m->freed.prefetched += s.prefetched;
    m->freed.prefetch_hits += s.prefetch_hits;
    std::erase_if(m->regions, [r](const std::unique_ptr<RegionState>& x) { return x.get() == r; });
  }
  m->recompute_budget();
  co_return st;
}

Status page_range(const RegionState* r, uint64_t offset, uint64_t bytes, uint64_t* first,
                  uint64_t* end) {
  const Region& reg = *r->region;
  if (offset > reg.size() || bytes > reg.size() - offset) {
    return OutOfRange("paged: range outside the region");
  }
  *first = offset / reg.page_bytes();
  *end = bytes == 0 ? *first : (offset + bytes + reg.page_bytes() - 1) / reg.page_bytes();
  return OkStatus();
}

// Fetches the missing ones of `pages` (sorted, distinct) in groups, kPrefetchGroupsInFlight at
// a time (their copies then overlap on the installer threads), evicting others for room; at
// most the budget's unpinned part (more would evict its own beginning).
runtime::Task<Status> prefetch_list(PageManager::Impl* m, RegionState* r,
                                    std::vector<uint64_t> pages) {
  constexpr size_t kPrefetchGroupsInFlight = 4;
  const uint64_t room =
      (m->budget_bytes.load() - std::min(m->budget_bytes.load(), m->pinned_bytes)) /
      r->region->page_bytes();
  Status result;
  size_t i = 0;
  uint64_t taken = 0;
  while (i < pages.size() && taken < room && result.ok() && !r->closing) {
    std::vector<runtime::Task<Status>> groups;
    while (groups.size() < kPrefetchGroupsInFlight && i < pages.size() && taken < room) {
      std::vector<uint64_t> group;
      for (; i < pages.size() && group.size() < PageSource::kMaxPagesPerCall && taken < room; ++i) {
        PageMeta& meta = r->pages[pages[i]];
        if (meta.state != PageState::kMissing) continue;
        meta.state = PageState::kFetching;
        meta.prefetched = true;
        group.push_back(pages[i]);
        ++taken;
      }
      if (!group.empty()) groups.push_back(fetch_group(m, r, std::move(group), false, false, true));
    }
    if (groups.empty()) break;
    const auto n = static_cast<uint32_t>(groups.size());
    r->inflight += n;
    for (Status& st : co_await runtime::when_all(std::move(groups))) {
      if (!st.ok() && result.ok()) result = st;
    }
    r->inflight -= n;
  }
  co_return result;
}

// prefetch_list over [first, end). With pinned_only, only pinned pages whose contents are in far
// memory (static advice: pages beyond the pin limit stay paged, and a page never written is
// zero-filled by its first fault, without a fetch).
runtime::Task<Status> prefetch_pages(PageManager::Impl* m, RegionState* r, uint64_t first,
                                     uint64_t end, bool pinned_only = false) {
  std::vector<uint64_t> pages;
  for (uint64_t p = first; p < end; ++p) {
    const PageMeta& meta = r->pages[p];
    if (!pinned_only || (meta.pinned && meta.remote_valid)) pages.push_back(p);
  }
  co_return co_await prefetch_list(m, r, std::move(pages));
}

runtime::Task<Status> advise_pages(PageManager::Impl* m, RegionState* r, uint64_t first,
                                   uint64_t end, Advice advice) {
  const uint64_t pb = r->region->page_bytes();
  for (uint64_t p = first; p < end; ++p) {
    PageMeta& meta = r->pages[p];
    meta.advice = advice;
    if (advice == Advice::kStatic && !meta.pinned && m->pinned_bytes + pb <= m->budget_bytes / 2) {
      meta.pinned = true;
      m->pinned_bytes += pb;
      r->counters.pinned_pages.fetch_add(1, std::memory_order_relaxed);
    } else if (advice != Advice::kStatic && meta.pinned) {
      FARMEM_ASSERT(m->pinned_bytes >= pb, "paged: pinned bytes underflow");
      meta.pinned = false;
      m->pinned_bytes -= pb;
      r->counters.pinned_pages.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  Status st = co_await r->source->advise(r->region->layout(), first, end - first, advice);
  if (!st.ok() || advice != Advice::kStatic) co_return st;
  co_return co_await prefetch_pages(m, r, first, end, true);
}

runtime::Task<Status> flush_all(PageManager::Impl* m) {
  std::vector<RegionState*> all;
  {
    std::lock_guard<std::mutex> lock(m->regions_mu);
    for (auto& r : m->regions) all.push_back(r.get());
  }
  Status first;
  for (RegionState* r : all) {
    Status st = co_await clean_pages(m, r);
    if (!st.ok() && first.ok()) first = st;
  }
  co_return first;
}

runtime::Task<Status> allocate(PageManager::Impl* m, Command* cmd) {
  FARMEM_CO_TRY(check_options(cmd->options));
  if (cmd->bytes == 0) co_return InvalidArgument("paged: a region needs at least one byte");
  RemoteLayout layout;
  layout.region_id = m->next_region_id++;
  layout.page_bytes = cmd->options.page_bytes;
  layout.page_count = (cmd->bytes + layout.page_bytes - 1) / layout.page_bytes;
  if (cmd->options.huge_pages) FARMEM_CO_TRY(check_huge_pool(m, layout));  // early
  FARMEM_CO_TRY(co_await allocate_stripes(m, &layout));
  auto r = co_await create_region(m, std::move(layout), cmd->options, false);
  FARMEM_CO_TRY(r);
  cmd->result = *r;
  if (cmd->options.advice != Advice::kStatic) co_return OkStatus();
  co_return co_await advise_pages(m, RegionState::of(*r), 0, (*r)->layout().page_count,
                                  Advice::kStatic);
}

runtime::Task<Status> allocate_file(PageManager::Impl* m, Command* cmd) {
  FARMEM_CO_TRY(check_options(cmd->options));
  RemoteLayout layout;
  layout.region_id = m->next_region_id++;
  layout.page_bytes = cmd->options.page_bytes;
  uint64_t file_bytes = 0;
  FARMEM_CO_TRY(co_await preload_file(m, cmd->file, cmd->options.share_file, &layout, &file_bytes));
  RegionOptions options = cmd->options;
  if (options.name.empty()) options.name = cmd->file;
  auto r = co_await create_region(m, std::move(layout), options, true);
  FARMEM_CO_TRY(r);
  cmd->result = *r;
  if (options.advice != Advice::kStatic) co_return OkStatus();
  co_return co_await advise_pages(m, RegionState::of(*r), 0, (*r)->layout().page_count,
                                  Advice::kStatic);
}

runtime::Task<Status> stop(PageManager::Impl* m) {
  std::vector<RegionState*> all;
  {
    std::lock_guard<std::mutex> lock(m->regions_mu);
    for (auto& r : m->regions) all.push_back(r.get());
  }
  for (RegionState* r : all) (void)co_await free_region(m, r);
  m->stopping = true;
  co_return OkStatus();
}

runtime::Task<Status> dispatch(PageManager::Impl* m, Command* cmd) {
  uint64_t first = 0, end = 0;
  switch (cmd->kind) {
    case Command::Kind::kAllocate:
      co_return co_await allocate(m, cmd);
    case Command::Kind::kAllocateFile:
      co_return co_await allocate_file(m, cmd);
    case Command::Kind::kFree:
      co_return co_await free_region(m, cmd->region);
    case Command::Kind::kPrefetch:
      FARMEM_CO_TRY(page_range(cmd->region, cmd->offset, cmd->bytes, &first, &end));
      co_return co_await prefetch_pages(m, cmd->region, first, end);
    case Command::Kind::kPrefetchPages:
      co_return co_await prefetch_list(m, cmd->region, std::move(cmd->pages));
    case Command::Kind::kFlush:
      if (cmd->region == nullptr) co_return co_await flush_all(m);
      co_return co_await clean_pages(m, cmd->region);
    case Command::Kind::kAdvise:
      FARMEM_CO_TRY(page_range(cmd->region, cmd->offset, cmd->bytes, &first, &end));
      co_return co_await advise_pages(m, cmd->region, first, end, cmd->advice);
    case Command::Kind::kStop:
      co_return co_await stop(m);
  }
  co_return Internal("paged: unknown command");
}

}  // namespace

runtime::Task<void> run_command(PageManager::Impl* m, Command* cmd) {
  Status st = co_await dispatch(m, cmd);
  cmd->done.set_value(st);
}

}  // namespace farmem::paged
