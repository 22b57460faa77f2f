#include "farmem/txn/table.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "farmem/client/cluster.h"
#include "farmem/ds/common/durable.h"

namespace farmem::txn {

using runtime::Task;

namespace {

constexpr uint64_t kZeroChunk = 256 << 10;  // bytes per write when zeroing a bucket array

std::string root_name(const std::string& name) { return "txn/" + name; }

std::vector<uint16_t> sorted_nodes(client::ThreadClient* c) {
  std::vector<uint16_t> ids;
  for (const auto& n : c->cluster().nodes()) ids.push_back(n.node_id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

Status check_options(const TableOptions& o, size_t nodes) {
  if (o.record_bytes == 0 || o.record_bytes > kMaxRecordBytes) {
    return InvalidArgument(
        fmt::format("record_bytes must be 1..{}, not {}", kMaxRecordBytes, o.record_bytes));
  }
  if (o.capacity == 0 || o.capacity > (1ull << 32)) {
    return InvalidArgument("capacity must be 1..2^32 records");
  }
  if (nodes == 0 || nodes > kMaxNodes) {
    return InvalidArgument(fmt::format("a table spans 1..{} nodes, not {}", kMaxNodes, nodes));
  }
  if (o.replicas > nodes) {
    return InvalidArgument(
        fmt::format("{} replicas need as many memory nodes; there are {}", o.replicas, nodes));
  }
  return OkStatus();
}

Task<Status> zero_fill(client::ThreadClient* c, GlobalAddress base, uint64_t bytes) {
  std::vector<char> zeros(std::min(bytes, kZeroChunk), 0);
  for (uint64_t done = 0; done < bytes; done += zeros.size()) {
    const uint64_t n = std::min<uint64_t>(zeros.size(), bytes - done);
    Status s = co_await ds::durable_write(c, base + done, zeros.data(), n);
    FARMEM_CO_TRY(s);
  }
  co_return OkStatus();
}

}  // namespace

uint64_t bucket_count(uint64_t capacity, uint64_t nodes) {
  // P(X > kSlotsPerBucket) for X ~ Poisson(lambda), summed term by term (no cancellation).
  auto overflow = [](double lambda) {
    double term = std::exp(-lambda), sum = 0;
    for (uint32_t k = 1; k <= 4 * kSlotsPerBucket + 64; ++k) {
      term *= lambda / k;
      if (k > kSlotsPerBucket) sum += term;
    }
    return sum;
  };
  uint64_t b = std::max<uint64_t>(1, (capacity + 3) / 4);
  while (static_cast<double>(b) * overflow(static_cast<double>(capacity) / b) >= 0.01) {
    b += std::max<uint64_t>(1, b / 16);
  }
  return std::max(nodes, b);
}

Task<Result<Table>> Table::create(client::ThreadClient* c, std::string name, TableOptions o) {
  if (name.empty()) co_return InvalidArgument("a table needs a name");
  const std::vector<uint16_t> ids = sorted_nodes(c);
  FARMEM_CO_TRY(check_options(o, ids.size()));
  auto object = co_await ds::FarObject::create(c, root_name(name), o.temporary);
  if (!object.ok()) {
    if (object.status().code() == StatusCode::kAlreadyExists) {
      co_return AlreadyExists(fmt::format("a table named '{}' already exists", name));
    }
    co_return object.status();
  }
  Table t;
  t.name_ = name;
  t.object_ = std::move(*object);
  const uint64_t n = ids.size();
  TableMeta& m = t.meta_;
  m.magic = kTableMagic;
  m.layout_version = kLayoutVersion;
  m.record_bytes = o.record_bytes;
  m.buckets = bucket_count(o.capacity, n);
  m.buckets_per_node = (m.buckets + n - 1) / n;
  m.slots_per_bucket = kSlotsPerBucket;
  m.replicas = o.replicas != 0 ? o.replicas : (n >= 2 ? 2 : 1);
  m.node_count = static_cast<uint32_t>(n);
  m.bucket_bytes = static_cast<uint32_t>(txn::bucket_bytes(o.record_bytes));
  m.seed = XXH3_64bits(name.data(), name.size());
  const uint64_t array_bytes = uint64_t{m.replicas} * m.buckets_per_node * m.bucket_bytes;
  Status st;
  for (uint16_t node : ids) {
    auto a = co_await c->allocate_on(node, array_bytes, 4096, t.object_.owner(node));
    if (!a.ok()) {
      st = a.status();
      break;
    }
    t.bases_.push_back(*a);
    st = co_await zero_fill(c, *a, array_bytes);
    if (!st.ok()) break;
  }
  GlobalAddress meta_addr;
  if (st.ok()) {
    std::vector<uint64_t> image(sizeof(TableMeta) / 8 + n);
    std::memcpy(image.data(), &m, sizeof(m));
    for (uint64_t i = 0; i < n; ++i) image[sizeof(TableMeta) / 8 + i] = t.bases_[i].pack();
    auto a =
        co_await c->allocate_on(ids.front(), image.size() * 8, 64, t.object_.owner(ids.front()));
    st = a.status();
    if (a.ok()) {
      meta_addr = *a;
      st = co_await ds::durable_write(c, meta_addr, image.data(), image.size() * 8);
    }
  }
  t.meta_address_ = meta_addr;
  if (st.ok()) st = co_await t.object_.commit(c, meta_addr);
  if (!st.ok()) {
    (void)co_await t.object_.destroy(c);  // nothing of a failed create stays behind
    co_return st;
  }
  co_return t;
}

Task<Result<Table>> Table::open(client::ThreadClient* c, std::string name) {
  auto root = co_await c->lookup_root(root_name(name));
  if (!root.ok()) {
    if (root.status().code() == StatusCode::kNotFound) {
      co_return NotFound(fmt::format("no transactional table named '{}'", name));
    }
    co_return root.status();
  }
  Table t;
  t.name_ = name;
  t.meta_address_ = *root;
  Status rs = co_await c->read(*root, &t.meta_, sizeof(t.meta_));
  FARMEM_CO_TRY(rs);
  const TableMeta& m = t.meta_;
  if (m.magic != kTableMagic) {
    co_return InvalidArgument(fmt::format("root '{}' is not a transactional table", name));
  }
  const uint64_t nodes = c->cluster().nodes().size();
  if (m.layout_version != kLayoutVersion || m.node_count == 0 || m.node_count != nodes ||
      m.record_bytes == 0 || m.record_bytes > kMaxRecordBytes || m.replicas == 0 ||
      m.replicas > m.node_count || m.buckets == 0 ||
      m.bucket_bytes != txn::bucket_bytes(m.record_bytes) ||
      m.buckets_per_node != (m.buckets + m.node_count - 1) / m.node_count ||
      (m.node_count < 64 && (m.failed_nodes >> m.node_count) != 0)) {
    t.meta_ = TableMeta{};
    co_return InvalidArgument(fmt::format(
        "table '{}' has layout version {} over {} nodes; this client reads version {} over {}",
        name, m.layout_version, m.node_count, kLayoutVersion, nodes));
  }
  std::vector<uint64_t> bases(m.node_count);
  rs = co_await c->read(*root + sizeof(TableMeta), bases.data(), 8 * bases.size());
  FARMEM_CO_TRY(rs);
  for (uint64_t b : bases) t.bases_.push_back(GlobalAddress::unpack(b));
  auto object = co_await ds::FarObject::open(c, root_name(name));
  FARMEM_CO_TRY(object);
  t.object_ = std::move(*object);
  co_return t;
}

Status Table::check_bucket(uint64_t b) const {
  if (primary_rank(b) < meta_.replicas) return OkStatus();
  return Unavailable(fmt::format(
      "bucket {} of table '{}' has no replica left: the nodes of all {} replicas failed", b, name_,
      meta_.replicas));
}

Task<Status> Table::refresh(client::ThreadClient* c) {
  if (!valid()) co_return InvalidArgument("unknown table (not created or opened)");
  uint64_t failed = 0;
  Status s =
      co_await c->read(meta_address_ + offsetof(TableMeta, failed_nodes), &failed, sizeof(failed));
  FARMEM_CO_TRY(s);
  meta_.failed_nodes = failed;
  co_return OkStatus();
}

Task<Status> Table::destroy(client::ThreadClient* c) {
  if (!object_.valid()) {
    Status s = co_await ds::FarObject::destroy_named(
        c, root_name(name_), fmt::format("no transactional table named '{}'", name_));
    co_return s;
  }
  Status s = co_await object_.destroy(c);
  meta_ = TableMeta{};
  co_return s;
}

}  // namespace farmem::txn
