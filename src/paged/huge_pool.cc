#include "farmem/paged/huge_pool.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace farmem::paged {

namespace {

// A number from /proc/meminfo ("Hugepagesize:" in kB, "HugePages_Free:" a count), 0 if absent.
uint64_t meminfo_value(const char* key) {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long v = 0;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, key, n) == 0 && std::sscanf(line + n, " %llu", &v) == 1) break;
  }
  std::fclose(f);
  return v;
}

}  // namespace

HugePool huge_pool() {
  HugePool p;
  p.page_bytes = meminfo_value("Hugepagesize:") * 1024;
  p.total = meminfo_value("HugePages_Total:");
  p.free = meminfo_value("HugePages_Free:");
  return p;
}

uint64_t huge_pages_needed(uint64_t region_bytes, uint64_t page_bytes, uint64_t budget_bytes,
                           uint32_t max_inflight, uint64_t huge_page_bytes) {
  if (page_bytes == 0 || huge_page_bytes == 0) return 0;
  const uint64_t pages = (region_bytes + page_bytes - 1) / page_bytes;
  const uint64_t resident =
      budget_bytes == 0 ? pages
                        : std::min<uint64_t>(pages, budget_bytes / page_bytes + max_inflight);
  return resident * (page_bytes / huge_page_bytes);
}

std::string huge_pool_sysctl(const HugePool& pool, uint64_t need) {
  const uint64_t used = pool.total - std::min(pool.total, pool.free);
  return "sysctl -w vm.nr_hugepages=" + std::to_string(used + need);
}

}  // namespace farmem::paged
