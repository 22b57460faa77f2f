// ChunkedStore<T>: the far storage under Array<T> and Vector<T>: elements packed into chunk
// objects of about chunk_bytes (at least one element each), chunks laid out contiguously in
// far extents of kChunksPerExtent chunks (extent k on the cluster's node k mod N, so columns of
// equal length line up node by node for remote compute). New chunks are zero-filled on first
// use without a read. A stride prefetcher watches the chunk indices dereferenced.
// Each chunk's entry mirrors its local address into the store's own table (entry.h `mirror`,
// as a UniquePtr's does), next to the entry pointer: a dereference that hits reads one
// {entry, local} pair and the object, never the entry.
// A named store (open_named) keeps its extents in node objects that outlive the process, listed
// in a manifest (named_store.h); on durable nodes its chunks' write-backs are persisted (kDurable)
// and sync() is what acknowledges its contents across restarts.
// Thread safety: the cache's thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/common/huge_page_allocator.h"
#include "farmem/ds/common/durable.h"
#include "farmem/far/deref.h"
#include "farmem/far/named_store.h"
#include "farmem/far/prefetcher.h"
#include "farmem/far/remote.h"
#include "farmem/far/thread_cache.h"

namespace farmem::far {

template <typename T>
class ChunkedStore {
  static_assert(std::is_trivially_copyable_v<T>, "far container elements are trivially copyable");

 public:
  static constexpr uint32_t kChunksPerExtent = 64;
  static constexpr uint32_t kDefaultChunkBytes = 4096;

  ChunkedStore(ThreadCache* cache, uint32_t chunk_bytes)
      : cache_(cache),
        per_chunk_(std::max<uint32_t>(1, chunk_bytes / sizeof(T))),
        chunk_object_bytes_(per_chunk_ * static_cast<uint32_t>(sizeof(T))) {}
  ChunkedStore(ChunkedStore&& o) noexcept
      : cache_(o.cache_),
        per_chunk_(o.per_chunk_),
        chunk_object_bytes_(o.chunk_object_bytes_),
        chunks_(std::move(o.chunks_)),  // the buffer moves: mirrors stay valid
        extents_(std::move(o.extents_)),
        named_(std::move(o.named_)),
        prefetcher_(o.prefetcher_) {
    o.chunks_.clear();
    o.extents_.clear();
  }
  ChunkedStore& operator=(ChunkedStore&&) = delete;
  ~ChunkedStore() {
    for (ChunkRef& c : chunks_) {
      c.e->mirror = nullptr;  // a fetch may still finish after the store is gone
      cache_->release(c.e);
    }
    if (named_) return;  // its extents stay: they belong to its node objects
    for (GlobalAddress x : extents_) cache_->queue_free(x, extent_bytes());
  }

  // The store named `name` (created empty if there is none; kInvalidArgument if it holds
  // elements of another size or chunking): its chunks below the last sync's materialized count
  // are read from their far copies, the rest start as zeros.
  static runtime::Task<Result<ChunkedStore>> open_named(ThreadCache* cache, uint32_t chunk_bytes,
                                                        std::string name) {
    ChunkedStore st(cache, chunk_bytes);
    const NamedStore::Shape shape{static_cast<uint32_t>(sizeof(T)), st.per_chunk_,
                                  kChunksPerExtent};
    auto named = co_await NamedStore::open_or_create(cache->client(), std::move(name), shape);
    FARMEM_CO_TRY(named);
    st.named_ = std::move(*named);
    const uint64_t materialized = st.named_->synced().materialized;
    for (GlobalAddress x : st.named_->extents())
      st.add_chunks(x, st.chunks_.size() >= materialized);
    for (size_t c = 0; c < st.chunks_.size(); ++c) st.chunks_[c].e->mirror = &st.chunks_[c].local;
    co_return st;
  }
  const NamedStore* named() const { return named_.get(); }
  // A named store's sync: every chunk of elements [0, n) written back (persisted on durable
  // nodes; never-written chunks get far copies of zeros), then n recorded in the manifest.
  runtime::Task<Status> sync(uint64_t n) {
    if (!named_) co_return InvalidArgument("sync of a far container without a name");
    const uint64_t used = (n + per_chunk_ - 1) / per_chunk_;
    Status s = co_await write_back_used(used);
    FARMEM_CO_TRY(s);
    s = co_await named_->commit({n, std::max(used, named_->synced().materialized)});
    co_return s;
  }

