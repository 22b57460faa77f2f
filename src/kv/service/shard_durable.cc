// Shard (shard.h) on a durable node: logging what requests changed, and rebuilding pools at
// start from the node's recovered objects and region (docs/formats/kv.md "On a durable memory
// node").
#include <fmt/format.h>

#include <map>

#include "../ado/undo_log.h"
#include "farmem/common/atomic_max.h"
#include "farmem/common/check.h"
#include "farmem/common/log.h"
#include "farmem/storage/journal.h"
#include "shard.h"

namespace farmem::kv::service {

namespace w = farmem::kv::wire;
using memnode::ObjectTable;

namespace {
// A life's versions start at boot << 40: boots stay below 2^16 (NodeState), versions below 2^56.
constexpr int kBootVersionShift = 40;
static_assert(48 - memnode::NodeState::kBootShift + kBootVersionShift <= 64 - w::kRecordStateBits);
// A request's copies are logged early once they hold this much.
constexpr uint64_t kMaxCopiedBytes = 4 << 20;
}  // namespace

void Shard::end_op() {
  if (!dirty_.empty()) take_copies(dirty_.take());
}

void Shard::take_copies(const std::vector<DirtyRanges::Range>& ranges) {
  for (const DirtyRanges::Range& r : ranges) {
    if (!failed_.ok()) return;
    if (r.bytes > storage::Journal::kMaxRangeCopyBytes) {
      // A grown index: logged from the region now (after what was copied before it).
      log_copies();
      auto lsn = context_.node->journal->append_range(r.offset, r.bytes);
      if (!lsn.ok()) return write_failure(lsn.status());
      last_lsn_ = *lsn;
      continue;
    }
    copied_.append(reinterpret_cast<const char*>(region_.at(r.offset)), r.bytes);
    copies_.emplace_back(r.offset, r.bytes);
  }
  if (copied_.size() > kMaxCopiedBytes) log_copies();
}

void Shard::answer_when_stable(memnode::Responder responder, const Status& status,
                               std::string reply) {
  const uint64_t lsn = flush();
  replies_.finish(lsn, std::move(responder), failed_.ok() ? status : failed_, std::move(reply));
}

Status Shard::log_changes() {
  flush();
  return failed_;
}

uint64_t Shard::flush() {
  end_op();
  log_copies();
  return last_lsn_;
}

void Shard::log_copies() {
  if (copies_.empty() || !failed_.ok()) return;
  std::vector<storage::Journal::RangeCopy> ranges;
  ranges.reserve(copies_.size());
  size_t at = 0;
  for (const auto& [offset, bytes] : copies_) {
    ranges.push_back({offset, std::string_view(copied_).substr(at, bytes)});
    at += bytes;
  }
  auto lsn = context_.node->journal->append_ranges(ranges);
  copies_.clear();
  copied_.clear();  // keeps its capacity for the next request
  if (!lsn.ok()) return write_failure(lsn.status());
  last_lsn_ = *lsn;
}

void Shard::write_failure(const Status& status) {
  if (!failed_.ok()) return;
  failed_ = Status(status.code(),
                   fmt::format("kv shard {} stopped taking requests: a change could not be "
                               "logged: {}",
                               context_.worker_index, status.message()));
  log::error("node {}: {}", context_.node->config.node_id, failed_.message());
}

void Shard::recover_pools() {
  memnode::NodeState& node = *context_.node;
  std::map<uint64_t, ObjectTable::Object> mine;  // by object id
  std::map<uint64_t, std::vector<MemorySource::Block>> blocks;
  {
    std::lock_guard<std::mutex> lock(node.mu);
    node.objects.for_each([&](const ObjectTable::Object& o) {
      if (!o.pinned || !o.name.starts_with(kPoolObjectPrefix)) return;
      const std::string_view pool = std::string_view(o.name).substr(kPoolObjectPrefix.size());
      if (shard_of(pool, context_.worker_count) == context_.worker_index) mine[o.id] = o;
    });
    node.heap.for_each([&](uint64_t offset, uint64_t bytes, uint64_t owner) {
      if (mine.count(owner) != 0) blocks[owner].push_back({offset, bytes});
    });
  }
  uint64_t max_version = 0;
  for (auto& [id, object] : mine) {
    const Status s = recover_pool(object, std::move(blocks[id]), &max_version);
    if (!s.ok()) {
      log::error("node {}: kv pool object '{}' kept but not served: {}", node.config.node_id,
                 object.name, s.to_string());
    }
  }
  // Versions of this life start above every version of earlier lives, logged or not (a client's
  // location cache may hold one): at boot << 40, and above what the pools hold.
  uint64_t boot;
  {
    std::lock_guard<std::mutex> lock(node.mu);
    boot = node.boot;
  }
  raise_to(shared_.next_version, std::max(max_version + 1, boot << kBootVersionShift));
  flush();
}

Status Shard::recover_pool(const ObjectTable::Object& object,
                           std::vector<MemorySource::Block> blocks, uint64_t* max_version) {
  memnode::NodeState& node = *context_.node;
  const std::string name = object.name.substr(kPoolObjectPrefix.size());
  std::optional<PoolMeta> meta;
  uint64_t header = 0;
  MemorySource::Block undo;
  Status damaged;  // a block that is this object's header but does not hold
  for (const MemorySource::Block& b : blocks) {
    if (b.bytes < kPoolHeaderBlockBytes || region_.ptr(b.offset, b.bytes) == nullptr) continue;
    if (const uint64_t n = ado::undo_block_bytes(region_.at(b.offset), b.bytes, object.id)) {
      undo = {b.offset, n};
      continue;
    }
    auto m = read_pool_header(region_.at(b.offset), object.id);
    if (!m.ok() && m.status().code() != StatusCode::kNotFound) damaged = m.status();
    if (m.ok() && m->name == name && (!meta || m->sequence > meta->sequence)) {
      meta = std::move(*m);
      header = b.offset;
    }
  }
  if (!meta && !damaged.ok()) return damaged;  // kept (not served), never destroyed
  if (!meta || (meta->flags & kPoolHeaderTemporary) != 0) {
    // Never acknowledged (the node stopped before the pool's creation was logged whole), or a
    // temporary pool whose session is gone: its memory goes back.
    destroy_pool_object(object.id);
    return OkStatus();
  }
  auto summary = std::make_shared<PoolSummary>();
  FARMEM_TRY(enter_directory(name, summary));
  ServerPool::Recovered r;
  auto p = install_pool(
      name, object.id, meta->capacity_bytes, summary, false, [&](ServerPool& pool) -> Status {
        FARMEM_ASSIGN_OR_RETURN(r, pool.recover(*meta, header, undo, std::move(blocks)));
        return OkStatus();
      });
  if (!p.ok()) {
    leave_directory(name);
    return p.status();
  }
  *max_version = std::max(*max_version, r.max_version);
  log::info("node {}: kv pool '{}' recovered: {} keys, {} torn entries dropped",
            node.config.node_id, name, r.keys, r.dropped);
  return OkStatus();
}

}  // namespace farmem::kv::service
