// The PageManager's pager thread: userfaultfd events, commands from application threads, and the
// scheduler its fault, eviction and cleaner coroutines run on (docs/modules/paged.md "Pager
// thread").
#include "farmem/paged/page_manager.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "farmem/common/clock.h"
#include "farmem/common/log.h"
#include "pager.h"

namespace farmem::paged {

namespace {

thread_local client::ThreadClient* t_pager_client = nullptr;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

client::ThreadClient* pager_client() { return t_pager_client; }

RegionStats RegionCounters::snapshot() const {
  RegionStats s;
  s.faults = faults.load(std::memory_order_relaxed);
  s.wp_faults = wp_faults.load(std::memory_order_relaxed);
  s.zero_fills = zero_fills.load(std::memory_order_relaxed);
  s.bytes_fetched = bytes_fetched.load(std::memory_order_relaxed);
  s.bytes_written_back = bytes_written_back.load(std::memory_order_relaxed);
  s.evictions = evictions.load(std::memory_order_relaxed);
  s.prefetched = prefetched.load(std::memory_order_relaxed);
  s.prefetch_hits = prefetch_hits.load(std::memory_order_relaxed);
  s.resident_pages = resident_pages.load(std::memory_order_relaxed);
  s.pinned_pages = pinned_pages.load(std::memory_order_relaxed);
  return s;
}

namespace {

void add_stats(RegionStats* to, const RegionStats& s) {
  to->faults += s.faults;
  to->wp_faults += s.wp_faults;
  to->zero_fills += s.zero_fills;
  to->bytes_fetched += s.bytes_fetched;
  to->bytes_written_back += s.bytes_written_back;
  to->evictions += s.evictions;
  to->prefetched += s.prefetched;
  to->prefetch_hits += s.prefetch_hits;
  to->resident_pages += s.resident_pages;
  to->pinned_pages += s.pinned_pages;
}

}  // namespace

// ---- PageManager (application threads) ----

Result<std::unique_ptr<PageManager>> PageManager::create(client::Cluster& cluster,
                                                         const PageManagerOptions& options) {
  if (options.local_bytes == 0 && !(options.local_percent > 0 && options.local_percent <= 100)) {
    return InvalidArgument("paged: local_percent must be in (0, 100] when local_bytes is 0");
  }
  if (!(options.writeback_stop > 0 && options.writeback_stop <= options.writeback_start &&
        options.writeback_start <= 1)) {
    return InvalidArgument("paged: need 0 < writeback_stop <= writeback_start <= 1");
  }
  if (options.max_inflight == 0 || options.max_inflight > 1024) {
    return InvalidArgument("paged: max_inflight must be in 1..1024");
  }
  if (cluster.nodes().empty()) return InvalidArgument("paged: the cluster has no memory node");
  std::unique_ptr<PageManager> m(new PageManager());
  m->cluster_ = &cluster;
  m->options_ = options;
  m->impl_ = std::make_unique<Impl>();
  Impl* impl = m->impl_.get();
  impl->self = m.get();
  impl->cluster = &cluster;
  impl->options = options;
  const uint32_t timeout_ms =
      options.op_timeout_ms != 0 ? options.op_timeout_ms : cluster.config().options.op_timeout_ms;
  impl->op_timeout_ns = uint64_t{timeout_ms} * 1'000'000;
  impl->direct = make_direct_source();
  impl->uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (impl->uffd < 0 && errno == EPERM) {
    // Unprivileged (vm.unprivileged_userfaultfd = 0): user-mode faults only. The kernel's own
    // accesses to a missing page (a read(2) into a region) then fail with EFAULT.
    impl->uffd =
        static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
    if (impl->uffd >= 0) {
      log::warn(
          "paged: userfaultfd limited to user-mode faults (no privilege): system calls must not "
          "read or write region pages that are not resident");
    }
  }
  if (impl->uffd < 0) return Unavailable(errno_text("paged: userfaultfd"));
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP;
  if (ioctl(impl->uffd, UFFDIO_API, &api) != 0) {
    return Unavailable(errno_text("paged: UFFDIO_API (write-protect faults)"));
  }
  impl->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->event_fd < 0) return Internal(errno_text("paged: eventfd"));
  if (options.shared_budget != nullptr) {
    auto t = options.shared_budget->add_tenant("paged");
    FARMEM_TRY(t);
    impl->tenant = *t;
    impl->pressure_seen = impl->tenant->others_pressure();
  }
  if (impl->tenant != nullptr) {
    // Another tenant's pressure wakes the pager thread (its loop then starts the cleaner).
    impl->tenant->set_waker([fd = impl->event_fd] {
      const uint64_t one = 1;
      (void)!::write(fd, &one, sizeof one);
    });
  }
  if (options.install_threads > 0) {
    impl->installer = std::make_unique<Installer>(
        options.install_threads, impl,
        [](void* ctx, const Installer::Job& job) {
          auto* m = static_cast<PageManager::Impl*>(ctx);
          for (const InstallIo& io : job.pages)
            m->install(job.region, io.page, io.src, io.writable);
        },
        [](void* ctx, std::coroutine_handle<> h) {
          auto* m = static_cast<PageManager::Impl*>(ctx);
          {
            std::lock_guard<std::mutex> lock(m->mu);
            m->installed.push_back(h);
          }
          const uint64_t one = 1;
          (void)!::write(m->event_fd, &one, sizeof one);
        });
  }
  impl->recompute_budget();
  std::promise<Status> started;
  std::future<Status> f = started.get_future();
  impl->thread = std::thread([impl, &started] { impl->run(&started); });
  Status st = f.get();
  if (!st.ok()) {
    impl->thread.join();
    return st;
  }
  return m;
}

PageManager::~PageManager() {
  if (!impl_ || !impl_->thread.joinable()) return;
  Command cmd;
  cmd.kind = Command::Kind::kStop;
  (void)impl_->post(&cmd);
  impl_->thread.join();
}

PageManager::Impl::~Impl() {
  installer.reset();  // idle: the pager thread ended with every coroutine
  if (tenant != nullptr) tenant->budget().remove_tenant(tenant);
  for (auto& [bytes, list] : staging_free) {
    for (uint8_t* b : list) std::free(b);
  }
  for (auto& [bytes, z] : zero_pages) std::free(z);
  if (uffd >= 0) close(uffd);
  if (event_fd >= 0) close(event_fd);
}

Status PageManager::Impl::post(Command* cmd) {
  if (std::this_thread::get_id() == pager_id) {
    return InvalidArgument("paged: PageManager/Region calls cannot run on the pager thread");
  }
  std::future<Status> f = cmd->done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu);
    commands.push_back(cmd);
  }
  const uint64_t one = 1;
  if (write(event_fd, &one, sizeof one) != sizeof one) return Internal("paged: eventfd write");
  return f.get();
}

