// FramePool: per-thread free lists for coroutine frames, so that spawning and awaiting tasks on
// the data path never calls malloc once the pool is warm. Frames are grouped in 64-byte size
// classes up to kMaxPooledBytes; larger frames fall back to operator new. Slabs are kept for
// the life of the thread. Thread safety: thread_local; a frame must be freed on the thread
// that allocated it (tasks never migrate between threads).
#pragma once

#include <cstddef>

namespace farmem::runtime {

inline constexpr size_t kFrameClassBytes = 64;
inline constexpr size_t kMaxPooledBytes = 4096;

void* frame_alloc(size_t bytes);
void frame_free(void* p, size_t bytes);

struct FramePoolStats {
  size_t slab_bytes = 0;    // bytes obtained from the system
  size_t live_frames = 0;   // frames handed out and not yet freed
  size_t large_frames = 0;  // live frames too large for the pool (from operator new)
};
FramePoolStats frame_pool_stats();

}  // namespace farmem::runtime
