// StagingPool: the pager thread's staging buffers and zero pages (staging.h).
#include "staging.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "farmem/common/check.h"
#include "farmem/paged/page_manager.h"

namespace farmem::paged {

StagingPool::~StagingPool() {
  for (auto& [bytes, list] : free_) {
    for (uint8_t* b : list) std::free(b);
  }
  for (auto& [bytes, z] : zero_pages_) std::free(z);
}

uint8_t* StagingPool::allocate(uint64_t bytes) {
  void* p = std::aligned_alloc(4096, bytes);
  if (p == nullptr) {
    std::fprintf(stderr, "farmem paged: fatal: out of memory for a staging buffer\n");
    _exit(kFaultExitStatus);
  }
  return static_cast<uint8_t*>(p);
}

uint8_t* StagingPool::get(uint64_t bytes) {
  ++outstanding_;
  auto& list = free_[bytes];
  if (!list.empty()) {
    uint8_t* b = list.back();
    list.pop_back();
    return b;
  }
  return allocate(bytes);
}

void StagingPool::put(uint8_t* buf, uint64_t bytes) {
  FARMEM_ASSERT(outstanding_ > 0, "paged: a staging buffer put back that was not taken");
  --outstanding_;
  auto& list = free_[bytes];
  if (list.size() < keep_) {
    list.push_back(buf);
  } else {
    std::free(buf);
  }
}

uint8_t* StagingPool::zero_page(uint64_t bytes) {
  uint8_t*& z = zero_pages_[bytes];
  if (z == nullptr) {
    z = allocate(bytes);
    std::memset(z, 0, bytes);
  }
  return z;
}

size_t StagingPool::free_count(uint64_t bytes) const {
  auto it = free_.find(bytes);
  return it == free_.end() ? 0 : it->second.size();
}

}  // namespace farmem::paged
