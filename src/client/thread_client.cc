// ThreadClient's lifecycle (scheduler, worker, one session per node, liveness), address
// resolution and atomic_update. The data path is in op_awaitable.cc and batch.cc, the RPCs in
// control_plane.cc.
#include "farmem/client/thread_client.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/fabric/wire.h"

namespace farmem::client {

namespace w = farmem::wire;

namespace {
// The scheduler ThreadClients created on this thread, while any of them holds it.
thread_local std::weak_ptr<runtime::Scheduler> tls_client_scheduler;
}  // namespace
using runtime::Task;

ThreadClient::ThreadClient(Cluster& cluster, uint32_t index)
    : cluster_(&cluster),
      index_(index),
      owner_thread_(std::this_thread::get_id()),
      op_timeout_ns_(static_cast<uint64_t>(cluster.config().options.op_timeout_ms) * 1'000'000),
      throttle_([&] {
        runtime::ThrottleOptions t;
        t.mode = cluster.config().options.throttle;
        t.fixed_cap = cluster.config().options.throttle_cap;
        return t;
      }()),
      throttle_on_(cluster.config().options.throttle != runtime::ThrottleMode::kOff),
      direct_access_(cluster.config().options.direct_access),
      served_in_flight_(cluster.config().options.served_in_flight),
      backoff_([&] {
        runtime::BackoffOptions b;
        b.enabled = cluster.config().options.backoff;
        return b;
      }()) {}

ThreadClient::~ThreadClient() {
  // A scheduler installed by the caller belongs to the owning thread: touch it only there.
  const bool may_touch =
      scheduler_ != nullptr && (own_scheduler_ || std::this_thread::get_id() == owner_thread_);
  if (may_touch && ticker_id_ != SIZE_MAX) scheduler_->remove_ticker(ticker_id_);
  if (may_touch && liveness_ticker_id_ != SIZE_MAX) scheduler_->remove_ticker(liveness_ticker_id_);
  // Closing the endpoints below fails their messages, which may make a lane ready again: from
  // here on no lane registers a round-end call, and a pending one is taken back.
  const bool registered = round_end_pending_;
  round_end_pending_ = true;
  if (may_touch && registered) scheduler_->cancel_round_end(this);
  by_node_.clear();
  sessions_.clear();  // closes the endpoints, then the door connections: the sessions end
  if (may_touch) scheduler_->detach(worker_.get());
  worker_.reset();
  lanes_.clear();  // last: closing the endpoints may complete their messages
}

ServedLane* ThreadClient::served_lane(uint16_t node) {
  if (node >= lanes_.size()) lanes_.resize(node + 1);
  auto& lane = lanes_[node];
  if (lane == nullptr) {
    lane = std::make_unique<ServedLane>(endpoint(node), served_in_flight_,
                                        &ThreadClient::on_lane_ready, this);
  }
  return lane.get();
}

void ThreadClient::on_lane_ready(void* p, ServedLane* lane) {
  auto* self = static_cast<ThreadClient*>(p);
  self->ready_lanes_.push_back(lane);
  if (!self->round_end_pending_) {
    self->round_end_pending_ = true;
    self->scheduler_->at_round_end(&ThreadClient::on_round_end, self);
  }
}

void ThreadClient::on_round_end(void* p) {
  auto* self = static_cast<ThreadClient*>(p);
  self->round_end_pending_ = false;
  self->flush_served();
}

void ThreadClient::flush_served() {
  // flush() may fail messages whose waiters add operations: those lanes are listed again.
  flushing_.swap(ready_lanes_);
  for (ServedLane* lane : flushing_) lane->flush();
  flushing_.clear();
}

uint64_t ThreadClient::served_messages() const {
  uint64_t n = 0;
  for (const auto& lane : lanes_) n += lane != nullptr ? lane->messages_posted() : 0;
  return n;
}

uint64_t ThreadClient::served_ops() const {
  uint64_t n = 0;
  for (const auto& lane : lanes_) n += lane != nullptr ? lane->ops_posted() : 0;
  return n;
}

uint64_t ThreadClient::deadline_in_ms(uint64_t ms) { return now_ns() + ms * 1'000'000; }

Status ThreadClient::connect_all(std::vector<NodeInfo>& nodes) {
  const ClientOptions& o = cluster_->config().options;
  fabric::WorkerOptions wo;
  wo.max_pending_ops = o.max_inflight;
  wo.default_timeout_ns = op_timeout_ns_;
  auto worker = fabric::Worker::create(cluster_->context(), wo);
  FARMEM_TRY(worker);
  worker_ = std::move(*worker);
  scheduler_ = runtime::Scheduler::current();
  if (scheduler_ == nullptr) {
    runtime::SchedulerOptions so;
    so.max_coroutines = o.max_coroutines;
    own_scheduler_ = std::make_shared<runtime::Scheduler>(so);
    own_scheduler_->install();
    tls_client_scheduler = own_scheduler_;
    scheduler_ = own_scheduler_.get();
  } else if (auto shared = tls_client_scheduler.lock(); shared.get() == scheduler_) {
    own_scheduler_ = std::move(shared);  // another client's scheduler: keep it alive too
  }
  scheduler_->attach(worker_.get());
  if (o.throttle == runtime::ThrottleMode::kAdaptive) {
    ticker_id_ = scheduler_->add_ticker([this](uint64_t now) { throttle_.tick(now); });
  }
  for (NodeInfo& node : nodes) {
    if (!node.down) FARMEM_TRY(connect_node(node));
  }
  allocators_.resize(by_node_.size());  // fixed from here on (coroutines index it)
  liveness_ticker_id_ = scheduler_->add_ticker([this](uint64_t now) { check_liveness(now); });
  return OkStatus();
}

namespace {

// Drives one RPC to completion on a worker that no scheduler may be polling yet.
Status echo_once(fabric::Worker& worker, fabric::Endpoint& ep, uint64_t deadline) {
  fabric::Completion c;
  uint32_t got = 0;
  const char probe[8] = {'f', 'a', 'r', 'm', 'e', 'm', '!', '\n'};
  char back[8] = {};
  Status s = ep.post_rpc(static_cast<uint16_t>(w::Opcode::kEcho), probe, sizeof(probe), back,
                         sizeof(back), &got, &c, deadline);
  FARMEM_TRY(s);
  while (c.remaining > 0) {
    worker.progress();
    worker.expire(now_ns());
  }
  FARMEM_TRY(c.status);
  if (got != sizeof(back) || std::memcmp(back, probe, sizeof(back)) != 0) {
    return ProtocolError("the echo probe came back changed");
  }
  return OkStatus();
}

}  // namespace

Status ThreadClient::connect_node(NodeInfo& node) {
  const ClientOptions& o = cluster_->config().options;
  SessionOptions so;
  so.cluster_key = o.cluster_key;
  so.connect_timeout_ns = uint64_t{o.connect_timeout_ms} * 1'000'000;
  so.silence_ns = op_timeout_ns_;
  so.heartbeat_ns = std::clamp<uint64_t>(op_timeout_ns_ / 4, 10'000'000, 1'000'000'000);
  so.worker_hint = static_cast<uint16_t>(index_);
  so.client_tag = (static_cast<uint64_t>(getpid()) << 16) | (index_ & 0xFFFF);
  auto session = NodeSession::open(*worker_, node.address, so);
  FARMEM_TRY(session);
  NodeSession& ns = **session;
  fabric::Endpoint* ep = ns.endpoint();
  // The UCX connection must work both ways before the node counts as connected.
  Status ping = echo_once(*worker_, *ep, now_ns() + so.connect_timeout_ns);
  if (!ping.ok()) {
    return Status(ping.code(), fmt::format("memory node {} admitted this client but UCX cannot "
                                           "reach it: {}",
                                           ns.where(), ping.message()));
  }
  const uint16_t id = ns.node_id();
  if (node.worker_count == 0) {  // the first thread fills the node's description
    node.node_id = id;
    node.region_bytes = ep->region_bytes();
    node.worker_count = ns.worker_count();
    node.durable = ns.durable();
  } else if (node.node_id != id) {
    return InvalidArgument(fmt::format("memory node {} changed its node id from {} to {}",
                                       ns.where(), node.node_id, id));
  }
  if (by_node_.size() <= id) {
    by_node_.resize(id + 1, nullptr);
    served_.resize(id + 1, false);
  }
  if (by_node_[id] != nullptr || cluster_->is_down(id)) {
    if (by_node_[id] == nullptr) {
      return InvalidArgument(fmt::format(
          "memory node {} reports node id {}, which down_nodes gives to a node that is down",
          ns.where(), id));
    }
    return InvalidArgument(
        fmt::format("two memory nodes report node id {} ({} and {}); node ids must be unique", id,
                    by_node_[id]->peer(), ns.where()));
  }
  by_node_[id] = ep;
  served_[id] = o.one_sided == OneSidedPath::kServed ||
                (o.one_sided == OneSidedPath::kAuto && !ep->native_rma());
  sessions_.push_back(std::move(*session));
  return OkStatus();
}

Status ThreadClient::node_status(uint16_t node) const {
  fabric::Endpoint* ep = endpoint(node);
  if (ep == nullptr && cluster_->is_down(node)) return cluster_->down_status(node);
  if (ep == nullptr) return NotFound("no memory node with that id in this cluster");
  return ep->failed() ? (ep->failure().ok() ? PeerFailed("connection closed") : ep->failure())
                      : OkStatus();
}

uint64_t ThreadClient::session_id(uint16_t node) const {
  for (const auto& s : sessions_) {
    if (s->node_id() == node) return s->id();
  }
  return 0;
}

Status ThreadClient::resolve(GlobalAddress addr, size_t bytes, bool atomic, bool mutating,
                             fabric::Endpoint** ep, uint64_t* raddr) const {
  fabric::Endpoint* e = endpoint(addr.node());
  if (e == nullptr) {
    if (cluster_->is_down(addr.node())) return cluster_->down_status(addr.node());
    return NotFound(fmt::format("no memory node with id {} in this cluster", addr.node()));
  }
  if (bytes == 0) return InvalidArgument("operation of 0 bytes");
  if (addr.offset() > e->region_bytes() || bytes > e->region_bytes() - addr.offset()) {
    return OutOfRange(fmt::format("{} bytes at node {} offset {} exceed the node's {}-byte region",
                                  bytes, addr.node(), addr.offset(), e->region_bytes()));
  }
  if (mutating && addr.offset() < w::kRegionHeaderBytes) {
    return OutOfRange(fmt::format("offset {} at node {} lies in the node's reserved {}-byte header",
                                  addr.offset(), addr.node(), w::kRegionHeaderBytes));
  }
  if (atomic && (addr.offset() % 8) != 0) {
    return InvalidArgument(fmt::format("atomic operation at unaligned offset {}", addr.offset()));
  }
  *ep = e;
  *raddr = e->region_base() + addr.offset();
  return OkStatus();
}

void ThreadClient::progress_and_check() {
  worker_->progress();
  check_liveness(now_ns());
}

std::string ThreadClient::transports() const {
  if (sessions_.empty()) return "none";
  const fabric::Endpoint& ep = *sessions_.front()->endpoint();
  std::string lanes = ep.transports();
  if (direct_access_ && ep.direct_base() != nullptr) return "direct+" + lanes;
  return served(sessions_.front()->node_id()) ? "served+" + lanes : lanes;
}

Task<Result<uint64_t>> ThreadClient::atomic_update(GlobalAddress addr,
                                                   std::function<uint64_t(uint64_t)> fn) {
  uint64_t current = 0;
  FARMEM_CO_TRY(co_await read(addr, &current, 8));
  runtime::Backoff backoff(backoff_, *scheduler_);
  for (;;) {
    uint64_t desired = fn(current);
    uint64_t found = 0;
    FARMEM_CO_TRY(co_await cas(addr, current, desired, &found));
    if (found == current) {
      backoff.succeeded();
      co_return desired;
    }
    current = found;
    if (backoff.exhausted()) co_return RetriesExhausted("atomic update", backoff.attempts());
    co_await backoff.retry();
  }
}

}  // namespace farmem::client