Result<Region*> PageManager::allocate(uint64_t bytes, const RegionOptions& options) {
  Command cmd;
  cmd.kind = Command::Kind::kAllocate;
  cmd.bytes = bytes;
  cmd.options = options;
  FARMEM_TRY(impl_->post(&cmd));
  return cmd.result;
}

Result<Region*> PageManager::allocate_from_file(const std::string& name,
                                                const RegionOptions& options) {
  Command cmd;
  cmd.kind = Command::Kind::kAllocateFile;
  cmd.file = name;
  cmd.options = options;
  FARMEM_TRY(impl_->post(&cmd));
  return cmd.result;
}

Status PageManager::free(Region* region) {
  if (region == nullptr || region->manager_ != this) {
    return InvalidArgument("paged: not a region of this manager");
  }
  Command cmd;
  cmd.kind = Command::Kind::kFree;
  cmd.region = region->state_;
  return impl_->post(&cmd);
}

Status PageManager::flush() {
  Command cmd;
  cmd.kind = Command::Kind::kFlush;
  return impl_->post(&cmd);
}

uint64_t PageManager::budget_bytes() const { return impl_->budget_bytes.load(); }

ManagerStats PageManager::stats() const {
  ManagerStats s;
  {
    std::lock_guard<std::mutex> lock(impl_->regions_mu);
    s.total = impl_->freed.snapshot();
    for (const auto& r : impl_->regions) {
      RegionStats rs = r->counters.snapshot();
      add_stats(&s.total, rs);
      s.regions.push_back(rs);
      s.region_ids.push_back(r->region->id());
    }
  }
  s.budget_bytes = impl_->budget_bytes.load();
  s.footprint_bytes = impl_->footprint_bytes.load();
  s.resident_bytes = impl_->resident_bytes.load();
  s.cleaner_runs = impl_->cleaner_runs.load();
  s.fault_waits = impl_->fault_waits.load();
  s.offloaded_installs = impl_->offloaded_installs.load();
  if (impl_->tenant != nullptr) {
    s.budget = impl_->tenant->usage();
  } else {
    s.budget = sole_tenant_usage("paged", s.resident_bytes, s.budget_bytes);
  }
  impl_->direct->traffic(&s.traffic);
  // Other sources in use (agent mode), each once.
  std::vector<const PageSource*> seen{impl_->direct.get()};
  std::lock_guard<std::mutex> lock(impl_->regions_mu);
  for (const auto& r : impl_->regions) {
    const PageSource* src = r->source.get();
    if (std::find(seen.begin(), seen.end(), src) != seen.end()) continue;
    seen.push_back(src);
    src->traffic(&s.traffic);
  }
  return s;
}

