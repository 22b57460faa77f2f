// Internal: StagingPool, the pager thread's page-aligned buffers that fetched pages land in
// before UFFDIO_COPY maps them, and one zero page per page size (the source of a zero-fill).
//
// get() reuses a free buffer of that size or allocates one (4 KiB aligned); running out of
// memory ends the process with kFaultExitStatus, since the fault it serves cannot fail. put()
// keeps at most 2 x max_inflight free buffers per size and frees the rest. Zero pages are never
// given back; the pool frees everything when it is destroyed.
// Preconditions: put() only buffers get() returned, each once, with the size they were got with.
// Thread: the pager thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace farmem::paged {

class StagingPool {
 public:
  explicit StagingPool(uint32_t max_inflight) : keep_(2 * size_t{max_inflight}) {}
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  uint8_t* get(uint64_t bytes);
  void put(uint8_t* buf, uint64_t bytes);
  // A page of `bytes` zeroes (the same one for every call with that size); never put back.
  uint8_t* zero_page(uint64_t bytes);

  // Buffers got and not yet put back (zero pages not counted).
  uint64_t outstanding() const { return outstanding_; }
  // Free buffers of `bytes` kept for reuse.
  size_t free_count(uint64_t bytes) const;
  // The most free buffers kept per size.
  size_t keep() const { return keep_; }

 private:
  static uint8_t* allocate(uint64_t bytes);

  const size_t keep_;
  uint64_t outstanding_ = 0;
  std::map<uint64_t, std::vector<uint8_t*>> free_;
  std::map<uint64_t, uint8_t*> zero_pages_;
};

}  // namespace farmem::paged
