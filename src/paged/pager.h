// Internal: the pager thread's state (PageManager::Impl) and the page table (RegionState).
// Everything here belongs to the pager thread unless a comment says otherwise.
//
// Where the pager's parts are defined: pager.cc (its loop: commands, userfaultfd events),
// fault.cc (missing and write-protect faults, read-ahead, fetch groups), evict.cc (CLOCK and
// eviction), cleaner.cc (proactive write-back, flush), budget.cc (resident bytes against the
// budget), uffd_ops.cc (wake, protect, install), commands.cc (commands of application threads),
// staging.h (staging buffers), page_manager.cc (the public API on application threads).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/paged/page_manager.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/task.h"
#include "installer.h"
#include "staging.h"

namespace farmem::paged {

enum class PageState : uint8_t {
  kMissing,   // not mapped: the next access faults
  kFetching,  // a fetch is in flight (a fault for it waits for the install)
  kResident,  // mapped; write-protected unless dirty
  kCleaning,  // write-protected, being written back, stays mapped (flush)
  kEvicting,  // write-protected, being written back and dropped
};

struct PageMeta {
  PageState state = PageState::kMissing;
  Advice advice = Advice::kRandom;
  bool dirty = false;         // written since it was last stored remotely
  bool referenced = false;    // CLOCK's bit (set when installed)
  bool pinned = false;        // static advice: never chosen by CLOCK
  bool remote_valid = false;  // far memory holds this page's contents (else: zeroes)
  bool prefetched = false;    // fetched by a prefetch, not by a fault of its own
  bool in_clock = false;      // has an entry in the CLOCK ring
  bool wp_pending = false;    // a write fault arrived while it was being cleaned
  bool waiters = false;       // a fault arrived while it was being evicted (wake it after)
};

// Counters readable from any thread (relaxed).
struct RegionCounters {
  std::atomic<uint64_t> faults{0}, wp_faults{0}, zero_fills{0}, bytes_fetched{0},
      bytes_written_back{0}, evictions{0}, prefetched{0}, prefetch_hits{0}, resident_pages{0},
      pinned_pages{0};
  RegionStats snapshot() const;
};

struct RegionState {
  std::unique_ptr<Region> region;
  std::vector<PageMeta> pages;
  std::shared_ptr<PageSource> source;
  uint32_t readahead = 8;
  bool huge = false;      // on huge pages (RegionOptions::huge_pages)
  uint32_t window = 8;    // the read-ahead window now (sequential advice)
  uint64_t seq_next = 0;  // the page after the last read-ahead window
  uint32_t inflight = 0;  // tasks using this region now
  bool closing = false;
  RegionCounters counters;

  // Region's private fields are set here (RegionState is its friend).
  void init(PageManager* manager, uint8_t* base, RemoteLayout layout, const std::string& name) {
    region.reset(new Region());
    Region* r = region.get();
    r->manager_ = manager;
    r->base_ = base;
    r->page_bytes_ = layout.page_bytes;
    r->bytes_ = layout.page_count * layout.page_bytes;
    r->id_ = layout.region_id;
    r->name_ = name.empty() ? "region-" + std::to_string(r->id_) : name;
    r->layout_ = std::move(layout);
    r->state_ = this;
  }
  static RegionState* of(const Region* r) { return r->state_; }
};

// A request from an application thread, run on the pager thread.
struct Command {
  enum class Kind : uint8_t {
    kAllocate,
    kAllocateFile,
    kFree,
    kPrefetch,
    kPrefetchPages,
    kFlush,
    kAdvise,
    kStop
  };
  Kind kind = Kind::kStop;
  RegionState* region = nullptr;  // kFree, kPrefetch(Pages), kFlush (null = all), kAdvise
  uint64_t offset = 0, bytes = 0;
  std::vector<uint64_t> pages;  // kPrefetchPages: sorted, distinct
  Advice advice = Advice::kRandom;
  RegionOptions options;
  std::string file;
  Region* result = nullptr;
  std::promise<Status> done;
};

struct PageManager::Impl {
  explicit Impl(const PageManagerOptions& o) : options(o), staging(o.max_inflight) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  PageManager* self = nullptr;
  client::Cluster* cluster = nullptr;
  PageManagerOptions options;
  uint64_t op_timeout_ns = 0;
  int uffd = -1;
  int event_fd = -1;
  std::thread thread;
  std::thread::id pager_id;
  bool stopping = false;
  std::shared_ptr<PageSource> direct;
  std::vector<std::shared_ptr<PageSource>> sources_used;  // (pager thread) for pager_exiting()

  // Commands from application threads (mu).
  std::mutex mu;
  std::deque<Command*> commands;
  // Install helpers (null: the pager thread installs), and the coroutines whose installs they
  // finished, to be resumed on the pager thread (mu).
  std::unique_ptr<Installer> installer;
  std::vector<std::coroutine_handle<>> installed;

  // Regions: the list under regions_mu (stats read it from any thread); the map by address
  // on the pager thread.
  mutable std::mutex regions_mu;
  std::vector<std::unique_ptr<RegionState>> regions;
  RegionCounters freed;  // counters of freed regions
  std::map<uintptr_t, RegionState*> by_addr;
  uint64_t next_region_id = 1;