  uint64_t capacity() const { return uint64_t{per_chunk_} * chunks_.size(); }
  uint32_t per_chunk() const { return per_chunk_; }
  uint64_t chunks() const { return chunks_.size(); }
  Entry* chunk(uint64_t c) const { return chunks_[c].e; }
  // Chunk c's local address (null when absent): the mirror of chunk(c)->local.
  uint8_t* chunk_local(uint64_t c) const { return chunks_[c].local; }
  ThreadCache* cache() const { return cache_; }
  StridePrefetcher& prefetcher() { return prefetcher_; }

  // Adds chunks until capacity() >= elements.
  runtime::Task<Status> grow_to(uint64_t elements) {
    while (capacity() < elements) {
      const auto& nodes = cache_->client()->cluster().nodes();
      const uint16_t node = nodes[extents_.size() % nodes.size()].node_id;
      auto x = named_ ? co_await named_->add_extent(node, extent_bytes())
                      : co_await cache_->client()->allocate(extent_bytes(), node);
      FARMEM_CO_TRY(x);
      const ChunkRef* before = chunks_.data();
      add_chunks(*x, /*zero_fill=*/true);
      // Point every mirror at its pair (all of them when the table moved, else the new ones).
      for (size_t c = chunks_.data() == before ? chunks_.size() - kChunksPerExtent : 0;
           c < chunks_.size(); ++c) {
        chunks_[c].e->mirror = &chunks_[c].local;
      }
    }
    co_return OkStatus();
  }

  template <typename U>
  DerefOp<U> element(const DerefScope& scope, uint64_t i) {
    const uint64_t c = i / per_chunk_;
    observe(c);
    return DerefOp<U>(chunks_[c].e, &chunks_[c].local, &scope,
                      static_cast<uint32_t>((i % per_chunk_) * sizeof(T)));
  }
  // Element i if its chunk is local (stamped; marked dirty when U is not const), else null.
  template <typename U>
  U* try_element(const DerefScope& scope, uint64_t i) {
    const uint64_t c = i / per_chunk_;
    observe(c);
    return try_deref<U>(chunks_[c].e, &chunks_[c].local, scope,
                        static_cast<uint32_t>((i % per_chunk_) * sizeof(T)));
  }
  // Element i by value / overwritten, each in a scope of its own (callers check the bounds).
  runtime::Task<Result<T>> read(uint64_t i) {
    auto scope = co_await DerefScope::enter(*cache_);
    FARMEM_CO_TRY(scope);
    auto p = co_await element<const T>(*scope, i);
    FARMEM_CO_TRY(p);
    co_return **p;
  }
  runtime::Task<Status> write(uint64_t i, T value) {
    auto scope = co_await DerefScope::enter(*cache_);
    FARMEM_CO_TRY(scope);
    auto p = co_await element<T>(*scope, i);
    FARMEM_CO_TRY(p);
    **p = value;
    co_return OkStatus();
  }
  // Fetches chunks of elements start, start + stride, ... (count of them) in the background.
  void prefetch(uint64_t start, int64_t stride, uint64_t count) {
    uint64_t last = UINT64_MAX;
    for (uint64_t k = 0; k < count; ++k) {
      const int64_t i = static_cast<int64_t>(start) + stride * static_cast<int64_t>(k);
      if (i < 0 || static_cast<uint64_t>(i) >= capacity()) break;
      const uint64_t c = static_cast<uint64_t>(i) / per_chunk_;
      if (c != last) cache_->prefetch(chunks_[c].e);
      last = c;
    }
  }
  // The far copies of elements [0, n) as spans (one per extent), after writing back dirty
  // chunks.
  runtime::Task<Result<Spans>> spans(uint64_t n) {
    const uint64_t used = (n + per_chunk_ - 1) / per_chunk_;
    Status s = co_await write_back_used(used);
    FARMEM_CO_TRY(s);
    Spans out;
    const uint64_t per_extent = uint64_t{per_chunk_} * kChunksPerExtent;
    for (size_t x = 0; x < extents_.size() && x * per_extent < n; ++x) {
      const uint64_t count = std::min<uint64_t>(per_extent, n - x * per_extent);
      out.push_back(Span{extents_[x], static_cast<uint32_t>(count)});
    }
    co_return out;
  }
  // Drops local copies of chunks [0, used) after remote compute rewrote their far copies.
  runtime::Task<Status> invalidate(uint64_t n) {
    const uint64_t used = (n + per_chunk_ - 1) / per_chunk_;
    for (uint64_t c = 0; c < used; ++c) {
      chunks_[c].e->flags &= ~kZeroFill;
      Status s = co_await cache_->invalidate(chunks_[c].e);
      FARMEM_CO_TRY(s);
    }
    co_return OkStatus();
  }