Status Region::prefetch(uint64_t offset, uint64_t bytes) {
  Command cmd;
  cmd.kind = Command::Kind::kPrefetch;
  cmd.region = state_;
  cmd.offset = offset;
  cmd.bytes = bytes;
  return manager_->impl_->post(&cmd);
}

Status Region::prefetch(std::span<const Range> ranges) {
  Command cmd;
  cmd.kind = Command::Kind::kPrefetchPages;
  cmd.region = state_;
  for (const Range& r : ranges) {
    if (r.offset > bytes_ || r.bytes > bytes_ - r.offset) {
      return InvalidArgument("paged: prefetch range outside the region");
    }
    if (r.bytes == 0) continue;
    const uint64_t last = (r.offset + r.bytes - 1) / page_bytes_;
    for (uint64_t p = r.offset / page_bytes_; p <= last; ++p) cmd.pages.push_back(p);
  }
  std::sort(cmd.pages.begin(), cmd.pages.end());
  cmd.pages.erase(std::unique(cmd.pages.begin(), cmd.pages.end()), cmd.pages.end());
  if (cmd.pages.empty()) return OkStatus();
  return manager_->impl_->post(&cmd);
}

Status Region::flush() {
  Command cmd;
  cmd.kind = Command::Kind::kFlush;
  cmd.region = state_;
  return manager_->impl_->post(&cmd);
}

Status Region::advise(uint64_t offset, uint64_t bytes, Advice advice) {
  Command cmd;
  cmd.kind = Command::Kind::kAdvise;
  cmd.region = state_;
  cmd.offset = offset;
  cmd.bytes = bytes;
  cmd.advice = advice;
  return manager_->impl_->post(&cmd);
}

RegionStats Region::stats() const { return state_->counters.snapshot(); }

// ---- the pager thread ----

void PageManager::Impl::run(std::promise<Status>* started) {
  pager_id = std::this_thread::get_id();
  runtime::SchedulerOptions so;
  so.idle_sleep_after_ns = 20'000;
  so.max_sleep_ns = 5'000'000;
  runtime::Scheduler sched(so);
  sched.install();
  scheduler = &sched;
  // While replies are awaited the scheduler may sleep; a fault or a command ends the sleep.
  (void)sched.add_wake_fd(uffd);
  (void)sched.add_wake_fd(event_fd);
  auto c = cluster->thread_client();
  if (!c.ok()) {
    started->set_value(c.status());
    return;
  }
  client = *c;
  t_pager_client = client;
  started->set_value(OkStatus());
  const uint64_t spin_ns = uint64_t{options.idle_spin_us} * 1000;
  uint64_t idle_since = 0;  // when the loop last found nothing to do (0: it did work)
  while (!stopping || sched.live_coroutines() > 0) {
    bool work = drain_commands();
    work |= read_events();
    maybe_start_cleaner();
    const bool busy = sched.live_coroutines() > 0;
    work |= sched.poll_once();
    if (busy || work) {
      idle_since = 0;
      continue;
    }
    pollfd fds[2] = {{uffd, POLLIN, 0}, {event_fd, POLLIN, 0}};
    const uint64_t now = now_ns();
    if (idle_since == 0) idle_since = now;
    if (now - idle_since < spin_ns) {
      (void)::poll(fds, 2, 0);  // spinning: one system call per round
      continue;
    }
    (void)::poll(fds, 2, 10);
    idle_since = 0;
  }
  // Stopped: every region is freed (kStop did it); sources and this thread release their
  // clients here, while the scheduler lives.
  for (auto& src : sources_used) src->pager_exiting();
  sources_used.clear();
  t_pager_client = nullptr;
  cluster->release_thread_client();
  scheduler = nullptr;
}

