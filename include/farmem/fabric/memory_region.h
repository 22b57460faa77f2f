// MemoryRegion: memory exported for one-sided access, allocated by UCX (ucp_mem_map with
// UCP_MEM_MAP_ALLOCATE) so that shared-memory transports map it directly into peers and
// one-sided operations bypass the owner's CPU. The packed remote key is what peers need.
// map_file exports a file mapping instead (registered, not allocated, memory: UCX reaches it
// through CMA or active messages over shared memory), to measure that trade.
// Thread safety: immutable after create(); base()/bytes()/packed_rkey() from any thread.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/fabric/context.h"

namespace farmem::fabric {

class MemoryRegion {
 public:
  static Result<std::unique_ptr<MemoryRegion>> allocate(Context& context, uint64_t bytes);
  // A MAP_SHARED mapping of `path` (created, or grown to `bytes`), registered with UCX.
  static Result<std::unique_ptr<MemoryRegion>> map_file(Context& context, const std::string& path,
                                                        uint64_t bytes);
  ~MemoryRegion();
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t bytes() const { return bytes_; }
  const std::vector<uint8_t>& packed_rkey() const { return packed_rkey_; }

 private:
  MemoryRegion() = default;
  Status finish(Context& context, ucp_mem_map_params_t params, const char* what);
  Context* context_ = nullptr;
  ucp_mem_h memh_ = nullptr;
  bool file_mapped_ = false;  // map_file: munmap on destruction
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  std::vector<uint8_t> packed_rkey_;
};

}  // namespace farmem::fabric
