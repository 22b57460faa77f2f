// Direct access: CPU instructions on UCX's mapping of a node's region (fabric::Endpoint::
// direct_base()), used by OpAwaitable and Batch instead of UCX calls on shared memory.
//
// Writes are memcpy + release fence; reads copy, then an acquire fence; CAS and FAA are seq_cst
// CPU atomics (the instructions UCX's shared-memory transports use, so they are atomic with
// other clients' UCX atomics). An aligned 8-byte read or write is one access, so a word written
// by a CAS elsewhere is never seen torn. Preconditions: the range was checked by
// ThreadClient::resolve and lies in a live mapping; atomics are 8-byte aligned.
// Internal to src/client. Thread safety: the owning ThreadClient's thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "farmem/common/status.h"
#include "farmem/fabric/endpoint.h"

namespace farmem::client::direct {

inline constexpr size_t kCacheLineBytes = 64;
// A deferred read prefetches at most this many lines of its source: a slot, a bucket, a small
// block or a whole default B+tree page (1 KiB), whose lines then arrive while the other
// coroutines run instead of one by one when the copy reaches them; larger copies are
// bandwidth-bound anyway.
inline constexpr size_t kPrefetchLines = 16;

inline bool word_aligned(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 7) == 0; }

inline void prefetch_source(const uint8_t* src, size_t bytes) {
  const uint8_t* line = src - (reinterpret_cast<uintptr_t>(src) & (kCacheLineBytes - 1));
  const uint8_t* end = src + bytes;
  for (size_t i = 0; i < kPrefetchLines && line < end; ++i, line += kCacheLineBytes) {
    __builtin_prefetch(line, 0, 3);
  }
}

inline void read(void* dst, const uint8_t* src, size_t bytes) {
  if (bytes == 8 && word_aligned(src)) {
    uint64_t v = __atomic_load_n(reinterpret_cast<const uint64_t*>(src), __ATOMIC_RELAXED);
    std::memcpy(dst, &v, 8);
  } else {
    std::memcpy(dst, src, bytes);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
}

inline void write(uint8_t* dst, const void* src, size_t bytes) {
  if (bytes == 8 && word_aligned(dst)) {
    uint64_t v;
    std::memcpy(&v, src, 8);
    __atomic_store_n(reinterpret_cast<uint64_t*>(dst), v, __ATOMIC_RELAXED);
  } else {
    std::memcpy(dst, src, bytes);
  }
  std::atomic_thread_fence(std::memory_order_release);
}

// Returns the value found; the swap happened iff it equals `expected`.
inline uint64_t cas(uint8_t* word, uint64_t expected, uint64_t desired) {
  __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(word), &expected, desired, false,
                              __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}

inline uint64_t faa(uint8_t* word, uint64_t add) {
  return __atomic_fetch_add(reinterpret_cast<uint64_t*>(word), add, __ATOMIC_SEQ_CST);
}

// The status of a direct operation whose node failed after it was posted (its mapping is gone).
// Out of line: the rare path.
Status lost_mapping(const fabric::Endpoint& ep);

}  // namespace farmem::client::direct
