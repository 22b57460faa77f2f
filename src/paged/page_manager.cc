// The PageManager's API on application threads: its creation (userfaultfd, eventfd, shared
// budget, installers, the pager thread), the commands it posts to the pager thread and waits
// for, and statistics (docs/modules/paged.md "Pager thread").
#include "farmem/paged/page_manager.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "farmem/common/log.h"
#include "pager.h"

namespace farmem::paged {

namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

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

namespace {

Status check_manager_options(const client::Cluster& cluster, const PageManagerOptions& options) {
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
  return OkStatus();
}

// The userfaultfd with write-protect faults (user-mode faults only when unprivileged).
Result<int> open_userfaultfd() {
  int uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (uffd < 0 && errno == EPERM) {
    // Unprivileged (vm.unprivileged_userfaultfd = 0): user-mode faults only. The kernel's own
    // accesses to a missing page (a read(2) into a region) then fail with EFAULT.
    uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
    if (uffd >= 0) {
      log::warn(
          "paged: userfaultfd limited to user-mode faults (no privilege): system calls must not "
          "read or write region pages that are not resident");
    }
  }
  if (uffd < 0) return Unavailable(errno_text("paged: userfaultfd"));
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP;
  if (ioctl(uffd, UFFDIO_API, &api) != 0) {
    Status st = Unavailable(errno_text("paged: UFFDIO_API (write-protect faults)"));
    close(uffd);
    return st;
  }
  return uffd;
}

void wake_pager(int event_fd) {
  const uint64_t one = 1;
  (void)!::write(event_fd, &one, sizeof one);
}

// Registers the manager as the shared budget's "paged" tenant; another tenant's pressure then
// wakes the pager thread (its loop starts the cleaner).
Status join_shared_budget(PageManager::Impl* impl, LocalBudget* shared) {
  FARMEM_ASSIGN_OR_RETURN(impl->tenant, shared->add_tenant("paged"));
  impl->pressure_seen = impl->tenant->others_pressure();
  impl->tenant->set_waker([fd = impl->event_fd] { wake_pager(fd); });
  return OkStatus();
}

// Installer threads map pages on the pager's behalf and hand the coroutine back to it.
std::unique_ptr<Installer> make_installer(PageManager::Impl* impl, uint32_t threads) {
  return std::make_unique<Installer>(
      threads, impl,
      [](void* ctx, const Installer::Job& job) {
        auto* m = static_cast<PageManager::Impl*>(ctx);
        for (const InstallIo& io : job.pages) m->install(job.region, io.page, io.src, io.writable);
      },
      [](void* ctx, std::coroutine_handle<> h) {
        auto* m = static_cast<PageManager::Impl*>(ctx);
        {
          std::lock_guard<std::mutex> lock(m->mu);
          m->installed.push_back(h);
        }
        wake_pager(m->event_fd);
      });
}

}  // namespace

Result<std::unique_ptr<PageManager>> PageManager::create(client::Cluster& cluster,
                                                         const PageManagerOptions& options) {
  FARMEM_TRY(check_manager_options(cluster, options));
  std::unique_ptr<PageManager> m(new PageManager());
  m->cluster_ = &cluster;
  m->options_ = options;
  m->impl_ = std::make_unique<Impl>(options);
  Impl* impl = m->impl_.get();
  impl->self = m.get();
  impl->cluster = &cluster;
  const uint32_t timeout_ms =
      options.op_timeout_ms != 0 ? options.op_timeout_ms : cluster.config().options.op_timeout_ms;
  impl->op_timeout_ns = uint64_t{timeout_ms} * 1'000'000;
  impl->direct = make_direct_source();
  FARMEM_ASSIGN_OR_RETURN(impl->uffd, open_userfaultfd());
  impl->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->event_fd < 0) return Internal(errno_text("paged: eventfd"));
  if (options.shared_budget != nullptr) FARMEM_TRY(join_shared_budget(impl, options.shared_budget));
  if (options.install_threads > 0) impl->installer = make_installer(impl, options.install_threads);
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

}  // namespace farmem::paged