bool PageManager::Impl::drain_commands() {
  uint64_t v;
  (void)!read(event_fd, &v, sizeof v);
  std::deque<Command*> batch;
  std::vector<std::coroutine_handle<>> done;
  {
    std::lock_guard<std::mutex> lock(mu);
    batch.swap(commands);
    done.swap(installed);
  }
  for (std::coroutine_handle<> h : done) scheduler->post(h);
  for (Command* cmd : batch) {
    Status st = scheduler->spawn(run_command(this, cmd));
    if (!st.ok()) cmd->done.set_value(st);
  }
  return !batch.empty() || !done.empty();
}

bool PageManager::Impl::read_events() {
  uffd_msg msgs[64];
  bool any = false;
  for (;;) {
    const ssize_t n = read(uffd, msgs, sizeof msgs);
    if (n <= 0) break;
    any = true;
    const size_t count = static_cast<size_t>(n) / sizeof(uffd_msg);
    for (size_t i = 0; i < count; ++i) {
      if (msgs[i].event != UFFD_EVENT_PAGEFAULT) continue;
      on_fault(static_cast<uintptr_t>(msgs[i].arg.pagefault.address), msgs[i].arg.pagefault.flags);
    }
    if (count < std::size(msgs)) break;
  }
  return any;
}

void PageManager::Impl::on_fault(uintptr_t addr, uint64_t flags) {
  auto it = by_addr.upper_bound(addr);
  if (it == by_addr.begin()) return;
  --it;
  RegionState* r = it->second;
  const Region& reg = *r->region;
  const uintptr_t base = reinterpret_cast<uintptr_t>(reg.data());
  if (addr >= base + r->pages.size() * reg.page_bytes()) return;
  const uint64_t page = (addr - base) / reg.page_bytes();
  if ((flags & UFFD_PAGEFAULT_FLAG_WP) != 0) {
    on_write_protect(r, page);
  } else {
    on_missing(r, page, (flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0);
  }
}

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

bool PageManager::Impl::try_reserve(uint64_t bytes) {
  if (tenant != nullptr) {
    if (!tenant->try_charge(bytes)) return false;
  } else if (resident_bytes.load(std::memory_order_relaxed) + bytes >
             budget_bytes.load(std::memory_order_relaxed)) {
    return false;
  }
  resident_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

void PageManager::Impl::force_reserve(uint64_t bytes) {
  if (tenant != nullptr) tenant->force_charge(bytes);
  resident_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void PageManager::Impl::unreserve(uint64_t bytes) {
  resident_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  if (tenant != nullptr) tenant->release(bytes);
}

uint64_t PageManager::Impl::used_bytes() const {
  return tenant != nullptr ? tenant->budget().used_bytes()
                           : resident_bytes.load(std::memory_order_relaxed);
}

void PageManager::Impl::recompute_budget() {
  if (tenant != nullptr) {
    budget_bytes.store(tenant->budget().limit_bytes());
    return;
  }
  uint64_t largest_page = kDefaultPageBytes;
  for (const auto& r : regions) largest_page = std::max(largest_page, r->region->page_bytes());
  uint64_t b = options.local_bytes;
  if (b == 0) {
    b = static_cast<uint64_t>(static_cast<double>(footprint_bytes.load()) * options.local_percent /
                              100.0);
  }
  budget_bytes.store(std::max(b, 4 * largest_page));
}

uint8_t* PageManager::Impl::page_addr(const RegionState* r, uint64_t page) const {
  return static_cast<uint8_t*>(r->region->data()) + page * r->region->page_bytes();
}

void PageManager::Impl::wake(RegionState* r, uint64_t page) {
  uffdio_range range{reinterpret_cast<uint64_t>(page_addr(r, page)), r->region->page_bytes()};
  if (ioctl(uffd, UFFDIO_WAKE, &range) != 0) {
    fatal(r, page, "UFFDIO_WAKE failed", Internal(std::strerror(errno)));
  }
}

void PageManager::Impl::protect(RegionState* r, uint64_t page, bool on) {
  uffdio_writeprotect wp{};
  wp.range.start = reinterpret_cast<uint64_t>(page_addr(r, page));
  wp.range.len = r->region->page_bytes();
  wp.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
  if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) != 0) {
    fatal(r, page, "UFFDIO_WRITEPROTECT failed", Internal(std::strerror(errno)));
  }
}

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

Installer::Await PageManager::Impl::install_all(RegionState* r, const std::vector<InstallIo>& pages,
                                                bool awaited) {
  if (installer != nullptr && !awaited) {
    offloaded_installs.fetch_add(pages.size(), std::memory_order_relaxed);
    return installer->install(r, pages);  // the job's own copy
  }
  for (const InstallIo& io : pages) install(r, io.page, io.src, io.writable);
  return Installer::Await{nullptr, {}};  // ready: nothing left to install
}

// UFFDIO_COPY, resumed after a partial copy while the address space was changing (EAGAIN).
void PageManager::Impl::install(RegionState* r, uint64_t page, const void* src, bool writable) {
  const uint64_t pb = r->region->page_bytes();
  uint64_t done = 0;
  for (int attempt = 0; done < pb; ++attempt) {
    uffdio_copy copy{};
    copy.dst = reinterpret_cast<uint64_t>(page_addr(r, page)) + done;
    copy.src = reinterpret_cast<uint64_t>(src) + done;
    copy.len = pb - done;
    copy.mode = writable ? 0 : UFFDIO_COPY_MODE_WP;
    if (ioctl(uffd, UFFDIO_COPY, &copy) == 0) return;
    if (errno != EAGAIN || attempt == 1000) {
      fatal(r, page,
            r->huge && errno == ENOMEM ? "UFFDIO_COPY failed: no free huge page (vm.nr_hugepages)"
                                       : "UFFDIO_COPY failed",
            Internal(std::strerror(errno)));
    }
    if (copy.copy > 0) done += static_cast<uint64_t>(copy.copy);
  }
}

uint8_t* PageManager::Impl::get_staging(uint64_t bytes) {
  auto& list = staging_free[bytes];
  if (!list.empty()) {
    uint8_t* b = list.back();
    list.pop_back();
    return b;
  }
  void* p = std::aligned_alloc(4096, bytes);
  if (p == nullptr) {
    std::fprintf(stderr, "farmem paged: fatal: out of memory for a staging buffer\n");
    _exit(kFaultExitStatus);
  }
  return static_cast<uint8_t*>(p);
}

void PageManager::Impl::put_staging(uint8_t* buf, uint64_t bytes) {
  auto& list = staging_free[bytes];
  if (list.size() < 2 * options.max_inflight) {
    list.push_back(buf);
  } else {
    std::free(buf);
  }
}

uint8_t* PageManager::Impl::zero_page(uint64_t bytes) {
  uint8_t*& z = zero_pages[bytes];
  if (z == nullptr) {
    z = get_staging(bytes);
    std::memset(z, 0, bytes);
  }
  return z;
}

uint64_t PageManager::Impl::deadline() const { return now_ns() + op_timeout_ns; }

void PageManager::Impl::fatal(const RegionState* r, uint64_t page, const char* what,
                              const Status& cause) const {
  const Region& reg = *r->region;
  // One write(2), no stdio: a faulting thread may hold stderr's lock.
  char line[1024];
  const int n = std::snprintf(
      line, sizeof line,
      "farmem paged: fatal: %s: region %s offset %llu (page %llu) node %u: %s; exiting with "
      "status %d\n",
      what, reg.name().c_str(), static_cast<unsigned long long>(page * reg.page_bytes()),
      static_cast<unsigned long long>(page), reg.layout().page_node(page),
      cause.to_string().c_str(), kFaultExitStatus);
  if (n > 0) {
    (void)!::write(STDERR_FILENO, line, std::min<size_t>(static_cast<size_t>(n), sizeof line - 1));
  }
  _exit(kFaultExitStatus);
}

// ---- coroutines ----

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
    if (!room) {
      r->pages[p].state = PageState::kMissing;
      r->pages[p].prefetched = false;
      m->wake(r, p);
      continue;
    }
    kept.push_back(p);
  }
  std::vector<PageIo> ios;
  std::vector<PageIo> remote;
  std::vector<bool> staged;  // parallel to ios: the buffer is a staging buffer
  const RemoteLayout& layout = r->region->layout();
  for (uint64_t p : kept) {
    const void* in_place = nullptr;
    if (!r->pages[p].remote_valid) {
      ios.push_back(PageIo{p, m->zero_page(pb)});
    } else if ((in_place = r->source->page_in_place(layout, p)) != nullptr) {
      ios.push_back(PageIo{p, const_cast<void*>(in_place)});  // only read (UFFDIO_COPY source)
    } else {
      ios.push_back(PageIo{p, m->get_staging(pb)});
      remote.push_back(ios.back());
    }
    staged.push_back(!remote.empty() && remote.back().page == p);
  }
  Status st;
  if (!remote.empty()) {
    st = co_await r->source->fetch(r->region->layout(), remote, m->deadline());
    if (!st.ok() && fault) m->fatal(r, pages[0], "cannot fetch page", st);
  }
  std::vector<InstallIo> installs;
  for (size_t i = 0; i < ios.size(); ++i) {
    const uint64_t p = ios[i].page;
    PageMeta& meta = r->pages[p];
    const bool writable = fault && write_fault && p == pages[0];
    if (st.ok()) {
      // Counted before the install: the install wakes the faulting thread, which may read them.
      r->counters.resident_pages.fetch_add(1, std::memory_order_relaxed);
      if (meta.remote_valid) {
        r->counters.bytes_fetched.fetch_add(pb, std::memory_order_relaxed);
      } else if (fault && p == pages[0]) {
        r->counters.zero_fills.fetch_add(1, std::memory_order_relaxed);
      }
      if (fault && p == pages[0]) {
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
      installs.push_back(InstallIo{p, ios[i].buf, writable});
    } else {
      meta.state = PageState::kMissing;
      meta.prefetched = false;
      meta.wp_pending = false;
      m->unreserve(pb);
      m->wake(r, p);
    }
  }
  // A fault's group is mapped here (its thread waits: a hand-off would only add latency); a
  // read-ahead group on an installer thread, if any (still kFetching meanwhile: CLOCK passes
  // them by).
  co_await m->install_all(r, installs, fault);
  for (const InstallIo& io : installs) {
    PageMeta& meta = r->pages[io.page];
    meta.state = PageState::kResident;
    if (meta.wp_pending) {  // a write fault on it came while an installer mapped it
      meta.wp_pending = false;
      m->on_write_protect(r, io.page);  // served as on a resident page: dirty, writer woken
    }
  }
  for (size_t i = 0; i < ios.size(); ++i) {
    if (staged[i]) m->put_staging(static_cast<uint8_t*>(ios[i].buf), pb);
  }
  co_return st;
}

