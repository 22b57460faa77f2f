#include "farmem/far/named_store.h"

#include <fmt/format.h>

#include <cstring>

#include "farmem/ds/common/durable.h"

namespace farmem::far {

using runtime::Task;

namespace {

std::string object_name(const std::string& name) { return "far/" + name; }

}  // namespace

Task<Result<std::unique_ptr<NamedStore>>> NamedStore::open_or_create(client::ThreadClient* c,
                                                                     std::string name,
                                                                     Shape shape) {
  if (name.empty()) co_return InvalidArgument("a named far container needs a name");
  auto root = co_await c->lookup_root(object_name(name));
  if (!root.ok() && root.status().code() == StatusCode::kNotFound) {
    auto made = co_await create(c, std::move(name), shape);
    co_return made;
  }
  FARMEM_CO_TRY(root);
  auto object = co_await ds::FarObject::open(c, object_name(name));
  FARMEM_CO_TRY(object);
  std::unique_ptr<NamedStore> s(new NamedStore(c, std::move(*object), *root));
  Status loaded = co_await s->load(shape);
  FARMEM_CO_TRY(loaded);
  co_return s;
}

Task<Result<std::unique_ptr<NamedStore>>> NamedStore::create(client::ThreadClient* c,
                                                             std::string name, Shape shape) {
  auto object = co_await ds::FarObject::create(c, object_name(name), /*temporary=*/false);
  FARMEM_CO_TRY(object);
  const uint16_t node = c->cluster().root_node(object_name(name));
  auto manifest = co_await c->allocate_on(node, kManifestBytes, 64, object->owner(node));
  Status st = manifest.status();
  if (st.ok()) {
    std::string bytes(kHeaderBytes, '\0');
    const NamedManifestHeader h{
        kMagic,      kFormat, shape.elem_bytes, shape.per_chunk, shape.chunks_per_extent, 0, 0, 0,
        kMaxExtents, 0};
    std::memcpy(bytes.data(), &h, sizeof(h));
    st = co_await ds::durable_write(c, *manifest, bytes.data(), bytes.size());
  }
  if (st.ok()) st = co_await object->commit(c, *manifest);
  if (!st.ok()) {
    (void)co_await object->destroy(c);  // nothing of a failed create stays behind
    co_return st;
  }
  std::unique_ptr<NamedStore> s(new NamedStore(c, std::move(*object), *manifest));
  s->created_ = true;
  co_return s;
}

Task<Status> NamedStore::load(Shape shape) {
  std::string bytes(kManifestBytes, '\0');
  Status rs = co_await client_->read(manifest_, bytes.data(), bytes.size());
  FARMEM_CO_TRY(rs);
  NamedManifestHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  const std::string& name = object_.name();
  if (h.magic != kMagic || h.format != kFormat || h.max_extents != kMaxExtents ||
      h.extent_count > kMaxExtents) {
    co_return InvalidArgument(
        fmt::format("root '{}' does not name a far container manifest of "
                    "format {}",
                    name, kFormat));
  }
  if (h.elem_bytes != shape.elem_bytes || h.per_chunk != shape.per_chunk ||
      h.chunks_per_extent != shape.chunks_per_extent) {
    co_return InvalidArgument(fmt::format(
        "far container '{}' holds {}-byte elements, {} per chunk; this one has {}-byte elements, "
        "{} per chunk",
        name, h.elem_bytes, h.per_chunk, shape.elem_bytes, shape.per_chunk));
  }
  const uint64_t chunks = h.extent_count * h.chunks_per_extent;
  if (h.materialized > chunks || h.size > chunks * h.per_chunk) {
    co_return InvalidArgument(
        fmt::format("far container '{}': its manifest's size and extents "
                    "disagree",
                    name));
  }
  extents_.clear();
  for (uint64_t x = 0; x < h.extent_count; ++x) {
    uint64_t packed;
    std::memcpy(&packed, bytes.data() + kHeaderBytes + x * sizeof(packed), sizeof(packed));
    extents_.push_back(GlobalAddress::unpack(packed));
  }
  synced_ = {h.size, h.materialized};
  co_return OkStatus();
}

Task<Result<GlobalAddress>> NamedStore::add_extent(uint16_t node, uint64_t bytes) {
  if (extents_.size() >= kMaxExtents) {
    co_return ResourceExhausted(
        fmt::format("far container '{}' has its {} extents", object_.name(), kMaxExtents));
  }
  auto x = co_await client_->allocate_on(node, bytes, 64, object_.owner(node));
  FARMEM_CO_TRY(x);
  // The slot first, then the count that names it.
  const uint64_t packed = x->pack();
  const uint64_t slot = kHeaderBytes + extents_.size() * sizeof(packed);
  Status s = co_await ds::durable_write(client_, manifest_ + slot, &packed, sizeof(packed));
  const uint64_t count = extents_.size() + 1;
  if (s.ok()) {
    s = co_await ds::durable_write(client_, manifest_ + offsetof(NamedManifestHeader, extent_count),
                                   &count, sizeof(count));
  }
  if (!s.ok()) {
    (void)co_await client_->free_on(*x);
    co_return s;
  }
  extents_.push_back(*x);
  co_return *x;
}

Task<Status> NamedStore::commit(Synced synced) {
  const uint64_t words[2] = {synced.size, synced.materialized};
  Status s = co_await ds::durable_write(client_, manifest_ + offsetof(NamedManifestHeader, size),
                                        words, sizeof(words));
  if (s.ok()) synced_ = synced;
  co_return s;
}

Task<Status> NamedStore::destroy(client::ThreadClient* c, std::string name) {
  Status s = co_await ds::FarObject::destroy_named(
      c, object_name(name), fmt::format("no far container named '{}'", name));
  co_return s;
}

}  // namespace farmem::far
