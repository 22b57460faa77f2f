// NamedStore: the far side of a named far container (Array::open_named, Vector::open_named):
// the node objects that own its memory (ds::FarObject "far/<name>"), its extents, and a
// manifest that lists them (docs/formats/far.md "Named containers").
//
// A named container outlives its process and, on durable memory nodes, the nodes' restarts: its
// chunks' write-backs are persisted (entry.h kDurable), and sync() (ChunkedStore::sync) records
// in the manifest how many elements it holds and which chunks' far copies have been written;
// that is the acknowledgement. An extent is recorded in the manifest, persisted, before any chunk
// of it is used. Bounds: kMaxExtents extents. One process at a time uses a named container.
// Thread safety: the client's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "farmem/client/global_address.h"
#include "farmem/client/thread_client.h"
#include "farmem/common/result.h"
#include "farmem/ds/common/far_object.h"
#include "farmem/runtime/task.h"

namespace farmem::far {

// The manifest's first 64 bytes (docs/formats/far.md "Named containers"); the extents' packed
// global addresses follow, kMaxExtents slots.
struct NamedManifestHeader {
  uint64_t magic;              // NamedStore::kMagic
  uint32_t format;             // NamedStore::kFormat
  uint32_t elem_bytes;         // sizeof(T)
  uint32_t per_chunk;          // elements per chunk
  uint32_t chunks_per_extent;  // chunks per extent
  uint64_t extent_count;       // slots in use (each written before the count names it)
  uint64_t size;               // elements at the last sync
  uint64_t materialized;       // chunks [0, materialized) have far copies (at the last sync)
  uint64_t max_extents;        // slots (NamedStore::kMaxExtents)
  uint64_t reserved;           // 0
};
static_assert(sizeof(NamedManifestHeader) == 64);
static_assert(offsetof(NamedManifestHeader, extent_count) == 24);
static_assert(offsetof(NamedManifestHeader, size) == 32);
static_assert(offsetof(NamedManifestHeader, materialized) == 40);

class NamedStore {
 public:
  static constexpr uint64_t kMagic = 0x454D414E52414646ull;  // "FFARNAME" little-endian
  static constexpr uint32_t kFormat = 1;
  static constexpr uint64_t kMaxExtents = 4096;
  static constexpr uint64_t kHeaderBytes = 64;
  static constexpr uint64_t kManifestBytes = kHeaderBytes + kMaxExtents * sizeof(uint64_t);

  // What the container's elements look like; an open must match what was created.
  struct Shape {
    uint32_t elem_bytes = 0;
    uint32_t per_chunk = 0;
    uint32_t chunks_per_extent = 0;
  };
  // What the manifest said at the last sync.
  struct Synced {
    uint64_t size = 0;          // elements
    uint64_t materialized = 0;  // chunks [0, materialized) have far copies
  };

  // Opens the container `name` (kInvalidArgument if it holds another shape), or creates it
  // empty when there is none.
  static runtime::Task<Result<std::unique_ptr<NamedStore>>> open_or_create(client::ThreadClient* c,
                                                                           std::string name,
                                                                           Shape shape);
  // Frees the container's memory on every node (kNotFound if there is none); no handle may use
  // it any more. Array<T> and Vector<T> of that name alike.
  static runtime::Task<Status> destroy(client::ThreadClient* c, std::string name);

  const std::vector<GlobalAddress>& extents() const { return extents_; }
  const Synced& synced() const { return synced_; }
  bool created() const { return created_; }  // this open made it
  // A new extent of `bytes` on `node`, owned by the container, recorded in the manifest
  // (persisted) before it is returned. kResourceExhausted past kMaxExtents.
  runtime::Task<Result<GlobalAddress>> add_extent(uint16_t node, uint64_t bytes);
  // Records what a sync made stable (persisted).
  runtime::Task<Status> commit(Synced synced);

 private:
  NamedStore(client::ThreadClient* c, ds::FarObject object, GlobalAddress manifest)
      : client_(c), object_(std::move(object)), manifest_(manifest) {}
  static runtime::Task<Result<std::unique_ptr<NamedStore>>> create(client::ThreadClient* c,
                                                                   std::string name, Shape shape);
  // Reads and checks the manifest.
  runtime::Task<Status> load(Shape shape);

  client::ThreadClient* client_;
  ds::FarObject object_;
  GlobalAddress manifest_;
  std::vector<GlobalAddress> extents_;
  Synced synced_;
  bool created_ = false;
};

}  // namespace farmem::far
