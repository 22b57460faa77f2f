// A region in the test's own memory with a buddy heap behind a MemorySource: what the kv
// service's pools, allocator and index run on in unit tests.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>

#include "farmem/memnode/buddy_allocator.h"
#include "kv/service/allocator.h"
#include "kv/service/region.h"

namespace farmem::kv::service::testing {

class TestRegion {
 public:
  explicit TestRegion(uint64_t bytes)
      : mem_(static_cast<uint8_t*>(std::aligned_alloc(4096, bytes)), &std::free),
        heap_(bytes, 4096) {
    std::memset(mem_.get(), 0xA5, bytes);  // junk, as reused memory would hold
    view_ = RegionView{mem_.get(), bytes};
  }
  RegionView view() const { return view_; }
  memnode::BuddyAllocator& heap() { return heap_; }

  // A MemorySource taking blocks of this region's heap.
  class Source final : public MemorySource {
   public:
    explicit Source(TestRegion& r) : r_(r) {}
    Result<Block> take(uint64_t bytes) override {
      auto b = r_.heap_.allocate(bytes, 64);
      if (!b.ok()) return b.status();
      ++taken;
      return Block{b->offset, b->bytes};
    }
    void give_back(uint64_t offset) override {
      ASSERT_TRUE(r_.heap_.free(offset).ok());
      ++given_back;
    }
    int taken = 0, given_back = 0;

   private:
    TestRegion& r_;
  };

 private:
  std::unique_ptr<uint8_t, decltype(&std::free)> mem_;
  memnode::BuddyAllocator heap_;
  RegionView view_;
};

}  // namespace farmem::kv::service::testing
