// The PageManager's pager thread: its loop (commands from application threads, userfaultfd
// events, the cleaner's start, one scheduler round), which fault each event is, and the fatal
// exit of a fault that cannot be served (docs/modules/paged.md "Pager thread").
#include "pager.h"

#include <linux/userfaultfd.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "farmem/common/clock.h"

namespace farmem::paged {

namespace {

thread_local client::ThreadClient* t_pager_client = nullptr;

}  // namespace

client::ThreadClient* pager_client() { return t_pager_client; }

PageManager::Impl::~Impl() {
  installer.reset();  // idle: the pager thread ended with every coroutine
  if (tenant != nullptr) tenant->budget().remove_tenant(tenant);
  if (uffd >= 0) close(uffd);
  if (event_fd >= 0) close(event_fd);
}

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
      what, reg.name().c_str(), static_cast<unsigned long long>(page) * reg.page_bytes(),
      static_cast<unsigned long long>(page), reg.layout().page_node(page),
      cause.to_string().c_str(), kFaultExitStatus);
  if (n > 0) {
    (void)!::write(STDERR_FILENO, line, std::min<size_t>(static_cast<size_t>(n), sizeof line - 1));
  }
  _exit(kFaultExitStatus);
}

}  // namespace farmem::paged
