// HashTable: the table object (creating, opening and destroying a table, its metadata and
// options) and the key hash. Operations are in directory.cc, lookup.cc, get.cc, insert.cc,
// update.cc and split.cc; the state their steps share is in op_context.h,
// the geometry helpers in geometry.h.
#include "farmem/ds/hash/hash_table.h"

#include <fmt/format.h>

#include "farmem/ds/common/durable.h"
// XXH3 compiled into this file (xxhash's header-only mode): every operation hashes its key,
// a few bytes, where the call into the shared library costs about as much as the hashing.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "farmem/client/cluster.h"
#include "farmem/common/check.h"
#include "farmem/common/clock.h"
#include "geometry.h"
#include "op_context.h"

namespace farmem::ds::hash {

using runtime::Task;

KeyHash hash_key(std::string_view key) {
  XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  return KeyHash{h.low64, h.high64};
}

namespace {

std::string root_name(const std::string& name) { return "hash/" + name; }

}  // namespace

std::string subtable_image(uint32_t main_log2, uint32_t depth, uint32_t suffix) {
  std::string image(subtable_bytes(main_log2), '\0');
  SubtableHeader sh{};
  sh.local_depth = depth;
  sh.suffix = suffix;
  std::memcpy(image.data(), &sh, sizeof(sh));
  Bucket bk{};
  bk.local_depth = depth;
  bk.suffix = suffix;
  for (uint64_t b = 0; b < subtable_buckets(main_log2); ++b) {
    std::memcpy(image.data() + sizeof(SubtableHeader) + b * kBucketBytes, &bk, sizeof(bk));
  }
  return image;
}

HashTable::HashTable(client::ThreadClient* client, HashTableOptions options, FarObject object)
    : client_(client),
      options_(options),
      object_(std::move(object)),
      heap_(client, &object_, client->cluster().config().options.chunk_bytes),
      reclaimer_(
          client, &heap_,
          options.retire_grace_ms != 0
              ? options.retire_grace_ms * 1'000'000
              : Reclaimer::default_grace_ns(client->cluster().config().options.op_timeout_ms),
          options.max_retired),
      spec_(options.speculative_lookup ? static_cast<int>(options.spec_cache_log2) : -1) {
  // A quarter of the grace period, in whole nanoseconds (the rounding is far below a cycle's
  // worth of precision that matters here), then in TSC cycles.
  const uint64_t check_interval_ns = grace_ns() / 4;
  check_interval_cycles_ =
      static_cast<uint64_t>(static_cast<double>(check_interval_ns) * cycles_per_ns());
}

HashTable::~HashTable() = default;

const HashStats& HashTable::stats() const {
  stats_.retired = reclaimer_.stats().retired;
  stats_.reclaimed = reclaimer_.stats().reclaimed;
  return stats_;
}

Status HashTable::check_sizes(std::string_view key, std::string_view value) const {
  if (key.empty()) return InvalidArgument("empty key");
  if (key.size() > kMaxKeyBytes) {
    return InvalidArgument(
        fmt::format("key of {} bytes exceeds the {}-byte maximum", key.size(), kMaxKeyBytes));
  }
  if (value.size() > kMaxValueBytes) {
    return InvalidArgument(
        fmt::format("value of {} bytes exceeds the {}-byte maximum", value.size(), kMaxValueBytes));
  }
  return OkStatus();
}

// ------------------------------------------------------------------------------------------
// Creation, opening, destruction

namespace {

Status check_create_options(const HashTableOptions& o) {
  if (o.main_buckets_log2 < 2 || o.main_buckets_log2 > 24) {
    return InvalidArgument("main_buckets_log2 must be 2..24");
  }
  if (o.initial_depth > kMaxDepth) {
    return InvalidArgument(fmt::format("initial_depth must be 0..{}", kMaxDepth));
  }
  if (o.max_depth < o.initial_depth || o.max_depth > kMaxDepth) {
    return InvalidArgument(
        fmt::format("max_depth must be initial_depth ({})..{}", o.initial_depth, kMaxDepth));
  }
  if (o.spec_cache_log2 > 30) return InvalidArgument("spec_cache_log2 must be 0..30");
  return OkStatus();
}

std::string table_meta(const HashTableOptions& o, const std::vector<GlobalAddress>& dirs) {
  std::string meta(sizeof(TableMeta) + 8 * dirs.size(), '\0');
  TableMeta m{};
  m.magic = kTableMagic;
  m.version = kLayoutVersion;
  m.shards = static_cast<uint32_t>(dirs.size());
  m.main_buckets_log2 = o.main_buckets_log2;
  m.initial_depth = o.initial_depth;
  m.max_depth = o.max_depth;
  std::memcpy(meta.data(), &m, sizeof(m));
  for (size_t i = 0; i < dirs.size(); ++i) {
    uint64_t a = dirs[i].pack();
    std::memcpy(meta.data() + sizeof(m) + 8 * i, &a, 8);
  }
  return meta;
}

}  // namespace

Task<Status> HashTable::create_shard(client::ThreadClient* c, const FarObject& object,
                                     uint16_t node, const HashTableOptions& o, Shard* s) {
  s->node = node;
  s->global_depth = o.initial_depth;
  const uint64_t owner = object.owner(node);
  for (uint64_t i = 0; i < (1ull << o.initial_depth); ++i) {
    auto sub = co_await c->allocate_on(node, subtable_bytes(o.main_buckets_log2), 4096, owner);
    FARMEM_CO_TRY(sub);
    std::string image =
        subtable_image(o.main_buckets_log2, o.initial_depth, static_cast<uint32_t>(i));
    Status ws = co_await durable_write(c, *sub, image.data(), image.size());
    FARMEM_CO_TRY(ws);
    const uint64_t entry = dir_entry(sub->offset(), o.initial_depth);
    FARMEM_ASSERT(dir_entry_offset(entry) == sub->offset() && o.initial_depth <= kMaxDepth,
                  "a directory entry holds its subtable's offset and a depth within bounds");
    s->entries.push_back(entry);
  }
  std::string dir(sizeof(DirectoryHeader) + (8ull << kMaxDepth), '\0');
  DirectoryHeader dh{};
  dh.global_depth = o.initial_depth;
  std::memcpy(dir.data(), &dh, sizeof(dh));
  std::memcpy(dir.data() + sizeof(dh), s->entries.data(), 8 * s->entries.size());
  auto d = co_await c->allocate_on(node, dir.size(), 4096, owner);
  FARMEM_CO_TRY(d);
  Status ds = co_await durable_write(c, *d, dir.data(), dir.size());
  FARMEM_CO_TRY(ds);
  s->directory = *d;
  s->checked_cycles = cycles();
  co_return OkStatus();
}

Task<Result<std::unique_ptr<HashTable>>> HashTable::create(client::ThreadClient* c,
                                                           std::string name, HashTableOptions o) {
  if (name.empty()) co_return InvalidArgument("a hash table needs a name");
  FARMEM_CO_TRY(check_create_options(o));
  auto object = co_await FarObject::create(c, root_name(name), o.temporary);
  if (!object.ok()) {
    if (object.status().code() == StatusCode::kAlreadyExists) {
      co_return AlreadyExists(fmt::format("a hash table named '{}' already exists", name));
    }
    co_return object.status();
  }
  std::unique_ptr<HashTable> t(new HashTable(c, o, std::move(*object)));
  t->main_buckets_log2_ = o.main_buckets_log2;
  t->max_depth_ = o.max_depth;
  std::vector<uint16_t> ids;
  for (const auto& n : c->cluster().nodes()) ids.push_back(n.node_id);
  std::sort(ids.begin(), ids.end());
  Status st;
  std::vector<GlobalAddress> dirs;
  for (uint16_t node : ids) {
    Shard s;
    st = co_await create_shard(c, t->object_, node, o, &s);
    if (!st.ok()) break;
    dirs.push_back(s.directory);
    t->shards_.push_back(std::move(s));
  }
  GlobalAddress meta_addr;
  if (st.ok()) {
    std::string meta = table_meta(o, dirs);
    auto ma = co_await t->heap_.allocate(ids.front(), meta.size());
    st = ma.status();
    if (ma.ok()) {
      meta_addr = *ma;
      st = co_await durable_write(c, meta_addr, meta.data(), meta.size());
    }
  }
  if (st.ok()) st = co_await t->object_.commit(c, meta_addr);
  if (!st.ok()) {
    (void)co_await t->object_.destroy(c);  // nothing of a failed create stays behind
    co_return st;
  }
  co_return t;
}

Task<Result<std::unique_ptr<HashTable>>> HashTable::open(client::ThreadClient* c, std::string name,
                                                         HashTableOptions o) {
  if (o.spec_cache_log2 > 30) co_return InvalidArgument("spec_cache_log2 must be 0..30");
  auto root = co_await c->lookup_root(root_name(name));
  if (!root.ok()) {
    if (root.status().code() == StatusCode::kNotFound) {
      co_return NotFound(fmt::format("no hash table named '{}'", name));
    }
    co_return root.status();
  }
  TableMeta m{};
  Status rs = co_await c->read(*root, &m, sizeof(m));
  FARMEM_CO_TRY(rs);
  if (m.magic != kTableMagic) {
    co_return InvalidArgument(
        fmt::format("root '{}' does not point to a hash table", root_name(name)));
  }
  if (m.version != kLayoutVersion || m.shards == 0 || m.shards > 65536 || m.main_buckets_log2 < 2 ||
      m.main_buckets_log2 > 24 || m.max_depth > kMaxDepth) {
    co_return InvalidArgument(fmt::format(
        "hash table '{}' has layout version {} with {} shards; this client reads version {}", name,
        m.version, m.shards, kLayoutVersion));
  }
  auto object = co_await FarObject::open(c, root_name(name));
  FARMEM_CO_TRY(object);
  std::unique_ptr<HashTable> t(new HashTable(c, o, std::move(*object)));
  t->main_buckets_log2_ = m.main_buckets_log2;
  t->max_depth_ = m.max_depth;
  std::vector<uint64_t> dirs(m.shards);
  rs = co_await c->read(*root + sizeof(m), dirs.data(), 8 * dirs.size());
  FARMEM_CO_TRY(rs);
  for (uint64_t d : dirs) {
    Shard s;
    s.directory = GlobalAddress::unpack(d);
    s.node = s.directory.node();
    OpContext op(s);
    Status fs = co_await t->refresh_directory(op);
    FARMEM_CO_TRY(fs);
    t->shards_.push_back(std::move(s));
  }
  co_return t;
}

Task<Status> HashTable::destroy() {
  shards_.clear();
  Status s = co_await object_.destroy(client_);
  co_return s;
}

Task<Status> HashTable::destroy(client::ThreadClient* c, std::string name) {
  Status s = co_await FarObject::destroy_named(c, root_name(name),
                                               fmt::format("no hash table named '{}'", name));
  co_return s;
}

Task<void> HashTable::reclaim(bool wait_for_all) { co_await reclaimer_.reclaim(wait_for_all); }

size_t HashTable::subtable_count(uint32_t shard) const {
  std::vector<uint64_t> offsets;
  for (uint64_t e : shards_.at(shard).entries) offsets.push_back(dir_entry_offset(e));
  std::sort(offsets.begin(), offsets.end());
  return static_cast<size_t>(std::unique(offsets.begin(), offsets.end()) - offsets.begin());
}

}  // namespace farmem::ds::hash