 private:
  uint64_t extent_bytes() const { return uint64_t{chunk_object_bytes_} * kChunksPerExtent; }
  // The chunks of extent x (mirrors are the caller's to point); a named store's chunks on a
  // durable node persist their write-backs.
  void add_chunks(GlobalAddress x, bool zero_fill) {
    extents_.push_back(x);
    const bool durable = named_ && ds::node_durable(cache_->client(), x.node());
    for (uint32_t k = 0; k < kChunksPerExtent; ++k) {
      Entry* e =
          cache_->adopt(x + uint64_t{k} * chunk_object_bytes_, chunk_object_bytes_, zero_fill);
      if (durable) e->flags |= kDurable;
      chunks_.push_back(ChunkRef{e, e->local});
    }
  }
  // Writes back chunks [0, used); never-written ones (they read as zeros) get a far copy.
  runtime::Task<Status> write_back_used(uint64_t used) {
    std::vector<Entry*> dirty;
    dirty.reserve(used);
    for (uint64_t c = 0; c < used; ++c) dirty.push_back(chunks_[c].e);
    for (Entry* e : dirty) {
      if ((e->flags & kZeroFill) && e->local == nullptr) {
        Status s = co_await cache_->fetch(e);
        FARMEM_CO_TRY(s);
      }
    }
    Status s = co_await cache_->flush_entries(std::move(dirty));
    co_return s;
  }
  void observe(uint64_t c) {
    if (!prefetcher_.enabled()) return;
    int64_t first, stride;
    const client::ThreadClient* cl = cache_->client();
    const uint16_t node = chunks_[c].e->remote.node();
    const double bw = cl->direct(node) ? 8.0 : (cl->served(node) ? 1.0 : 3.0);
    const uint32_t window =
        StridePrefetcher::window_for(cache_->miss_latency_ns(), bw, chunk_object_bytes_);
    uint32_t n = prefetcher_.record(static_cast<int64_t>(c), window, &first, &stride);
    for (uint32_t k = 0; k < n; ++k) {
      const int64_t p = first + stride * static_cast<int64_t>(k);
      if (p < 0 || static_cast<uint64_t>(p) >= chunks_.size()) break;
      cache_->prefetch(chunks_[static_cast<uint64_t>(p)].e);
    }
  }

  ThreadCache* cache_;
  uint32_t per_chunk_;
  uint32_t chunk_object_bytes_;
  struct ChunkRef {
    Entry* e;
    uint8_t* local;  // e->mirror points here
  };
  std::vector<ChunkRef, HugePageAllocator<ChunkRef>> chunks_;
  std::vector<GlobalAddress> extents_;
  std::unique_ptr<NamedStore> named_;  // a named store's manifest and objects
  StridePrefetcher prefetcher_;
};

}  // namespace farmem::far
