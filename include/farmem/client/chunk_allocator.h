// ChunkAllocator: per-thread small-object allocation over far memory (SMART's design).
//
// A thread takes chunks (ClientOptions::chunk_bytes) from memory nodes round-robin with one
// RPC each, and carves them into power-of-two size classes (64 B .. kMaxSmallBytes) with
// private free lists, so most allocations cost no RPC. Freed small objects return to the
// thread's free list (chunks are not returned to the node); larger objects go straight to
// the node's allocator. A chunk that arrives while the current one still has room (several
// coroutines refilled at once) is kept as a spare and used when the current one runs out, so
// concurrent refills do not scatter a barely used chunk over the free lists.
// Thread safety: owning thread only.
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

  // Pops a free object or carves from the current chunk (then from a spare); null when a new
  // chunk is needed.
  GlobalAddress take(int cls);
  void give_back(int cls, GlobalAddress addr);
  // Makes `chunk` the current chunk; the previous chunk's tail goes to the free lists.
  void add_chunk(GlobalAddress chunk, uint64_t bytes);
  // Keeps `chunk` for when the current chunk cannot fit a request.
  void add_spare_chunk(GlobalAddress chunk, uint64_t bytes);
  // Takes an object of class `cls` after `chunk` arrived for a refill: if other coroutines
  // refilled meanwhile (take() succeeds), `chunk` becomes a spare; otherwise it becomes current.
  GlobalAddress take_after_refill(int cls, GlobalAddress chunk, uint64_t bytes);
  uint64_t chunks() const { return chunks_; }
  size_t spare_chunks() const { return spares_.size(); }

 private:
  struct Spare {
    GlobalAddress chunk;
    uint64_t bytes;
  };
  std::vector<Spare> spares_;
  std::array<std::vector<GlobalAddress>, kClasses> free_;
  GlobalAddress cursor_{};
  uint64_t left_ = 0;
  uint64_t chunks_ = 0;
};

}  // namespace farmem::client
