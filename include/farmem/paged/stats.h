// Statistics of paged regions: per region and for the whole PageManager.
// Plain values (snapshots); read them with Region::stats() / PageManager::stats().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/common/local_budget.h"
#include "farmem/paged/page_source.h"

namespace farmem::paged {

struct RegionStats {
  uint64_t faults = 0;         // missing-page faults served (a fetch or a zero page)
  uint64_t wp_faults = 0;      // first writes to clean pages (write-protect faults)
  uint64_t zero_fills = 0;     // faults on never-written pages of an anonymous region (no fetch)
  uint64_t bytes_fetched = 0;  // pages read from far memory (faults and prefetches)
  uint64_t bytes_written_back = 0;
  uint64_t evictions = 0;       // pages dropped from the local buffer
  uint64_t prefetched = 0;      // pages fetched ahead of a fault (prefetch(), sequential advice)
  uint64_t prefetch_hits = 0;   // faults that found their page already fetched or in flight
                                // by a prefetch (reads of resident pages cause no fault)
  uint64_t resident_pages = 0;  // now
  uint64_t pinned_pages = 0;    // now (static advice)
};

struct ManagerStats {
  RegionStats total;                 // sum over live and freed regions (resident: live only)
  std::vector<RegionStats> regions;  // live regions, in allocation order
  std::vector<uint64_t> region_ids;  // parallel to `regions`
  uint64_t budget_bytes = 0;         // the local buffer budget now (the shared limit, if shared)
  // This manager's charge ("paged") and the limit: of the shared budget, or of its own.
  BudgetUsage budget;
  uint64_t footprint_bytes = 0;  // sum of live regions' sizes
  uint64_t resident_bytes = 0;
  uint64_t cleaner_runs = 0;         // proactive write-back/eviction rounds started
  uint64_t fault_waits = 0;          // faults that had to evict a page first (buffer full)
  uint64_t offloaded_installs = 0;   // pages mapped by an installer thread (read-ahead)
  std::vector<PathTraffic> traffic;  // per path, from every source in use
};

}  // namespace farmem::paged
