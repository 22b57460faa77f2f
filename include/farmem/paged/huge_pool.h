// The kernel's huge page pool (hugetlbfs, vm.nr_hugepages) as /proc/meminfo reports it now, and
// how many of its pages a huge-page region needs.
// Thread safety: plain functions (each reads /proc/meminfo).
#pragma once

#include <cstdint>
#include <string>

namespace farmem::paged {

struct HugePool {
  uint64_t page_bytes = 0;  // 0: the kernel offers no huge pages
  uint64_t total = 0;
  uint64_t free = 0;
};

HugePool huge_pool();

// The huge pages a region of `region_bytes` on pages of `page_bytes` (a multiple of the huge
// page size) holds at most: its pages, or the budget's worth (0 = unlimited) plus the fetches in
// flight, whichever is fewer. MAP_NORESERVE reserves none, so the pool must have them free.
uint64_t huge_pages_needed(uint64_t region_bytes, uint64_t page_bytes, uint64_t budget_bytes,
                           uint32_t max_inflight, uint64_t huge_page_bytes);

// The command that gives the pool `need` free pages: "sysctl -w vm.nr_hugepages=N".
std::string huge_pool_sysctl(const HugePool& pool, uint64_t need);

}  // namespace farmem::paged
