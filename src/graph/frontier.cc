#include "farmem/graph/frontier.h"

#include <fmt/format.h>

#include <atomic>
#include <cstring>

namespace farmem::graph {

Frontier::Frontier(Frontier&& o) noexcept
    : ctx_(o.ctx_), store_(std::move(o.store_)), size_(o.size_), dense_(o.dense_) {
  o.size_ = 0;
}

Frontier& Frontier::operator=(Frontier&& o) noexcept {
  if (this != &o) {
    if (store_ != nullptr) ctx_->release(std::move(store_), dense_, size_);
    ctx_ = o.ctx_;
    store_ = std::move(o.store_);
    size_ = o.size_;
    dense_ = o.dense_;
    o.size_ = 0;
  }
  return *this;
}

Frontier::~Frontier() {
  if (store_ != nullptr) ctx_->release(std::move(store_), dense_, size_);
}

Status Frontier::to_dense() {
  if (dense_) return OkStatus();
  if (Status s = ctx_->ensure_flags(*this); !s.ok()) return s;
  uint8_t* flags = store_->flags.data();
  const uint32_t* ids = store_->ids.data();
  ctx_->pool().parallel_for(size_, kVertexGrain, [&](uint64_t, uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) flags[ids[i]] = 1;
  });
  dense_ = true;
  return OkStatus();
}

Status Frontier::to_sparse() {
  if (!dense_) return OkStatus();
  if (Status s = ctx_->ensure_ids(*this); !s.ok()) return s;
  const uint64_t n = ctx_->vertices();
  uint8_t* flags = store_->flags.data();
  uint32_t* ids = store_->ids.data();
  std::vector<uint64_t> start(ThreadPool::chunks(n, kVertexGrain) + 1, 0);
  ctx_->pool().parallel_for(n, kVertexGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    uint64_t count = 0;
    for (uint64_t v = b; v < e; ++v) count += flags[v] != 0;
    start[c + 1] = count;
  });
  for (size_t c = 1; c < start.size(); ++c) start[c] += start[c - 1];
  ctx_->pool().parallel_for(n, kVertexGrain, [&](uint64_t c, uint64_t b, uint64_t e) {
    uint64_t at = start[c];
    for (uint64_t v = b; v < e; ++v) {
      if (flags[v]) {
        ids[at++] = static_cast<uint32_t>(v);
        flags[v] = 0;
      }
    }
  });
  size_ = start.back();
  dense_ = false;
  return OkStatus();
}

AlgorithmContext::AlgorithmContext(GraphMemory& memory, ThreadPool& pool)
    : memory_(memory),
      pool_(pool),
      graph_(memory.graph()),
      sparse_graph_(memory.sparse_graph()),
      sparse_limit_(memory.sparse_limit()),
      reads_by_page_(memory.reads_by_page()) {}

Status AlgorithmContext::check_source(uint32_t source) const {
  if (source < vertices()) return OkStatus();
  return InvalidArgument(
      fmt::format("source {} is not a vertex (the graph has {})", source, vertices()));
}

Result<Frontier> AlgorithmContext::empty_frontier() {
  Frontier f;
  f.ctx_ = this;
  if (!free_.empty()) {
    f.store_ = std::move(free_.back());
    free_.pop_back();
  } else {
    f.store_ = std::make_unique<FrontierStore>();
  }
  return f;
}

Status AlgorithmContext::ensure_ids(Frontier& f) {
  if (!f.store_->ids.empty()) return OkStatus();
  auto a = allocate_array<uint32_t>(memory_, vertices(), "frontier ids", Access::kScratch);
  FARMEM_TRY(a);
  f.store_->ids = std::move(*a);
  return OkStatus();
}

Status AlgorithmContext::ensure_flags(Frontier& f) {
  if (!f.store_->flags.empty()) return OkStatus();
  auto a = allocate_array<uint8_t>(memory_, vertices(), "frontier flags");
  FARMEM_TRY(a);
  f.store_->flags = std::move(*a);
  return OkStatus();
}

Result<Frontier> AlgorithmContext::frontier_of(const std::vector<uint32_t>& ids) {
  auto f = empty_frontier();
  FARMEM_TRY(f);
  if (Status s = ensure_ids(*f); !s.ok()) return s;
  if (!ids.empty()) std::memcpy(f->mutable_ids(), ids.data(), ids.size() * sizeof(uint32_t));
  set(*f, ids.size(), false);
  return f;
}

Result<Frontier> AlgorithmContext::all_vertices() {
  auto f = empty_frontier();
  FARMEM_TRY(f);
  if (Status s = ensure_flags(*f); !s.ok()) return s;
  uint8_t* flags = f->mutable_flags();
  for_each_vertex(*this, [&](uint32_t v) { flags[v] = 1; });
  set(*f, vertices(), true);
  return f;
}

void AlgorithmContext::release(std::unique_ptr<FrontierStore> store, bool dense, uint64_t size) {
  if (dense && size > 0 && !store->flags.empty()) {
    uint8_t* flags = store->flags.data();
    pool_.parallel_for(vertices(), 1 << 16,
                       [&](uint64_t, uint64_t b, uint64_t e) { std::memset(flags + b, 0, e - b); });
  }
  if (free_.size() < kMaxFreeStores) free_.push_back(std::move(store));
}

}  // namespace farmem::graph