runtime::Task<void> fault_task(PageManager::Impl* m, RegionState* r, std::vector<uint64_t> pages,
                               bool fault, bool write_fault) {
  (void)co_await fetch_group(m, r, std::move(pages), fault, write_fault, false);
  --r->inflight;
  --m->inflight_fetches;
  m->start_pending();
}

// Precondition: every victim is kEvicting (pick_victim). Dirty victims are write-protected and
// written back (one PageSource call per region and 64 pages), then every victim is dropped
// (one MADV_DONTNEED per run of adjacent pages) and the threads that faulted on one meanwhile
// are woken (they fault again, as missing).
runtime::Task<void> evict_batch(PageManager::Impl* m,
                                std::vector<PageManager::Impl::ClockEntry> victims) {
  std::sort(victims.begin(), victims.end(), [](const auto& a, const auto& b) {
    return a.region != b.region ? a.region < b.region : a.page < b.page;
  });
  size_t begin = 0;
  while (begin < victims.size()) {
    RegionState* r = victims[begin].region;
    size_t end = begin;
    while (end < victims.size() && victims[end].region == r) ++end;
    ++r->inflight;
    const uint64_t pb = r->region->page_bytes();
    std::vector<PageIo> dirty;
    for (size_t i = begin; i < end; ++i) {
      const uint64_t page = victims[i].page;
      if (!r->pages[page].dirty) continue;
      m->protect(r, page, true);  // writers now wait (their fault is answered after the drop)
      dirty.push_back(PageIo{page, m->page_addr(r, page)});
    }
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
    for (size_t i = begin; i < end;) {
      size_t j = i + 1;
      while (j < end && victims[j].page == victims[j - 1].page + 1) ++j;
      const uint64_t first = victims[i].page;
      if (madvise(m->page_addr(r, first), (j - i) * pb, MADV_DONTNEED) != 0) {
        m->fatal(r, first, "MADV_DONTNEED failed", Internal(std::strerror(errno)));
      }
      i = j;
    }
    for (size_t i = begin; i < end; ++i) {
      PageMeta& meta = r->pages[victims[i].page];
      meta.state = PageState::kMissing;
      meta.prefetched = false;
      meta.wp_pending = false;
      m->unreserve(pb);
      r->counters.resident_pages.fetch_sub(1, std::memory_order_relaxed);
      r->counters.evictions.fetch_add(1, std::memory_order_relaxed);
      if (meta.waiters) {
        meta.waiters = false;
        m->wake(r, victims[i].page);
      }
    }
    --r->inflight;
    begin = end;
  }
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
  --r->inflight;
  co_return result;
}

}  // namespace farmem::paged
