#include "shard.h"

#include <fmt/format.h>
#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "farmem/common/log.h"
#include "farmem/memnode/node_state.h"

namespace farmem::kv::service {

namespace w = farmem::kv::wire;
using memnode::Request;
using memnode::Responder;

namespace {

constexpr uint32_t kMaxSlots = 1u << 24;

// Heap blocks owned by the pool's node object.
class NodeHeapSource final : public MemorySource {
 public:
  NodeHeapSource(memnode::NodeState& node, uint64_t owner) : node_(node), owner_(owner) {}
  Result<Block> take(uint64_t bytes) override {
    std::lock_guard<std::mutex> lock(node_.mu);
    auto b = node_.heap.allocate(bytes, 64, owner_);
    FARMEM_TRY(b);
    return Block{b->offset, b->bytes};
  }
  void give_back(uint64_t offset) override {
    std::lock_guard<std::mutex> lock(node_.mu);
    (void)node_.heap.free(offset, 0);
  }

 private:
  memnode::NodeState& node_;
  uint64_t owner_;
};

template <typename T>
void append(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void append_padded(std::string* out, const void* data, size_t n) {
  out->append(static_cast<const char*>(data), n);
  out->append(pad8(n) - n, '\0');
}

std::string object_name(std::string_view pool) { return "kv/" + std::string(pool); }

}  // namespace

uint32_t shard_of(std::string_view name, uint32_t workers) {
  return static_cast<uint32_t>(XXH3_64bits(name.data(), name.size()) % std::max(workers, 1u));
}

Shard::Shard(const memnode::WorkerContext& context, KvShared& shared)
    : context_(context),
      shared_(shared),
      counters_(shared.counters[context.worker_index % shared.counters.size()]),
      region_{context.node->region_base, context.node->region_bytes},
      versions_(shared.next_version),
      grace_ns_(uint64_t{shared.options.record_grace_ms} * 1'000'000) {
  if (shared_.options.make_hooks) hooks_ = shared_.options.make_hooks(*this);
}

Shard::~Shard() { hooks_.reset(); }

// ---------------------------------------------------------------------------------------------
// Dispatch

void Shard::handle(Request& r, Responder responder) {
  const auto op = static_cast<w::KvOpcode>(r.header.opcode);
  if (op == w::KvOpcode::kInvokeAdo || op == w::KvOpcode::kInvokePutAdo) {
    return invoke(r, std::move(responder));
  }
  Out out;
  Status s = dispatch(r, &out);
  if (!s.ok()) counters_.failures.fetch_add(1, std::memory_order_relaxed);
  responder.finish(s, out);
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
  const uint64_t slot = (handle >> 32) & 0xFFFFFF;
  const uint32_t generation = static_cast<uint32_t>(handle);
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
// Pools

Result<ServerPool*> Shard::make_pool(const PoolNameRequest& req, uint64_t now_ns) {
  memnode::NodeState& node = *context_.node;
  if (req.fixed.capacity_bytes > node.region_bytes) {
    return InvalidArgument(fmt::format("pool capacity {} is above the node's region of {} bytes",
                                       req.fixed.capacity_bytes, node.region_bytes));
  }
  const std::string name(req.name);
  auto summary = std::make_shared<PoolSummary>();
  {
    std::lock_guard<std::mutex> lock(shared_.mu);
    if (shared_.directory.size() >= w::kMaxPoolsPerNode) {
      return ResourceExhausted(
          fmt::format("the node holds {} pools, its maximum", w::kMaxPoolsPerNode));
    }
    shared_.directory.emplace(name, summary);
  }
  auto undo_directory = [&] {
    std::lock_guard<std::mutex> lock(shared_.mu);
    shared_.directory.erase(name);
  };
  uint64_t object_id = 0;
  {
    std::lock_guard<std::mutex> lock(node.mu);
    auto o = node.objects.create(object_name(name), 0, /*pinned=*/true);
    if (!o.ok()) {
      undo_directory();
      if (o.status().code() == StatusCode::kAlreadyExists) {
        return AlreadyExists(
            fmt::format("node object '{}' exists and is not a pool", object_name(name)));
      }
      return o.status();
    }
    object_id = o->id;
  }
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  if (++s.generation == 0) s.generation = 1;
  const uint64_t handle =
      (uint64_t{context_.worker_index} << 56) | (uint64_t{slot} << 32) | s.generation;
  s.pool = std::make_unique<ServerPool>(name, handle, object_id, req.fixed.capacity_bytes, region_,
                                        std::make_unique<NodeHeapSource>(node, object_id),
                                        versions_, grace_ns_, summary);
  Status st = s.pool->init(req.fixed.expected_count, now_ns);
  if (!st.ok()) {
    s.pool.reset();
    free_slots_.push_back(slot);
    {
      std::lock_guard<std::mutex> lock(node.mu);
      (void)node.destroy_object_locked(object_id);
    }
    undo_directory();
    return st;
  }
  by_name_[name] = slot;
  refresh_gauges();
  return s.pool.get();
}

void Shard::open_handle(ServerPool* pool, uint64_t session, bool writable) {
  pool->open(session, writable);
  session_pools_[session].insert(static_cast<uint32_t>((pool->handle() >> 32) & 0xFFFFFF));
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
  it->second.erase(static_cast<uint32_t>((pool->handle() >> 32) & 0xFFFFFF));
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
  const std::string name = pool->name();
  const uint32_t slot = static_cast<uint32_t>((pool->handle() >> 32) & 0xFFFFFF);
  const uint64_t object_id = pool->object_id();
  for (auto it = session_pools_.begin(); it != session_pools_.end();) {
    it->second.erase(slot);
    it = it->second.empty() ? session_pools_.erase(it) : std::next(it);
  }
  temporary_.erase(pool->handle());
  slots_[slot].pool.reset();
  free_slots_.push_back(slot);
  by_name_.erase(name);
  {
    std::lock_guard<std::mutex> lock(context_.node->mu);
    (void)context_.node->destroy_object_locked(object_id);
  }
  {
    std::lock_guard<std::mutex> lock(shared_.mu);
    shared_.directory.erase(name);
  }
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
  switch (c->kind) {
    case Kind::kAddIndex:
      pool.add_index();
      return OkStatus();
    case Kind::kRemoveIndex:
      pool.remove_index();
      return OkStatus();
    case Kind::kAdoPlugins:
      pool.ado().plugins = c->list;
      break;
    case Kind::kAdoParam:
      if (pool.ado().params.size() >= 256 && pool.ado().params.count(c->key) == 0) {
        return ResourceExhausted("a pool keeps at most 256 ADO parameters");
      }
      pool.ado().params[c->key] = c->value;
      break;
    case Kind::kAdoSignals:
      pool.ado().post_put = std::count(c->list.begin(), c->list.end(), "post-put") > 0;
      pool.ado().post_get = std::count(c->list.begin(), c->list.end(), "post-get") > 0;
      pool.ado().post_erase = std::count(c->list.begin(), c->list.end(), "post-erase") > 0;
      break;
  }
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

// ---------------------------------------------------------------------------------------------
// Key operations

Status Shard::ops(const Request& r, Out* out) {
  w::KvOpsHeader h;
  std::vector<OpView> list;
  FARMEM_TRY(parse_ops(r.payload, &h, &list));
  auto p = open_pool(h.pool, r.session);
  FARMEM_TRY(p);
  ServerPool& pool = **p;
  const bool writable = pool.writable(r.session);
  counters_.ops_messages.fetch_add(1, std::memory_order_relaxed);
  counters_.coalesced_ops.fetch_add(list.size(), std::memory_order_relaxed);
  const uint64_t now = context_.now_ns();
  out->reserve(sizeof(w::KvOpsReplyHeader) + list.size() * sizeof(w::KvOpReply));
  append(out, w::KvOpsReplyHeader{static_cast<uint32_t>(list.size()), 0});
  for (size_t i = 0; i < list.size(); ++i) {
    const OpView& op = list[i];
    w::KvOpReply rep{};
    KeyInfo info;
    Status s;
    const void* value = nullptr;
    switch (static_cast<w::KvOp>(op.op.op)) {
      case w::KvOp::kGet: {
        counters_.gets.fetch_add(1, std::memory_order_relaxed);
        s = pool.check_readable(op.key, r.session);
        if (!s.ok()) break;
        auto k = pool.lookup(op.key);
        if (!k.ok()) {
          s = k.status();
          break;
        }
        info = *k;
        rep.value_bytes = info.value_bytes;
        // What the ops after this one need, at the least, must stay free.
        const size_t rest = (list.size() - i - 1) * sizeof(w::KvOpReply);
        const size_t room = farmem::wire::kMaxRpcPayloadBytes - out->size() - sizeof(rep) - rest;
        if (pad8(info.value_bytes) > room) {
          rep.flags |= w::kReplyNeedsLocate;
        } else {
          value = region_.at(info.value);
        }
        if (hooks_ && pool.ado().post_get) signal(pool, KeySignal::kPostGet, op.key);
        break;
      }
      case w::KvOp::kPut: {
        counters_.puts.fetch_add(1, std::memory_order_relaxed);
        if (!writable) {
          s = PermissionDenied("pool is open read-only");
          break;
        }
        bool existed = false;
        s = pool.put(op.key, op.value.data(), static_cast<uint32_t>(op.value.size()), op.op.flags,
                     now, &info, &existed);
        if (s.ok()) {
          rep.value_bytes = info.value_bytes;
          if (existed) rep.flags |= w::kReplyExisted;
          if (!existed && hooks_ && pool.ado().post_put) signal(pool, KeySignal::kPostPut, op.key);
        }
        break;
      }
      case w::KvOp::kErase:
        counters_.erases.fetch_add(1, std::memory_order_relaxed);
        if (!writable) {
          s = PermissionDenied("pool is open read-only");
          break;
        }
        s = pool.erase(op.key, now);
        if (s.ok() && hooks_ && pool.ado().post_erase) signal(pool, KeySignal::kPostErase, op.key);
        break;
    }
    rep.status = static_cast<int32_t>(s.code());
    if (s.ok() && static_cast<w::KvOp>(op.op.op) != w::KvOp::kErase) {
      rep.record = info.record;
      rep.version = info.version;
      rep.record_bytes = static_cast<uint32_t>(info.record_bytes());
    } else if (!s.ok() && s.code() != StatusCode::kNotFound &&
               s.code() != StatusCode::kAlreadyExists) {
      counters_.failures.fetch_add(1, std::memory_order_relaxed);
    }
    append(out, rep);
    if (value != nullptr) append_padded(out, value, info.value_bytes);
  }
  return OkStatus();
}

void Shard::signal(ServerPool& pool, KeySignal s, std::string_view key) {
  hooks_->on_key_signal(pool, s, key);
}

Status Shard::locate(const Request& r, Out* out) {
  auto v = parse_locate(r.payload);
  FARMEM_TRY(v);
  const auto mode = static_cast<w::LocateMode>(v->fixed.mode);
  auto p = mode == w::LocateMode::kRead ? open_pool(v->fixed.pool, r.session)
                                        : writable_pool(v->fixed.pool, r.session);
  FARMEM_TRY(p);
  counters_.locates.fetch_add(1, std::memory_order_relaxed);
  auto g = (*p)->lock(r.session, v->key, mode, v->fixed.offset, v->fixed.length, v->fixed.flags,
                      context_.now_ns());
  FARMEM_TRY(g);
  append(out, w::KvLocateReply{g->token, g->address, g->length, g->value_bytes});
  return OkStatus();
}

Status Shard::release(const Request& r) {
  auto v = parse_release(r.payload);
  FARMEM_TRY(v);
  auto p = open_pool(v->pool, r.session);
  FARMEM_TRY(p);
  return (*p)->release(r.session, v->token, v->flags, context_.now_ns());
}

Status Shard::find(const Request& r, Out* out) {
  auto v = parse_find(r.payload);
  FARMEM_TRY(v);
  auto p = open_pool(v->fixed.pool, r.session);
  FARMEM_TRY(p);
  const SecondaryIndex* index = (*p)->secondary();
  if (index == nullptr) return InvalidArgument("pool has no secondary index");
  auto f = index->find(v->expression, v->fixed.start);
  FARMEM_TRY(f);
  append(out, w::KvFindReply{f->position, static_cast<uint32_t>(f->key.size()),
                             f->more ? w::kFindMore : 0u});
  out->append(f->key);
  return OkStatus();
}

Status Shard::attribute(const Request& r, Out* out) {
  auto v = parse_attribute(r.payload);
  FARMEM_TRY(v);
  auto p = open_pool(v->fixed.pool, r.session);
  FARMEM_TRY(p);
  ServerPool& pool = **p;
  uint64_t value = 0;
  if (v->per_key) {
    FARMEM_TRY(pool.check_readable(v->key, r.session));
    auto k = pool.lookup(v->key);
    FARMEM_TRY(k);
    switch (static_cast<w::Attribute>(v->fixed.attribute)) {
      case w::Attribute::kValueLength:
        value = k->value_bytes;
        break;
      case w::Attribute::kCrc32:
        value = crc32_z(0, region_.at(k->value), k->value_bytes);
        break;
      default:
        value = k->write_epoch_ns;
        break;
    }
  } else {
    switch (static_cast<w::Attribute>(v->fixed.attribute)) {
      case w::Attribute::kCount:
        value = pool.count();
        break;
      case w::Attribute::kUsedBytes:
        value = pool.used_bytes();
        break;
      default:
        value = pool.capacity_bytes();
        break;
    }
  }
  append(out, w::KvAttributeReply{value});
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
}

uint64_t Shard::wake_at_ns() const { return hooks_ ? hooks_->wake_at_ns() : 0; }

}  // namespace farmem::kv::service
