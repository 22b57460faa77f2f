// The control plane of a ThreadClient: RPCs to the memory nodes (rpc), allocation (allocate,
// free, allocate_on, free_on over the thread's ChunkAllocators), named objects, roots, session
// liveness queries and node statistics. Wire formats: docs/formats/control.md.

#include <fmt/format.h>

#include <coroutine>
#include <string>
#include <utility>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/client/thread_client.h"
#include "farmem/fabric/wire.h"
#include "farmem/storage/durability.h"

namespace farmem::client {

namespace w = farmem::wire;
using runtime::Task;

namespace {

// One RPC to one node, counted in ClientCounters::rpcs when it completes.
class RpcAwaitable {
 public:
  RpcAwaitable(ThreadClient* c, fabric::Endpoint* ep, uint16_t opcode, const void* req,
               size_t req_bytes, void* reply, uint32_t cap, uint32_t* reply_bytes)
      : client_(c) {
    completion_.notify = &RpcAwaitable::on_complete;
    completion_.owner = this;
    Status s =
        ep->post_rpc(opcode, req, req_bytes, reply, cap, reply_bytes, &completion_, c->deadline());
    if (!s.ok()) completion_.fail(std::move(s));
  }
  RpcAwaitable(const RpcAwaitable&) = delete;
  bool await_ready() const { return completion_.remaining == 0; }
  void await_suspend(std::coroutine_handle<> h) { handle_ = h; }
  Status await_resume() {
    ++client_->mutable_counters().rpcs;
    return std::move(completion_.status);
  }

