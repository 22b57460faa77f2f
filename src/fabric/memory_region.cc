#include "farmem/fabric/memory_region.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "farmem/fabric/status_map.h"

namespace farmem::fabric {

Result<std::unique_ptr<MemoryRegion>> MemoryRegion::allocate(Context& context, uint64_t bytes) {
  if (bytes == 0) return InvalidArgument("cannot export an empty region");
  std::unique_ptr<MemoryRegion> r(new MemoryRegion());
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  p.length = bytes;
  p.flags = UCP_MEM_MAP_ALLOCATE;
  FARMEM_TRY(r->finish(context, p, "ALLOCATE"));
  return r;
}

Result<std::unique_ptr<MemoryRegion>> MemoryRegion::map_file(Context& context,
                                                             const std::string& path,
                                                             uint64_t bytes) {
  if (bytes == 0) return InvalidArgument("cannot export an empty region");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Internal(fmt::format("open {}: {}", path, std::strerror(errno)));
  void* base = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const int err = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    return Internal(fmt::format("map {} bytes of {}: {}", bytes, path, std::strerror(err)));
  }
  std::unique_ptr<MemoryRegion> r(new MemoryRegion());
  r->file_mapped_ = true;
  r->base_ = static_cast<uint8_t*>(base);
  r->bytes_ = bytes;
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = base;
  p.length = bytes;
  FARMEM_TRY(r->finish(context, p, "a file mapping"));
  return r;
}

Status MemoryRegion::finish(Context& context, ucp_mem_map_params_t params, const char* what) {
  context_ = &context;
  ucs_status_t st = ucp_mem_map(context.handle(), &params, &memh_);
  if (st != UCS_OK) {
    memh_ = nullptr;
    return from_ucs(st, fmt::format("ucp_mem_map({}, {} bytes)", what, params.length));
  }
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  st = ucp_mem_query(memh_, &attr);
  if (st != UCS_OK) return from_ucs(st, "ucp_mem_query");
  base_ = static_cast<uint8_t*>(attr.address);
  bytes_ = params.length;
  void* packed = nullptr;
  size_t packed_size = 0;
  st = ucp_rkey_pack(context.handle(), memh_, &packed, &packed_size);
  if (st != UCS_OK) return from_ucs(st, "ucp_rkey_pack");
  const auto* b = static_cast<const uint8_t*>(packed);
  packed_rkey_.assign(b, b + packed_size);
  ucp_rkey_buffer_release(packed);
  return OkStatus();
}

MemoryRegion::~MemoryRegion() {
  if (memh_ != nullptr) ucp_mem_unmap(context_->handle(), memh_);
  if (file_mapped_ && base_ != nullptr) ::munmap(base_, bytes_);
}

}  // namespace farmem::fabric
