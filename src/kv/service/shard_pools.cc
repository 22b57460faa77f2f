// Shard (shard.h): the pool requests: create, open, close, delete, configure, info, list,
// shard statistics; and making and removing pools and their handles.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "farmem/common/check.h"
#include "farmem/memnode/node_state.h"
#include "node_heap_source.h"
#include "shard.h"

namespace farmem::kv::service {

namespace w = farmem::kv::wire;
using memnode::Request;

namespace {

// Pools per shard: as many as a handle's slot field can name.
constexpr uint64_t kMaxSlots = w::kPoolSlotMask + 1;
static_assert(kMaxSlots == uint64_t{1} << 24);

std::string object_name(std::string_view pool) {
  return std::string(kPoolObjectPrefix) + std::string(pool);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Pools

Result<ServerPool*> Shard::make_pool(const PoolNameRequest& req, uint64_t now_ns) {
  memnode::NodeState& node = *context_.node;
  if (req.fixed.capacity_bytes > node.region_bytes) {
    return InvalidArgument(fmt::format("pool capacity {} is above the node's region of {} bytes",
                                       req.fixed.capacity_bytes, node.region_bytes));
  }
  const std::string name(req.name);
  auto summary = std::make_shared<PoolSummary>();
  FARMEM_TRY(enter_directory(name, summary));
  auto object_id = create_pool_object(name);
  if (!object_id.ok()) {
    leave_directory(name);
    return object_id.status();
  }
  const bool temporary = (req.fixed.flags & w::kPoolTemporary) != 0;
  auto p =
      install_pool(name, *object_id, req.fixed.capacity_bytes, summary, temporary,
                   [&](ServerPool& pool) { return pool.init(req.fixed.expected_count, now_ns); });
  if (!p.ok()) {
    destroy_pool_object(*object_id);
    leave_directory(name);
  }
  return p;
}

Result<ServerPool*> Shard::install_pool(const std::string& name, uint64_t object_id,
                                        uint64_t capacity_bytes,
                                        std::shared_ptr<PoolSummary> summary, bool temporary,
                                        const std::function<Status(ServerPool&)>& setup) {
  const uint32_t slot = take_slot();
  Slot& s = slots_[slot];
  if (++s.generation == 0) s.generation = 1;
  const uint64_t handle = w::make_pool_handle(context_.worker_index, slot, s.generation);
  s.pool = std::make_unique<ServerPool>(
      name, handle, object_id, capacity_bytes, region_,
      std::make_unique<NodeHeapSource>(*context_.node, object_id, [this] { flush(); }), versions_,
      grace_ns_, std::move(summary));
  if (durable()) s.pool->make_durable(&dirty_, temporary);
  if (Status st = setup(*s.pool); !st.ok()) {
    s.pool.reset();
    free_slots_.push_back(slot);
    return st;
  }
  by_name_[name] = slot;
  refresh_gauges();
  return s.pool.get();
}

Status Shard::enter_directory(const std::string& name, std::shared_ptr<PoolSummary> summary) {
  std::lock_guard<std::mutex> lock(shared_.mu);
  if (shared_.directory.size() >= w::kMaxPoolsPerNode) {
    return ResourceExhausted(
        fmt::format("the node holds {} pools, its maximum", w::kMaxPoolsPerNode));
  }
  shared_.directory.emplace(name, std::move(summary));
  return OkStatus();
}

void Shard::leave_directory(const std::string& name) {
  std::lock_guard<std::mutex> lock(shared_.mu);
  shared_.directory.erase(name);
}

Result<uint64_t> Shard::create_pool_object(const std::string& name) {
  memnode::NodeState& node = *context_.node;
  std::lock_guard<std::mutex> lock(node.mu);
  auto o = node.objects.create(object_name(name), 0, /*pinned=*/true);
  if (!o.ok()) {
    if (o.status().code() == StatusCode::kAlreadyExists) {
      return AlreadyExists(
          fmt::format("node object '{}' exists and is not a pool", object_name(name)));
    }
    return o.status();
  }
  auto logged = node.log_locked(memnode::NodeRecordKind::kObjectCreate, o->id, 0, 0, o->name,
                                memnode::kNodeRecordPinned);
  if (!logged.ok()) {
    const Status undone = node.objects.remove(o->id);
    FARMEM_ASSERT(undone.ok(), "an object just made cannot be removed");
    return logged.status();
  }
  return o->id;
}

void Shard::destroy_pool_object(uint64_t object_id) {
  std::lock_guard<std::mutex> lock(context_.node->mu);
  if (auto logged =
          context_.node->commit_locked(memnode::NodeRecordKind::kObjectDestroy, object_id);
      !logged.ok()) {
    write_failure(logged.status());  // the object (and the pool's memory) stays
  }
}

uint32_t Shard::take_slot() {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  FARMEM_ASSERT(slot < kMaxSlots && slots_[slot].pool == nullptr,
                "a pool takes a free slot a handle can name");
  return slot;
}

void Shard::open_handle(ServerPool* pool, uint64_t session, bool writable) {
  pool->open(session, writable);
  session_pools_[session].insert(w::pool_slot(pool->handle()));
  refresh_gauges();
  if (hooks_) hooks_->on_pool_event(*pool, PoolEvent::kOpen, session);
}

Status Shard::create(const Request& r, Out* out) {
  auto req = parse_pool_request(r.payload, w::KvOpcode::kPoolCreate);
  FARMEM_TRY(req);
  if (slots_.size() >= kMaxSlots && free_slots_.empty()) {
    return ResourceExhausted("this shard has no pool slot left");
  }
  ServerPool* p = pool_by_name(req->name);
  bool created = false;
  if (p != nullptr) {
    if (req->fixed.flags & w::kPoolCreateOnly) {
      return AlreadyExists(fmt::format("pool '{}' exists", req->name));
    }
  } else {
    auto made = make_pool(*req, context_.now_ns());
    FARMEM_TRY(made);
    p = *made;
    created = true;
    if (req->fixed.flags & w::kPoolTemporary) temporary_[p->handle()] = r.session;
  }
  open_handle(p, r.session, (req->fixed.flags & w::kPoolReadOnly) == 0);
  append(out,
         w::KvPoolReply{p->handle(), p->capacity_bytes(), created ? w::kPoolReplyCreated : 0u, 0});
  return OkStatus();
}

Status Shard::open(const Request& r, Out* out) {
  auto req = parse_pool_request(r.payload, w::KvOpcode::kPoolOpen);
  FARMEM_TRY(req);
  ServerPool* p = pool_by_name(req->name);
  if (p == nullptr) return NotFound(fmt::format("no pool named '{}'", req->name));
  open_handle(p, r.session, (req->fixed.flags & w::kPoolReadOnly) == 0);
  append(out, w::KvPoolReply{p->handle(), p->capacity_bytes(), 0, 0});
  return OkStatus();
}

void Shard::forget_session_pool(uint64_t session, ServerPool* pool) {
  auto it = session_pools_.find(session);
  if (it == session_pools_.end()) return;
  it->second.erase(w::pool_slot(pool->handle()));
  if (it->second.empty()) session_pools_.erase(it);
  refresh_gauges();
}

Status Shard::close(const Request& r) {
  auto handle = parse_pool_ref(r.payload, "close");
  FARMEM_TRY(handle);
  auto p = open_pool(*handle, r.session);
  FARMEM_TRY(p);
  (*p)->close(r.session);
  if (!(*p)->is_open(r.session)) {
    (*p)->release_all(r.session, context_.now_ns());
    forget_session_pool(r.session, *p);
  }
  if (hooks_) hooks_->on_pool_event(**p, PoolEvent::kClose, r.session);
  return OkStatus();
}

void Shard::remove_pool(ServerPool* pool) {
  // A copy: the pool (and its name) goes before the name's last use.
  const std::string name = pool->name();  // NOLINT(performance-unnecessary-copy-initialization)
  const uint32_t slot = w::pool_slot(pool->handle());
  const uint64_t object_id = pool->object_id();
  FARMEM_ASSERT(slot < slots_.size() && slots_[slot].pool.get() == pool,
                "a pool's handle names its slot");
  for (auto it = session_pools_.begin(); it != session_pools_.end();) {
    it->second.erase(slot);
    it = it->second.empty() ? session_pools_.erase(it) : std::next(it);
  }
  temporary_.erase(pool->handle());
  slots_[slot].pool.reset();
  free_slots_.push_back(slot);
  by_name_.erase(name);
  destroy_pool_object(object_id);
  leave_directory(name);
  refresh_gauges();
}

Status Shard::destroy(const Request& r) {
  auto req = parse_pool_request(r.payload, w::KvOpcode::kPoolDelete);
  FARMEM_TRY(req);
  ServerPool* p = pool_by_name(req->name);
  if (p == nullptr) return NotFound(fmt::format("no pool named '{}'", req->name));
  if (p->open_by_others(r.session)) {
    return Busy(fmt::format("pool '{}' is open in {} handle(s) of other sessions", req->name,
                            p->open_handles()));
  }
  if (hooks_) hooks_->on_pool_event(*p, PoolEvent::kDelete, r.session);
  remove_pool(p);
  return OkStatus();
}

Status Shard::configure(const Request& r) {
  auto v = parse_configure(r.payload);
  FARMEM_TRY(v);
  auto p = writable_pool(v->fixed.pool, r.session);
  FARMEM_TRY(p);
  auto c = parse_configure_command(v->command);
  FARMEM_TRY(c);
  ServerPool& pool = **p;
  using Kind = ConfigureCommand::Kind;
  AdoSettings ado = pool.ado();
  switch (c->kind) {
    case Kind::kAddIndex:
      pool.add_index();
      return OkStatus();
    case Kind::kRemoveIndex:
      pool.remove_index();
      return OkStatus();
    case Kind::kAdoPlugins:
      ado.plugins = c->list;
      break;
    case Kind::kAdoParam:
      if (ado.params.size() >= 256 && ado.params.count(c->key) == 0) {
        return ResourceExhausted("a pool keeps at most 256 ADO parameters");
      }
      ado.params[c->key] = c->value;
      break;
    case Kind::kAdoSignals:
      ado.post_put = std::count(c->list.begin(), c->list.end(), "post-put") > 0;
      ado.post_get = std::count(c->list.begin(), c->list.end(), "post-get") > 0;
      ado.post_erase = std::count(c->list.begin(), c->list.end(), "post-erase") > 0;
      break;
  }
  FARMEM_TRY(pool.set_ado(std::move(ado)));
  if (hooks_) hooks_->on_pool_event(pool, PoolEvent::kConfigured, r.session);
  return OkStatus();
}

Status Shard::info(const Request& r, Out* out) {
  auto handle = parse_pool_ref(r.payload, "info");
  FARMEM_TRY(handle);
  auto p = open_pool(*handle, r.session);
  FARMEM_TRY(p);
  const ServerPool& pool = **p;
  w::KvPoolInfo i{};
  i.pool = pool.handle();
  i.count = pool.count();
  i.used_bytes = pool.used_bytes();
  i.capacity_bytes = pool.capacity_bytes();
  i.index_slots = pool.index_slots();
  i.open_handles = pool.open_handles();
  i.flags =
      (pool.secondary() ? w::kPoolHasIndex : 0u) | (pool.ado().configured() ? w::kPoolHasAdo : 0u);
  i.write_epoch_ns = pool.write_epoch_ns();
  append(out, i);
  return OkStatus();
}

Status Shard::list(const Request& r, Out* out) {
  auto req = parse_list(r.payload);
  FARMEM_TRY(req);
  w::KvListReply head{0, 0};
  out->append(sizeof(head), '\0');
  std::lock_guard<std::mutex> lock(shared_.mu);
  head.total = static_cast<uint32_t>(shared_.directory.size());
  uint32_t index = 0;
  for (const auto& [name, s] : shared_.directory) {
    if (index++ < req->start) continue;
    const size_t need = sizeof(w::KvListEntry) + pad8(name.size());
    if (out->size() + need > farmem::wire::kMaxRpcPayloadBytes) break;
    w::KvListEntry e{};
    e.capacity_bytes = s->capacity_bytes.load(std::memory_order_relaxed);
    e.used_bytes = s->used_bytes.load(std::memory_order_relaxed);
    e.count = s->count.load(std::memory_order_relaxed);
    e.open_handles = s->open_handles.load(std::memory_order_relaxed);
    e.name_bytes = static_cast<uint32_t>(name.size());
    append(out, e);
    append_padded(out, name.data(), name.size());
    ++head.entries;
  }
  std::memcpy(out->data(), &head, sizeof(head));
  return OkStatus();
}

Status Shard::shard_stats(const Request& r, Out* out) {
  if (!r.payload.empty()) return InvalidArgument("shard stats request takes no payload");
  const uint32_t n = std::min<uint32_t>(context_.worker_count, shared_.counters.size());
  append(out, w::KvShardStatsReply{n, 0});
  for (uint32_t i = 0; i < n; ++i) {
    const ShardCounters& c = shared_.counters[i];
    w::KvShardStats s{};
    s.puts = c.puts.load(std::memory_order_relaxed);
    s.gets = c.gets.load(std::memory_order_relaxed);
    s.erases = c.erases.load(std::memory_order_relaxed);
    s.locates = c.locates.load(std::memory_order_relaxed);
    s.ado_invocations = c.ado_invocations.load(std::memory_order_relaxed);
    s.failures = c.failures.load(std::memory_order_relaxed);
    s.clients = c.clients.load(std::memory_order_relaxed);
    s.pools = c.pools.load(std::memory_order_relaxed);
    s.coalesced_ops = c.coalesced_ops.load(std::memory_order_relaxed);
    s.ops_messages = c.ops_messages.load(std::memory_order_relaxed);
    append(out, s);
  }
  return OkStatus();
}

}  // namespace farmem::kv::service