  std::atomic<uint64_t> budget_bytes{0}, footprint_bytes{0}, resident_bytes{0};
  std::atomic<uint64_t> cleaner_runs{0}, fault_waits{0}, offloaded_installs{0};
  uint64_t pinned_bytes = 0;
  // The shared budget's tenant (null: the budget is budget_bytes) and the other tenants'
  // pressure last acted on (pager thread).
  LocalBudget::Tenant* tenant = nullptr;
  uint64_t pressure_seen = 0;
  // Counts `bytes` as resident if they fit in the budget (false: nothing counted).
  bool try_reserve(uint64_t bytes);
  // Counts `bytes` as resident, past the budget if need be.
  void force_reserve(uint64_t bytes);
  // Uncounts resident bytes (after their pages were dropped).
  void unreserve(uint64_t bytes);
  // Bytes counted against the budget now (every tenant's, if shared).
  uint64_t used_bytes() const;
  // Asserts that the shared budget's tenant is charged exactly the resident bytes.
  void check_charge() const;

  struct ClockEntry {
    RegionState* region;
    uint64_t page;
  };
  std::deque<ClockEntry> clock;
  static constexpr size_t kFaultEvictBatch = 8;  // victims a fault evicts when the buffer is full
  static constexpr size_t kCleanerBatch = 16;    // victims per cleaner round
  // A fault waiting for other tenants of a shared budget re-checks this often.
  static constexpr uint64_t kSharedWaitNs = 50'000;
  bool cleaner_running = false;

  // Missing faults waiting for a fetch slot (bounded by the faulting threads).
  struct PendingFault {
    RegionState* region;
    uint64_t page;
    bool write;
  };
  std::deque<PendingFault> pending;
  uint32_t inflight_fetches = 0;

  // Page-aligned staging buffers by size, and a zero page per size.
  StagingPool staging;

  client::ThreadClient* client = nullptr;
  runtime::Scheduler* scheduler = nullptr;

  ~Impl();
  // The pager thread's loop (pager.cc).
  void run(std::promise<Status>* started);
  Status post(Command* cmd);  // (application threads: page_manager.cc)
  bool drain_commands();
  bool read_events();
  void on_fault(uintptr_t addr, uint64_t flags);
  uint64_t deadline() const;
  [[noreturn]] void fatal(const RegionState* r, uint64_t page, const char* what,
                          const Status& cause) const;

  // Faults (fault.cc).
  void on_missing(RegionState* r, uint64_t page, bool write);
  void on_write_protect(RegionState* r, uint64_t page);
  void read_ahead(RegionState* r, uint64_t from);
  static constexpr size_t kReadAheadGroup = 16;  // pages per read-ahead fetch
  void start_pending();

  // Eviction (evict.cc) and the cleaner (cleaner.cc).
  bool pick_victim(RegionState** r, uint64_t* page);
  void maybe_start_cleaner();

  // The budget (budget.cc).
  void recompute_budget();

  // Page operations (uffd_ops.cc).
  uint8_t* page_addr(const RegionState* r, uint64_t page) const;
  void wake(RegionState* r, uint64_t page);
  // Write-protects a dirty page for its write-back (on), or makes a dirty page writable (off).
  void protect(RegionState* r, uint64_t page, bool on);
  void install(RegionState* r, uint64_t page, const void* src, bool writable);
  // Installs `pages` of r: on an installer thread if there are any and no thread is `awaited`
  // (waiting for them: a fault's group) (the coroutine resumes when they are mapped), else here.
  Installer::Await install_all(RegionState* r, const std::vector<InstallIo>& pages, bool awaited);
};

// Coroutines of the pager thread (free functions: no capturing lambda coroutines).
// fault.cc:
runtime::Task<Status> fetch_group(PageManager::Impl* m, RegionState* r, std::vector<uint64_t> pages,
                                  bool fault, bool write_fault, bool evict_for_room);
runtime::Task<void> fault_task(PageManager::Impl* m, RegionState* r, std::vector<uint64_t> pages,
                               bool fault, bool write_fault);
// evict.cc:
runtime::Task<bool> reserve_room(PageManager::Impl* m, uint64_t bytes, bool must);
runtime::Task<void> evict_batch(PageManager::Impl* m,
                                std::vector<PageManager::Impl::ClockEntry> victims);
// cleaner.cc:
runtime::Task<void> cleaner(PageManager::Impl* m);
runtime::Task<Status> clean_pages(PageManager::Impl* m, RegionState* r);
// commands.cc:
runtime::Task<void> run_command(PageManager::Impl* m, Command* cmd);

// The file-preload client (preload_client.cc): asks every memory node to load its stripes
// of `file` into memory allocated for it; fills layout->stripes/page_count.
runtime::Task<Status> preload_file(PageManager::Impl* m, const std::string& file, bool share,
                                   RemoteLayout* layout, uint64_t* file_bytes);

}  // namespace farmem::paged
