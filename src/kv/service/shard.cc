// Shard (shard.h): dispatch, pool handles and slots, sessions, time. The request handlers are
// in shard_pools.cc (pool lifecycle, configuration, listing) and shard_keys.cc (key
// operations, locks, find, attributes).
#include "shard.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>

#include "farmem/common/check.h"

namespace farmem::kv::service {

namespace w = farmem::kv::wire;
using memnode::Request;
using memnode::Responder;

uint32_t shard_of(std::string_view name, uint32_t workers) {
  return static_cast<uint32_t>(XXH3_64bits(name.data(), name.size()) % std::max(workers, 1u));
}

Shard::Shard(const memnode::WorkerContext& context, KvShared& shared)
    : context_(context),
      shared_(shared),
      counters_(shared.counters[context.worker_index % shared.counters.size()]),
      region_{context.node->region_base, context.node->region_bytes},
      versions_(shared.next_version),
      grace_ns_(uint64_t{shared.options.record_grace_ms} * 1'000'000),
      replies_(context) {
  if (shared_.options.make_hooks) hooks_ = shared_.options.make_hooks(*this);
  if (durable()) {
    dirty_.set_spill([this](const std::vector<DirtyRanges::Range>& r) { take_copies(r); });
    recover_pools();
  }
}

Shard::~Shard() { hooks_.reset(); }

// ---------------------------------------------------------------------------------------------
// Dispatch

void Shard::handle(Request& r, Responder responder) {
  const auto op = static_cast<w::KvOpcode>(r.header.opcode);
  if (op == w::KvOpcode::kInvokeAdo || op == w::KvOpcode::kInvokePutAdo) {
    invoke(r, std::move(responder));  // answered through answer_when_stable
    flush();
    return;
  }
  if (!failed_.ok()) return responder.fail(failed_);
  Out out;
  Status s = dispatch(r, &out);
  const uint64_t lsn = flush();
  if (s.ok() && !failed_.ok()) s = failed_;
  if (!s.ok()) counters_.failures.fetch_add(1, std::memory_order_relaxed);
  replies_.finish(lsn, std::move(responder), s, std::move(out));
}

Status Shard::dispatch(Request& r, Out* out) {
  switch (static_cast<w::KvOpcode>(r.header.opcode)) {
    case w::KvOpcode::kPoolCreate:
      return create(r, out);
    case w::KvOpcode::kPoolOpen:
      return open(r, out);
    case w::KvOpcode::kPoolClose:
      return close(r);
    case w::KvOpcode::kPoolDelete:
      return destroy(r);
    case w::KvOpcode::kPoolConfigure:
      return configure(r);
    case w::KvOpcode::kPoolInfo:
      return info(r, out);
    case w::KvOpcode::kPoolList:
      return list(r, out);
    case w::KvOpcode::kOps:
      return ops(r, out);
    case w::KvOpcode::kLocate:
      return locate(r, out);
    case w::KvOpcode::kRelease:
      return release(r);
    case w::KvOpcode::kFind:
      return find(r, out);
    case w::KvOpcode::kAttribute:
      return attribute(r, out);
    case w::KvOpcode::kShardStats:
      return shard_stats(r, out);
    default:
      return InvalidArgument(fmt::format("unknown kv opcode {}", r.header.opcode));
  }
}

ServerPool* Shard::pool(uint64_t handle) {
  if (w::pool_worker(handle) != context_.worker_index) return nullptr;
  const uint32_t slot = w::pool_slot(handle);
  const uint32_t generation = w::pool_generation(handle);
  if (slot >= slots_.size() || slots_[slot].pool == nullptr ||
      slots_[slot].generation != generation) {
    return nullptr;
  }
  return slots_[slot].pool.get();
}

ServerPool* Shard::pool_by_name(std::string_view name) {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : slots_[it->second].pool.get();
}

Result<ServerPool*> Shard::open_pool(uint64_t handle, uint64_t session) {
  ServerPool* p = pool(handle);
  if (p == nullptr || !p->is_open(session)) {
    return NotFound(fmt::format("pool handle {:#x} is not open in this session", handle));
  }
  return p;
}

Result<ServerPool*> Shard::writable_pool(uint64_t handle, uint64_t session) {
  auto p = open_pool(handle, session);
  if (p.ok() && !(*p)->writable(session)) {
    return PermissionDenied(fmt::format("pool '{}' is open read-only", (*p)->name()));
  }
  return p;
}

void Shard::refresh_gauges() {
  counters_.clients.store(session_pools_.size(), std::memory_order_relaxed);
  counters_.pools.store(by_name_.size(), std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// Active Data Objects

void Shard::invoke(Request& r, Responder responder) {
  w::KvAdoRequest req;
  Status s = read_fixed(r.payload, &req, "ADO");
  ServerPool* pool = nullptr;
  if (s.ok()) {
    auto p = open_pool(req.pool, r.session);
    s = p.status();
    if (p.ok()) pool = *p;
  }
  if (s.ok() && !hooks_) s = Unavailable("no ADO support on this memory node");
  if (s.ok() && !pool->ado().configured()) {
    s = InvalidArgument(
        fmt::format("pool '{}' has no ADO plugins (configure AdoPlugins::)", pool->name()));
  }
  if (!s.ok()) {
    counters_.failures.fetch_add(1, std::memory_order_relaxed);
    return responder.fail(s);
  }
  counters_.ado_invocations.fetch_add(1, std::memory_order_relaxed);
  hooks_->invoke(*pool, r, std::move(responder));
}

// ---------------------------------------------------------------------------------------------
// Sessions, time

void Shard::on_session_end(uint64_t session) {
  auto it = session_pools_.find(session);
  if (it != session_pools_.end()) {
    const auto slots = it->second;
    session_pools_.erase(it);
    for (uint32_t slot : slots) {
      ServerPool* p = slots_[slot].pool.get();
      if (p == nullptr) continue;
      p->release_all(session, context_.now_ns());
      p->close_all(session);
      if (hooks_) hooks_->on_pool_event(*p, PoolEvent::kClose, session);
    }
    refresh_gauges();
  }
  drop_temporary_pools(session);
  if (hooks_) hooks_->on_session_end(session);
  flush();
}

void Shard::drop_temporary_pools(uint64_t session) {
  std::vector<uint64_t> doomed;
  for (const auto& [handle, owner] : temporary_) {
    if (owner == session) doomed.push_back(handle);
  }
  for (uint64_t handle : doomed) {
    ServerPool* p = pool(handle);
    if (p == nullptr) {
      temporary_.erase(handle);
      continue;
    }
    if (hooks_) hooks_->on_pool_event(*p, PoolEvent::kDelete, session);
    remove_pool(p);  // erases it from temporary_
  }
}

void Shard::poll(uint64_t now_ns) {
  if (hooks_) hooks_->poll(now_ns);
  flush();
  replies_.poll();
}

uint64_t Shard::wake_at_ns() const { return hooks_ ? hooks_->wake_at_ns() : 0; }

}  // namespace farmem::kv::service
