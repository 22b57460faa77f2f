// Internal: installers, helper threads that map fetched pages (UFFDIO_COPY) for the pager thread.
//
// UFFDIO_COPY copies each page into the region (64 KiB by default) and is the pager thread's
// largest cost; while it copies, no other fault is read and no other fetch starts. With
// PageManagerOptions::install_threads > 0, fetch_group hands a read-ahead group's copies to them
// and awaits them (co_await Installer::install(...)); the pager thread goes on serving faults. A
// job touches only the region's mapping (base, page size: fixed while the region is in use, and the
// caller's task keeps it in use), the uffd, and the job's own source buffers, which the caller
// keeps alive until it resumes. Completion resumes the coroutine on the pager thread: the worker
// queues its handle (PageManager::Impl::installed, under mu) and writes the event fd. Threads:
// install() on the pager thread; jobs on the installer's threads.
#pragma once

#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace farmem::paged {

struct RegionState;

struct InstallIo {
  uint64_t page;
  const void* src;
  bool writable;
};

class Installer {
 public:
  struct Job {
    RegionState* region;
    std::vector<InstallIo> pages;
    std::coroutine_handle<> resume;
  };
  // run(job) maps job's pages; done(handle) hands the handle back to the pager thread.
  using RunFn = void (*)(void* ctx, const Job& job);
  using DoneFn = void (*)(void* ctx, std::coroutine_handle<> h);

  Installer(uint32_t threads, void* ctx, RunFn run, DoneFn done);
  ~Installer();  // precondition: no job outstanding
  Installer(const Installer&) = delete;
  Installer& operator=(const Installer&) = delete;

  struct Await {
    Installer* installer;
    Job job;
    bool await_ready() const noexcept { return job.pages.empty(); }
    void await_suspend(std::coroutine_handle<> h) {
      job.resume = h;
      installer->submit(std::move(job));
    }
    void await_resume() const noexcept {}
  };
  Await install(RegionState* r, std::vector<InstallIo> pages) {
    return Await{this, Job{r, std::move(pages), {}}};
  }

 private:
  void submit(Job job);
  void loop();

  void* ctx_;
  RunFn run_;
  DoneFn done_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // mu_
  bool stop_ = false;     // mu_
  std::vector<std::thread> threads_;
};

}  // namespace farmem::paged
