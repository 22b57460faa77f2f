// Region: a range of this process's address space whose contents live on memory nodes.
//
// Made by PageManager::allocate / allocate_from_file. The program reads and writes data()
// like any memory: a missing page is fetched by the PageManager's pager thread (userfaultfd) and
// installed write-protected; the first write to it marks it dirty. Pages leave the local
// buffer (the PageManager's budget) by CLOCK eviction, dirty ones written back first.
// A fault that cannot be served (memory node dead, deadline passed) ends the process with
// kFaultExitStatus after one line on stderr (manager.h); explicit calls return Status.
// Thread safety: data() may be used from any thread except the pager thread; the methods are
// callable from any thread except the pager thread (they post work to it and wait).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "farmem/common/status.h"
#include "farmem/paged/page_source.h"
#include "farmem/paged/stats.h"

namespace farmem::paged {

inline constexpr uint64_t kDefaultPageBytes = 64 * 1024;
inline constexpr uint64_t kMinPageBytes = 4 * 1024;
inline constexpr uint64_t kMaxPageBytes = 4 * 1024 * 1024;

struct RegionOptions {
  uint64_t page_bytes = kDefaultPageBytes;  // power of two in [4 KiB, 4 MiB]
  std::string name;                         // for messages and stats ("" = "region-<id>")
  Advice advice = Advice::kRandom;          // for the whole region (advise() refines ranges)
  // Where pages come from; null = the direct source (make_direct_source()).
  std::shared_ptr<PageSource> source;
  // allocate_from_file: share one remote copy per (file, page size, node set) with other
  // processes (read-mostly: writes go to the shared copy); false = a private copy.
  bool share_file = true;
  // Back the region with the kernel's huge pages (the hugetlbfs pool, vm.nr_hugepages):
  // page_bytes must be a multiple of the huge page size (2 MiB on x86-64). Installing and
  // dropping a huge page costs the kernel far less per byte than 4 KiB pages do.
  bool huge_pages = false;
  // Pages fetched ahead of a fault under sequential advice.
  uint32_t readahead_pages = 8;
};

class PageManager;
struct RegionState;

class Region {
 public:
  void* data() const { return base_; }
  uint64_t size() const { return bytes_; }
  uint64_t page_bytes() const { return page_bytes_; }
  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  const RemoteLayout& layout() const { return layout_; }

  // Fetches the pages of [offset, offset + bytes) that are not resident (within the budget).
  Status prefetch(uint64_t offset, uint64_t bytes);
  // The same for scattered ranges (e.g. the neighbour lists a sparse round is about to read):
  // their missing pages, in page order, at most the budget's unpinned part, fetched in batches
  // rather than one fault at a time. Ranges outside the region are refused.
  struct Range {
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  Status prefetch(std::span<const Range> ranges);
  // Writes back every dirty page of this region (they stay resident, clean).
  Status flush();
  // Applies `advice` to the pages overlapping [offset, offset + bytes).
  Status advise(uint64_t offset, uint64_t bytes, Advice advice);
  RegionStats stats() const;

  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  friend class PageManager;
  friend struct RegionState;
  Region() = default;
  PageManager* manager_ = nullptr;
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t page_bytes_ = 0;
  uint64_t id_ = 0;
  std::string name_;
  RemoteLayout layout_;
  RegionState* state_ = nullptr;  // owned by the PageManager (pager thread's view)
};

}  // namespace farmem::paged
