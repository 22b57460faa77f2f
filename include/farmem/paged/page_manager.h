// PageManager: the process's paged far memory: one local buffer budget for every region.
//
// create() starts the pager thread: it owns one userfaultfd (every region registered on it
// with MISSING and WP modes), a ThreadClient of the cluster, the staging buffers and the page
// table. It serves faults as coroutines (several in flight), evicts pages by CLOCK and runs the
// proactive cleaner: when resident pages pass writeback_start x budget it writes back dirty
// pages and drops pages until writeback_stop x budget, so a fault rarely waits for an eviction.
// Pages of a region are striped over every memory node of the cluster (page i on node i % N).
//
// Shared budget: with PageManagerOptions::shared_budget the local buffer has no budget of its own:
// every page charges the process's LocalBudget (shared with the far object cache) when it
// becomes resident (or is being fetched) and releases it when it is dropped; "does a page fit"
// and the cleaner's start/stop thresholds compare the shared budget's used bytes with its
// limit, and the cleaner also runs when another tenant signalled pressure while pages are
// resident (a waker wakes the pager thread); when the cleaner must trim while other tenants hold
// part of the budget it signals them pressure in turn. A fault that finds the budget full and no
// page of its own to evict signals pressure and waits for the other tenants to give memory back, up
// to the op deadline; then it charges past the limit (counted in the budget's overdraft) rather
// than hang the thread. Static pins take at most half the shared limit.
//
// Failure: a page fault cannot return an error. If a page cannot be fetched the process
// prints one line "farmem paged: fatal: ..." (region, offset, node, cause) on stderr and calls
// _exit(kFaultExitStatus). Explicit calls (allocate, prefetch, flush, advise, free) return
// Status instead.
// Thread safety: every method from any thread but the pager thread; destroy the PageManager after
// the program stopped touching its regions (it frees them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "farmem/client/cluster.h"
#include "farmem/common/local_budget.h"
#include "farmem/common/result.h"
#include "farmem/paged/region.h"
#include "farmem/paged/stats.h"

namespace farmem::paged {

// The exit status of a process whose page fault could not be served.
inline constexpr int kFaultExitStatus = 86;

struct PageManagerOptions {
  // The local buffer budget: local_bytes if non-zero, else local_percent of the live regions'
  // footprint (recomputed as regions come and go), at least 4 pages of the largest page size.
  uint64_t local_bytes = 0;
  double local_percent = 25.0;
  // The process's shared local-memory budget (optional; outlives the PageManager). When set, it
  // replaces local_bytes/local_percent (budget_bytes() is its limit).
  LocalBudget* shared_budget = nullptr;
  // Proactive write-back: the cleaner starts above start x budget and stops below stop x budget.
  double writeback_start = 0.90;
  double writeback_stop = 0.80;
  // Fault/prefetch fetches in flight at once (bounds staging buffers).
  uint32_t max_inflight = 32;
  // Deadline of each fetch/write-back (0 = the cluster's op_timeout_ms).
  uint32_t op_timeout_ms = 0;
  // When idle, the pager thread polls its userfaultfd for this long before it sleeps in poll(2):
  // a fault that comes soon after the previous one (a thread streaming through a region) is
  // then served without waking the pager (0 = sleep at once).
  uint32_t idle_spin_us = 50;
  // Threads that map fetched pages (UFFDIO_COPY, a copy of every page) so that the pager thread
  // goes on reading faults and starting fetches meanwhile (0 = the pager thread maps them).
  uint32_t install_threads = 2;
};

class PageManager {
 public:
  static Result<std::unique_ptr<PageManager>> create(client::Cluster& cluster,
                                                     const PageManagerOptions& options = {});
  ~PageManager();
  PageManager(const PageManager&) = delete;
  PageManager& operator=(const PageManager&) = delete;

  // A zero-filled region of `bytes` (rounded up to whole pages). Remote memory: one allocation
  // per memory node, owned by the pager thread's sessions (released with the region, or when
  // the process dies).
  Result<Region*> allocate(uint64_t bytes, const RegionOptions& options = {});
  // A region holding the file `name` (relative to each memory node's preload_dir), loaded by
  // the memory nodes themselves; its size is the file's (rounded up to pages, zero tail).
  Result<Region*> allocate_from_file(const std::string& name, const RegionOptions& options = {});
  // Drops the region's pages (no write-back), unmaps it and frees its remote memory.
  Status free(Region* region);
  // Writes back every dirty page of every region.
  Status flush();
  ManagerStats stats() const;
  uint64_t budget_bytes() const;
  client::Cluster& cluster() { return *cluster_; }
  const PageManagerOptions& options() const { return options_; }

  struct Impl;

 private:
  PageManager() = default;
  friend class Region;
  client::Cluster* cluster_ = nullptr;
  PageManagerOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace farmem::paged
