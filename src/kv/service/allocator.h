// PoolAllocator: a pool's memory, carved from blocks of the node heap.
//
// Small blocks (records and small index tables) come in size classes (64 B steps up to 1 KiB,
// then four steps per doubling up to a quarter of a chunk) carved from chunks the pool takes
// from the node heap (MemorySource); a freed small block goes to its class's free list. Larger
// blocks are heap blocks of their own and go back to the heap when freed. Chunks stay with the
// pool until it is deleted (the node object that owns them is destroyed).
//
// A dead record may still be read one-sidedly by a client that cached its location, so its
// memory is retired: reusable only after grace_ns (docs/formats/kv.md rule 3). Memory nobody
// could have seen is freed at once.
//
// used_bytes() is what the pool holds of the heap (chunks + large blocks); allocation fails
// with kResourceExhausted "pool full" when a new heap block would take it past the capacity.
// Thread safety: the pool's worker thread only; the MemorySource does its own locking.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "farmem/common/result.h"

namespace farmem::kv::service {

// Where pool memory comes from (the node heap, as the pool's object; a test fake).
class MemorySource {
 public:
  struct Block {
    uint64_t offset = 0;
    uint64_t bytes = 0;  // what was really taken (the heap rounds up)
  };
  virtual ~MemorySource() = default;
  // A 64-byte aligned block of at least `bytes` bytes.
  virtual Result<Block> take(uint64_t bytes) = 0;
  virtual void give_back(uint64_t offset) = 0;
};

class PoolAllocator {
 public:
  PoolAllocator(MemorySource& source, uint64_t capacity_bytes, uint64_t grace_ns);

  // A 64-byte aligned block of at least `bytes` bytes (> 0). Reclaims ripe memory first.
  Result<uint64_t> allocate(uint64_t bytes, uint64_t now_ns);
  // A block that may have been read one-sidedly: reusable after the grace period. `bytes` is
  // what was asked of allocate().
  void retire(uint64_t offset, uint64_t bytes, uint64_t now_ns);
  // A block nobody else could have seen: reusable at once.
  void free_now(uint64_t offset, uint64_t bytes);
  // Moves retired blocks whose grace has passed to the free lists (large ones to the heap).
  void reclaim(uint64_t now_ns);

  // Recovery, on an allocator that has allocated nothing: `blocks` are the heap blocks the pool
  // holds and `lives` (offset, bytes asked of allocate()) what is still in use in them. A block
  // that starts with a large live allocation is that allocation's; other blocks of chunk size
  // are chunks, whose gaps go to the free lists; any other block with nothing live goes back to
  // the heap. Returns the lives it refused (outside every block, or overlapping another).
  struct Live {
    uint64_t offset;
    uint64_t bytes;
  };
  std::vector<Live> rebuild(std::vector<MemorySource::Block> blocks, std::vector<Live> lives);

  uint64_t used_bytes() const { return used_; }
  uint64_t capacity_bytes() const { return capacity_; }
  uint64_t chunk_bytes() const { return chunk_; }
  uint64_t retired_blocks() const { return retired_.size(); }
  // The bytes a request of `bytes` really occupies (its class, or its heap block).
  uint64_t block_bytes(uint64_t bytes) const;

 private:
  struct Retired {
    uint64_t offset;
    uint64_t bytes;
    uint64_t ripe_ns;
  };
  int class_of(uint64_t bytes) const;  // -1: a large block
  Result<uint64_t> allocate_large(uint64_t bytes);
  Status refill();
  // A free block of a larger class (the largest there is) becomes the bump range, before a new
  // chunk is taken: the free space of a chunk cut up by carve() (a recovered chunk's gaps, the
  // rest of a chunk) serves small requests again. False: no free block of `need` bytes or more.
  bool refill_from_free(uint64_t need);
  void release(uint64_t offset, uint64_t bytes);
  void carve_rest();
  // Puts [begin, end) (64-byte multiples) into the free lists of the largest classes that fit.
  void carve(uint64_t begin, uint64_t end);
  // rebuild() of one block and the lives that start inside it; appends refused ones.
  void rebuild_block(const MemorySource::Block& b, const Live* first, const Live* last,
                     std::vector<Live>* refused);

  MemorySource& source_;
  uint64_t capacity_;
  uint64_t grace_ns_;
  uint64_t chunk_;
  uint64_t used_ = 0;
  std::vector<uint64_t> class_bytes_;
  std::vector<std::vector<uint64_t>> free_;       // per class
  uint64_t bump_ = 0, bump_end_ = 0;              // the current chunk's unused part
  std::unordered_map<uint64_t, uint64_t> large_;  // offset -> heap bytes
  std::deque<Retired> retired_;                   // in ripe order
};

}  // namespace farmem::kv::service
