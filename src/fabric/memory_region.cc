#include "farmem/fabric/memory_region.h"

#include <fmt/format.h>

#include "farmem/fabric/status_map.h"

namespace farmem::fabric {

Result<std::unique_ptr<MemoryRegion>> MemoryRegion::allocate(Context& context, uint64_t bytes) {
  if (bytes == 0) return InvalidArgument("cannot export an empty region");
  std::unique_ptr<MemoryRegion> r(new MemoryRegion());
  r->context_ = &context;
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  p.length = bytes;
  p.flags = UCP_MEM_MAP_ALLOCATE;
  ucs_status_t st = ucp_mem_map(context.handle(), &p, &r->memh_);
  if (st != UCS_OK) {
    return from_ucs(st, fmt::format("ucp_mem_map(ALLOCATE, {} bytes)", bytes));
  }
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  st = ucp_mem_query(r->memh_, &attr);
  if (st != UCS_OK) return from_ucs(st, "ucp_mem_query");
  r->base_ = static_cast<uint8_t*>(attr.address);
  r->bytes_ = bytes;
  void* packed = nullptr;
  size_t packed_size = 0;
  st = ucp_rkey_pack(context.handle(), r->memh_, &packed, &packed_size);
  if (st != UCS_OK) return from_ucs(st, "ucp_rkey_pack");
  const auto* b = static_cast<const uint8_t*>(packed);
  r->packed_rkey_.assign(b, b + packed_size);
  ucp_rkey_buffer_release(packed);
  return r;
}

MemoryRegion::~MemoryRegion() {
  if (memh_ != nullptr) ucp_mem_unmap(context_->handle(), memh_);
}

}  // namespace farmem::fabric
