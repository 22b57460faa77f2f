// ChunkAllocator: per-thread small-object allocation over far memory (SMART's design).
//
// A thread takes chunks (ClientOptions::chunk_bytes) from memory nodes round-robin with one
// RPC each, and carves them into power-of-two size classes (64 B .. kMaxSmallBytes) with
// private free lists, so most allocations cost no RPC. Freed small objects return to the
// thread's free list (chunks are not returned to the node); larger objects go straight to
// the node's allocator. Thread safety: owning thread only.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "farmem/client/global_address.h"

namespace farmem::client {

class ChunkAllocator {
 public:
  static constexpr uint64_t kMinClassBytes = 64;
  static constexpr uint64_t kMaxSmallBytes = 16 * 1024;
  static constexpr int kClasses = 9;  // 64 .. 16384

  static int class_of(uint64_t bytes);  // -1 if not small
  static uint64_t class_bytes(int cls) { return kMinClassBytes << cls; }

  // Pops a free object or carves from the current chunk; null when a new chunk is needed.
  GlobalAddress take(int cls);
  void give_back(int cls, GlobalAddress addr);
  void add_chunk(GlobalAddress chunk, uint64_t bytes);
  uint64_t chunks() const { return chunks_; }

 private:
  std::array<std::vector<GlobalAddress>, kClasses> free_;
  GlobalAddress cursor_{};
  uint64_t left_ = 0;
  uint64_t chunks_ = 0;
};

}  // namespace farmem::client