 private:
  static void on_complete(fabric::Completion* c) {
    auto* self = static_cast<RpcAwaitable*>(c->owner);
    if (self->handle_) self->client_->scheduler().post(self->handle_);
  }
  ThreadClient* client_;
  fabric::Completion completion_;
  std::coroutine_handle<> handle_;
};

}  // namespace

Task<Status> ThreadClient::rpc(uint16_t node, uint16_t opcode, const void* request,
                               size_t request_bytes, void* reply, uint32_t reply_capacity,
                               uint32_t* reply_bytes) {
  fabric::Endpoint* ep = endpoint(node);
  if (ep == nullptr && cluster_->is_down(node)) co_return cluster_->down_status(node);
  if (ep == nullptr) co_return NotFound(fmt::format("no memory node with id {}", node));
  uint32_t got = 0;
  Status s = co_await RpcAwaitable(this, ep, opcode, request, request_bytes, reply, reply_capacity,
                                   reply_bytes ? reply_bytes : &got);
  co_return s;
}

Task<Result<GlobalAddress>> ThreadClient::allocate_on(uint16_t node, uint64_t bytes,
                                                      uint64_t alignment, uint64_t owner) {
  w::AllocRequest req{bytes, alignment, owner};
  w::AllocResponse resp{};
  uint32_t got = 0;
  FARMEM_CO_TRY(co_await rpc(node, static_cast<uint16_t>(w::Opcode::kAlloc), &req, sizeof(req),
                             &resp, sizeof(resp), &got));
  if (got != sizeof(resp)) co_return ProtocolError("malformed alloc reply");
  co_return GlobalAddress{node, resp.offset};
}

Task<Status> ThreadClient::free_on(GlobalAddress addr) {
  w::FreeRequest req{addr.offset()};
  Status s = co_await rpc(addr.node(), static_cast<uint16_t>(w::Opcode::kFree), &req, sizeof(req),
                          nullptr, 0, nullptr);
  co_return s;
}

Task<Status> ThreadClient::persist(GlobalAddress addr, uint64_t bytes) {
  std::vector<w::PersistRange> ranges{{addr.offset(), bytes}};
  Status s = co_await persist(addr.node(), std::move(ranges));
  co_return s;
}

Task<Status> ThreadClient::persist(uint16_t node, std::vector<w::PersistRange> ranges,
                                   bool ordered) {
  if (ranges.empty() || ranges.size() > w::kMaxPersistRanges) {
    co_return InvalidArgument(
        fmt::format("persist takes 1..{} ranges, got {}", w::kMaxPersistRanges, ranges.size()));
  }
  w::PersistRequest h{static_cast<uint32_t>(ranges.size()), ordered ? w::kPersistOrdered : 0u};
  std::string req(reinterpret_cast<const char*>(&h), sizeof(h));
  req.append(reinterpret_cast<const char*>(ranges.data()), sizeof(w::PersistRange) * ranges.size());
  Status s = co_await rpc(node, static_cast<uint16_t>(w::Opcode::kPersist), req.data(), req.size(),
                          nullptr, 0, nullptr);
  co_return s;
}

Task<Result<GlobalAddress>> ThreadClient::allocate(uint64_t bytes) {
  const auto& nodes = cluster_->nodes();
  size_t i = next_node_++ % nodes.size();
  while (nodes[i].down) i = next_node_++ % nodes.size();  // some node is up (validate())
  uint16_t node = nodes[i].node_id;
  auto r = co_await allocate(bytes, node);
  co_return r;
}

Task<Result<GlobalAddress>> ThreadClient::allocate(uint64_t bytes, uint16_t node) {
  if (bytes == 0) co_return InvalidArgument("cannot allocate 0 bytes");
  if (cluster_->is_down(node)) co_return cluster_->down_status(node);
  if (endpoint(node) == nullptr) {
    co_return NotFound(fmt::format("no memory node with id {}", node));
  }
  int cls = ChunkAllocator::class_of(bytes);
  if (cls < 0) {
    auto r = co_await allocate_on(node, bytes, 64);
    co_return r;
  }
  // allocators_ is sized at connect time (one per node id) and never resized afterwards; index
  // it again after every co_await rather than holding a reference across one.
  GlobalAddress a = allocators_[node].take(cls);
  if (!a.is_null()) co_return a;
  uint64_t chunk_bytes = cluster_->config().options.chunk_bytes;
  FARMEM_CO_ASSIGN_OR_RETURN(GlobalAddress chunk, co_await allocate_on(node, chunk_bytes, 4096));
  // Other coroutines may have refilled while this one waited for its chunk.
  co_return allocators_[node].take_after_refill(cls, chunk, chunk_bytes);
}

Task<Status> ThreadClient::free(GlobalAddress addr, uint64_t bytes) {
  if (cluster_->is_down(addr.node())) co_return cluster_->down_status(addr.node());
  if (endpoint(addr.node()) == nullptr) {
    co_return NotFound(fmt::format("no memory node with id {}", addr.node()));
  }
  int cls = ChunkAllocator::class_of(bytes);
  if (cls >= 0) {
    allocators_[addr.node()].give_back(cls, addr);
    co_return OkStatus();
  }
  Status s = co_await free_on(addr);
  co_return s;
}

namespace {

Status check_root_name(const std::string& name) {
  if (name.empty() || name.size() > w::kMaxRootNameBytes) {
    return InvalidArgument(
        fmt::format("root name must be 1..{} bytes, got {}", w::kMaxRootNameBytes, name.size()));
  }
  return OkStatus();
}

std::string root_request(const std::string& name, uint64_t address, uint32_t flags,
                         uint64_t owner = 0) {
  w::RootRequest r{address, static_cast<uint32_t>(name.size()), flags, owner};
  std::string out(reinterpret_cast<const char*>(&r), sizeof(r));
  out += name;
  return out;
}

}  // namespace

Task<Status> ThreadClient::publish_root(std::string name, GlobalAddress addr, bool replace,
                                        uint64_t owner) {
  FARMEM_CO_TRY(check_root_name(name));
  std::string req = root_request(name, addr.pack(), replace ? w::kRootFlagReplace : 0u, owner);
  Status s = co_await rpc(cluster_->root_node(name), static_cast<uint16_t>(w::Opcode::kRootPublish),
                          req.data(), req.size(), nullptr, 0, nullptr);
  co_return s;
}

Task<Result<GlobalAddress>> ThreadClient::lookup_root(std::string name) {
  FARMEM_CO_TRY(check_root_name(name));
  std::string req = root_request(name, 0, 0);
  w::RootResponse resp{};
  uint32_t got = 0;
  FARMEM_CO_TRY(co_await rpc(cluster_->root_node(name),
                             static_cast<uint16_t>(w::Opcode::kRootLookup), req.data(), req.size(),
                             &resp, sizeof(resp), &got));
  if (got != sizeof(resp)) co_return ProtocolError("malformed root lookup reply");
  co_return GlobalAddress::unpack(resp.address);
}

Task<Status> ThreadClient::remove_root(std::string name) {
  FARMEM_CO_TRY(check_root_name(name));
  std::string req = root_request(name, 0, 0);
  Status s = co_await rpc(cluster_->root_node(name), static_cast<uint16_t>(w::Opcode::kRootRemove),
                          req.data(), req.size(), nullptr, 0, nullptr);
  co_return s;
}

namespace {

Status check_object_name(const std::string& name) {
  if (name.empty() || name.size() > w::kMaxObjectNameBytes) {
    return InvalidArgument(fmt::format("object name must be 1..{} bytes, got {}",
                                       w::kMaxObjectNameBytes, name.size()));
  }
  return OkStatus();
}

// kObjectCreate or kObjectOpen: the object's id.
Task<Result<uint64_t>> object_by_name(ThreadClient& client, uint16_t node, w::Opcode opcode,
                                      std::string name, uint32_t flags) {
  FARMEM_CO_TRY(check_object_name(name));
  w::ObjectRequest r{0, static_cast<uint32_t>(name.size()), flags};
  std::string req(reinterpret_cast<const char*>(&r), sizeof(r));
  req += name;
  w::ObjectResponse resp{};
  uint32_t got = 0;
  FARMEM_CO_TRY(co_await client.rpc(node, static_cast<uint16_t>(opcode), req.data(), req.size(),
                                    &resp, sizeof(resp), &got));
  if (got != sizeof(resp)) co_return ProtocolError("malformed object reply");
  co_return resp.id;
}

}  // namespace

Task<Result<uint64_t>> ThreadClient::object_create(uint16_t node, std::string name,
                                                   bool ephemeral) {
  auto r = co_await object_by_name(*this, node, w::Opcode::kObjectCreate, std::move(name),
                                   ephemeral ? w::kObjectEphemeral : 0u);
  co_return r;
}

Task<Result<uint64_t>> ThreadClient::object_open(uint16_t node, std::string name) {
  auto r = co_await object_by_name(*this, node, w::Opcode::kObjectOpen, std::move(name), 0);
  co_return r;
}

Task<Status> ThreadClient::object_persist(uint16_t node, uint64_t id) {
  w::ObjectRequest r{id, 0, 0};
  Status s = co_await rpc(node, static_cast<uint16_t>(w::Opcode::kObjectPersist), &r, sizeof(r),
                          nullptr, 0, nullptr);
  co_return s;
}

Task<Status> ThreadClient::object_destroy(uint16_t node, uint64_t id) {
  w::ObjectRequest r{id, 0, 0};
  Status s = co_await rpc(node, static_cast<uint16_t>(w::Opcode::kObjectDestroy), &r, sizeof(r),
                          nullptr, 0, nullptr);
  co_return s;
}

Task<Result<std::vector<bool>>> ThreadClient::sessions_alive(uint16_t node,
                                                             std::vector<uint64_t> ids) {
  if (ids.empty() || ids.size() > w::kMaxSessionsPerQuery) {
    co_return InvalidArgument(
        fmt::format("ask about 1..{} sessions at once", w::kMaxSessionsPerQuery));
  }
  w::SessionsAliveRequest h{static_cast<uint32_t>(ids.size()), 0};
  std::string req(reinterpret_cast<const char*>(&h), sizeof(h));
  req.append(reinterpret_cast<const char*>(ids.data()), 8 * ids.size());
  std::string reply(ids.size(), '\0');
  uint32_t got = 0;
  FARMEM_CO_TRY(co_await rpc(node, static_cast<uint16_t>(w::Opcode::kSessionsAlive), req.data(),
                             req.size(), reply.data(), static_cast<uint32_t>(reply.size()), &got));
  if (got != ids.size()) co_return ProtocolError("malformed sessions-alive reply");
  std::vector<bool> alive(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) alive[i] = reply[i] != 0;
  co_return alive;
}

Task<Result<NodeStats>> ThreadClient::stats(uint16_t node) {
  w::StatsResponse r{};
  uint32_t got = 0;
  FARMEM_CO_TRY(co_await rpc(node, static_cast<uint16_t>(w::Opcode::kStats), nullptr, 0, &r,
                             sizeof(r), &got));
  if (got != sizeof(r)) co_return ProtocolError("malformed stats reply");
  NodeStats n;
  n.node_id = r.node_id;
  n.capacity_bytes = r.capacity_bytes;
  n.used_bytes = r.used_bytes;
  n.rpcs_served = r.rpcs_served;
  n.connections = r.connections;
  n.roots = r.roots;
  n.allocations = r.allocations;
  n.worker_count = r.worker_count;
  n.uptime_ms = r.uptime_ms;
  n.objects = r.objects;
  n.sessions_total = r.sessions_total;
  n.refused = r.refused;
  n.rpcs_dropped = r.rpcs_dropped;
  if (r.durability <= static_cast<uint32_t>(storage::Durability::kPower)) {
    n.durability = storage::durability_name(static_cast<storage::Durability>(r.durability));
  }
  n.recovery_records = r.recovery_records;
  n.recovery_dropped_records = r.recovery_dropped_records;
  n.recovery_us = r.recovery_us;
  n.log_bytes = r.log_bytes;
  n.syncs = r.syncs;
  co_return n;
}

}  // namespace farmem::client
