#include "farmem/runtime/frame_pool.h"

#include <array>
#include <cstdlib>
#include <new>
#include <vector>

namespace farmem::runtime {
namespace {

constexpr size_t kClasses = kMaxPooledBytes / kFrameClassBytes;
constexpr size_t kSlabBytes = 64 * 1024;

struct FreeNode {
  FreeNode* next;
};

struct FrameSlabs {
  std::array<FreeNode*, kClasses> heads{};
  std::vector<void*> slabs;
  FramePoolStats stats;

  ~FrameSlabs() {
    // Frames still alive at thread exit belong to tasks that never finished; their memory goes
    // with the slabs.
    for (void* s : slabs) std::free(s);
  }

  void refill(size_t cls) {
    size_t frame = (cls + 1) * kFrameClassBytes;
    auto* slab = static_cast<char*>(std::malloc(kSlabBytes));
    if (slab == nullptr) throw std::bad_alloc();
    slabs.push_back(slab);
    stats.slab_bytes += kSlabBytes;
    for (size_t off = 0; off + frame <= kSlabBytes; off += frame) {
      auto* n = reinterpret_cast<FreeNode*>(slab + off);
      n->next = heads[cls];
      heads[cls] = n;
    }
  }
};

thread_local FrameSlabs pool;

size_t class_of(size_t bytes) { return (bytes + kFrameClassBytes - 1) / kFrameClassBytes - 1; }

}  // namespace

void* frame_alloc(size_t bytes) {
  if (bytes > kMaxPooledBytes) {
    ++pool.stats.large_frames;
    return ::operator new(bytes);
  }
  size_t cls = class_of(bytes);
  if (pool.heads[cls] == nullptr) pool.refill(cls);
  FreeNode* n = pool.heads[cls];
  pool.heads[cls] = n->next;
  ++pool.stats.live_frames;
  return n;
}

void frame_free(void* p, size_t bytes) {
  if (bytes > kMaxPooledBytes) {
    --pool.stats.large_frames;
    ::operator delete(p);
    return;
  }
  size_t cls = class_of(bytes);
  auto* n = static_cast<FreeNode*>(p);
  n->next = pool.heads[cls];
  pool.heads[cls] = n;
  --pool.stats.live_frames;
}

FramePoolStats frame_pool_stats() { return pool.stats; }

}  // namespace farmem::runtime
