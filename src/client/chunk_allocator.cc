#include "farmem/client/chunk_allocator.h"

#include <bit>

#include "farmem/common/check.h"

namespace farmem::client {

int ChunkAllocator::class_of(uint64_t bytes) {
  if (bytes == 0 || bytes > kMaxSmallBytes) return -1;
  if (bytes <= kMinClassBytes) return 0;
  return static_cast<int>(std::bit_width(bytes - 1)) - 6;
}

GlobalAddress ChunkAllocator::take(int cls) {
  FARMEM_ASSERT(cls >= 0 && cls < kClasses, "size class out of range");
  auto& fl = free_[cls];
  if (!fl.empty()) {
    GlobalAddress a = fl.back();
    fl.pop_back();
    return a;
  }
  uint64_t need = class_bytes(cls);
  while (left_ < need) {
    if (spares_.empty()) return GlobalAddress{};
    Spare next = spares_.back();
    spares_.pop_back();
    add_chunk(next.chunk, next.bytes);
    --chunks_;  // counted when it arrived
  }
  FARMEM_ASSERT(left_ >= need, "carving past the end of the current chunk");
  GlobalAddress a = cursor_;
  cursor_ = cursor_ + need;
  left_ -= need;
  return a;
}

void ChunkAllocator::give_back(int cls, GlobalAddress addr) {
  FARMEM_ASSERT(cls >= 0 && cls < kClasses, "size class out of range");
  free_[cls].push_back(addr);
}

void ChunkAllocator::add_chunk(GlobalAddress chunk, uint64_t bytes) {
  // The tail of the previous chunk goes to the free lists, largest fitting class first.
  while (left_ >= kMinClassBytes) {
    int cls = 0;
    while (cls + 1 < kClasses && class_bytes(cls + 1) <= left_) ++cls;
    FARMEM_ASSERT(class_bytes(cls) <= left_, "a chunk's tail split past its end");
    free_[cls].push_back(cursor_);
    cursor_ = cursor_ + class_bytes(cls);
    left_ -= class_bytes(cls);
  }
  cursor_ = chunk;
  left_ = bytes;
  ++chunks_;
}

void ChunkAllocator::add_spare_chunk(GlobalAddress chunk, uint64_t bytes) {
  spares_.push_back(Spare{chunk, bytes});
  ++chunks_;
}

GlobalAddress ChunkAllocator::take_after_refill(int cls, GlobalAddress chunk, uint64_t bytes) {
  GlobalAddress a = take(cls);
  if (!a.is_null()) {
    add_spare_chunk(chunk, bytes);
    return a;
  }
  add_chunk(chunk, bytes);
  return take(cls);
}

}  // namespace farmem::client
