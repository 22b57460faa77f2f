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

// ---------------------------------------------------------------------------------------------
// Direct access: CPU instructions on UCX's mapping of a node's region (see thread_client.h).

namespace {

constexpr size_t kCacheLineBytes = 64;
// A deferred read prefetches at most this many lines of its source: a slot, a bucket, a small
// block or a whole default B+tree page (1 KiB), whose lines then arrive while the other
// coroutines run instead of one by one when the copy reaches them; larger copies are
// bandwidth-bound anyway.
constexpr size_t kPrefetchLines = 16;

inline bool word_aligned(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 7) == 0; }

inline void prefetch_source(const uint8_t* src, size_t bytes) {
  uintptr_t line = reinterpret_cast<uintptr_t>(src) & ~uintptr_t{kCacheLineBytes - 1};
  const uintptr_t end = reinterpret_cast<uintptr_t>(src) + bytes;
  for (size_t i = 0; i < kPrefetchLines && line < end; ++i, line += kCacheLineBytes) {
    __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 3);
  }
}

// An aligned 8-byte read or write is one access, so a word written by a CAS elsewhere is never
// seen torn.
inline void direct_read(void* dst, const uint8_t* src, size_t bytes) {
  if (bytes == 8 && word_aligned(src)) {
    uint64_t v = __atomic_load_n(reinterpret_cast<const uint64_t*>(src), __ATOMIC_RELAXED);
    std::memcpy(dst, &v, 8);
  } else {
    std::memcpy(dst, src, bytes);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
}

inline void direct_write(uint8_t* dst, const void* src, size_t bytes) {
  if (bytes == 8 && word_aligned(dst)) {
    uint64_t v;
    std::memcpy(&v, src, 8);
    __atomic_store_n(reinterpret_cast<uint64_t*>(dst), v, __ATOMIC_RELAXED);
  } else {
    std::memcpy(dst, src, bytes);
  }
  std::atomic_thread_fence(std::memory_order_release);
}

// Returns the value found; the swap happened iff it equals `expected`.
inline uint64_t direct_cas(uint8_t* word, uint64_t expected, uint64_t desired) {
  __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(word), &expected, desired, false,
                              __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}

inline uint64_t direct_faa(uint8_t* word, uint64_t add) {
  return __atomic_fetch_add(reinterpret_cast<uint64_t*>(word), add, __ATOMIC_SEQ_CST);
}

// The status of a direct operation whose node failed after it was posted (its mapping is gone).
Status lost_mapping(const fabric::Endpoint& ep) {
  return ep.failure().ok() ? PeerFailed(fmt::format("connection to {} is closed", ep.peer()))
                           : ep.failure();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// OpAwaitable

OpAwaitable::OpAwaitable(ThreadClient* c, OpKind kind, GlobalAddress addr, void* buf, size_t bytes,
                         uint64_t expected, uint64_t desired, uint64_t* result,
                         uint64_t deadline_ns)
    : client_(c),
      kind_(kind),
      addr_(addr),
      buf_(buf),
      bytes_(bytes),
      expected_(expected),
      result_(result),
      deadline_ns_(deadline_ns) {
  completion_.notify = &OpAwaitable::on_complete;
  completion_.owner = this;
  waiter_.resume = &OpAwaitable::on_credit;
  waiter_.owner = this;
  // CAS and FAA carry their operand in buf_'s place; the result pointer doubles as the UCX
  // reply buffer, so it must exist.
  if (kind == OpKind::kCas || kind == OpKind::kFaa) {
    if (result_ == nullptr) result_ = reinterpret_cast<uint64_t*>(&buf_);
    if (kind == OpKind::kCas)
      *result_ = desired;
    else
      expected_ = desired;  // FAA: expected_ holds the addend
  }
}

bool OpAwaitable::await_ready() {
  if (client_->throttle_on_) {
    if (!client_->throttle_.try_acquire()) {
      ++client_->counters_.throttled;
      return false;
    }
    credit_ = true;
  }
  post();
  if (deferred_ != nullptr) {
    // A direct read or atomic: yield once so that other coroutines post (and prefetch) theirs,
    // unless nobody else would run, in which case it is performed now.
    if (client_->scheduler_->others_ready()) return false;
    finish_deferred();
  }
  return completion_.remaining == 0;
}

void OpAwaitable::await_suspend(std::coroutine_handle<> h) {
  handle_ = h;
  if (!posted_) {
    client_->throttle_.enqueue(&waiter_);
  } else if (deferred_ != nullptr) {
    client_->scheduler_->post(h);  // the yield; the operation happens in await_resume
  }
}

Status OpAwaitable::await_resume() {
  if (deferred_ != nullptr) finish_deferred();
  if (served_ != nullptr) served_->finish();
  if (credit_) client_->throttle_.release();
  ClientCounters& k = client_->counters_;
  switch (kind_) {
    case OpKind::kRead:
      ++k.reads;
      break;
    case OpKind::kWrite:
      ++k.writes;
      break;
    case OpKind::kCas:
      ++k.cas;
      break;
    case OpKind::kFaa:
      ++k.faa;
      break;
  }
  return std::move(completion_.status);
}

void OpAwaitable::on_complete(fabric::Completion* c) {
  auto* self = static_cast<OpAwaitable*>(c->owner);
  if (self->handle_) self->client_->scheduler_->post(self->handle_);
}

void OpAwaitable::on_credit(runtime::Throttle::Waiter* wt) {
  auto* self = static_cast<OpAwaitable*>(wt->owner);
  self->credit_ = true;
  self->post();
  if (self->completion_.remaining == 0) self->client_->scheduler_->post(self->handle_);
}

void OpAwaitable::finish_deferred() {
  uint8_t* p = deferred_;
  deferred_ = nullptr;
  // The node may have failed while this coroutine yielded; its mapping is then gone.
  fabric::Endpoint* ep = client_->endpoint(addr_.node());
  if (ep->direct_base() == nullptr) {
    completion_.fail(lost_mapping(*ep));
    return;
  }
  switch (kind_) {
    case OpKind::kRead:
      direct_read(buf_, p, bytes_);
      break;
    case OpKind::kWrite:
      break;  // never deferred
    case OpKind::kCas:
      *result_ = direct_cas(p, expected_, *result_);  // *result_ holds the desired value
      break;
    case OpKind::kFaa:
      *result_ = direct_faa(p, expected_);  // expected_ holds the addend
      break;
  }
}

bool OpAwaitable::post_direct(fabric::Endpoint* ep, GlobalAddress addr) {
  uint8_t* base = client_->direct_base(ep);
  if (base == nullptr) return false;
  uint8_t* p = base + addr.offset();
  switch (kind_) {
    case OpKind::kRead:
      prefetch_source(p, bytes_);
      deferred_ = p;
      break;
    case OpKind::kWrite:
      direct_write(p, buf_, bytes_);
      break;
    case OpKind::kCas:
    case OpKind::kFaa:
      __builtin_prefetch(p, 1, 3);  // for writing: the atomic then finds the line owned
      deferred_ = p;
      break;
  }
  return true;
}

void OpAwaitable::post_served(fabric::Endpoint* ep) {
  served_ = std::make_unique<ServedOps>(ep);
  switch (kind_) {
    case OpKind::kRead:
      served_->read(addr_.offset(), buf_, bytes_);
      break;
    case OpKind::kWrite:
      served_->write(addr_.offset(), buf_, bytes_);
      break;
    case OpKind::kCas:
      served_->cas(addr_.offset(), expected_, *result_, result_);  // *result_: the desired value
      break;
    case OpKind::kFaa:
      served_->faa(addr_.offset(), expected_, result_);  // expected_: the addend
      break;
  }
  Status st = served_->post(&completion_, deadline_ns_);
  if (!st.ok()) completion_.fail(std::move(st));
}

void OpAwaitable::post() {
  posted_ = true;
  client_->pace();  // first: a failure it finds makes resolve() and the paths below see it
  fabric::Endpoint* ep = nullptr;
  uint64_t raddr = 0;
  bool atomic = kind_ == OpKind::kCas || kind_ == OpKind::kFaa;
  Status st = client_->resolve(addr_, bytes_, atomic, kind_ != OpKind::kRead, &ep, &raddr);
  if (!st.ok()) {
    completion_.fail(std::move(st));
    return;
  }
  if (post_direct(ep, addr_)) return;
  if (client_->served(addr_.node())) return post_served(ep);
  const uint64_t deadline = deadline_ns_;
  switch (kind_) {
    case OpKind::kRead:
      st = ep->post_get(buf_, raddr, bytes_, &completion_, deadline);
      break;
    case OpKind::kWrite:
      st = ep->post_put(buf_, raddr, bytes_, &completion_, deadline);
      if (st.ok()) st = ep->post_flush(&completion_, deadline);
      break;
    case OpKind::kCas:
      st = ep->post_cas(raddr, &expected_, result_, &completion_, deadline);
      break;
    case OpKind::kFaa:
      st = ep->post_faa(raddr, &expected_, result_, &completion_, deadline);
      break;
  }
  if (!st.ok()) completion_.fail(std::move(st));
}

// ---------------------------------------------------------------------------------------------
// Batch

Batch::OffDirect::OffDirect() = default;
Batch::OffDirect::~OffDirect() = default;

Batch::OffDirect& Batch::off_direct() {
  if (off_ == nullptr) off_ = std::make_unique<OffDirect>();
  return *off_;
}

void Batch::settle() {
  // Deferred reads of a batch nobody waited for are dropped: their results are never seen.
  // Never leave UCX holding a pointer into a dead batch.
  if (!waited_) {
    client_->pace(ops_);  // its operations were posted all the same
    if (off_ != nullptr) {
      for (fabric::Endpoint* ep : off_->written) (void)ep->post_flush(&completion_, deadline_ns_);
    }
  }
  while (completion_.remaining > 0) {
    client_->worker().progress();
    client_->worker().expire(now_ns());
  }
}

void Batch::on_complete(fabric::Completion* c) {
  auto* self = static_cast<Batch*>(c->owner);
  if (self->handle_) self->client_->scheduler().post(self->handle_);
}

Status Batch::admit(GlobalAddress addr, size_t bytes, bool atomic, bool mutating,
                    fabric::Endpoint** ep, uint64_t* raddr) {
  Status s;
  if (waited_) {
    s = InvalidArgument("operation added to a batch that was already waited on");
  } else if (ops_ >= kMaxOps) {
    s = ResourceExhausted(fmt::format("a batch holds at most {} operations", kMaxOps));
  } else {
    s = client_->resolve(addr, bytes, atomic, mutating, ep, raddr);  // (paced when waited on)
  }
  if (!s.ok() && first_error_.ok()) first_error_ = s;
  if (s.ok()) ++ops_;
  return s;
}

uint8_t* Batch::direct_target(fabric::Endpoint* ep, GlobalAddress addr) const {
  if (ucx_fenced_) return nullptr;
  uint8_t* base = client_->direct_base(ep);
  return base != nullptr ? base + addr.offset() : nullptr;
}

ServedOps* Batch::served_for(fabric::Endpoint* ep, uint16_t node) {
  if (!client_->served(node)) return nullptr;
  auto& served = off_direct().served;
  for (auto& o : served) {
    if (o->endpoint() == ep) return o.get();
  }
  return served.emplace_back(std::make_unique<ServedOps>(ep)).get();
}

void Batch::perform_deferred_reads() {
  for (uint32_t i = 0; i < deferred_count_; ++i) {
    const DeferredRead& d = deferred_[i];
    if (d.ep->direct_base() == nullptr) {  // the node failed since the read was posted
      if (first_error_.ok()) first_error_ = lost_mapping(*d.ep);
      continue;
    }
    direct_read(d.dst, d.src, d.bytes);
  }
  deferred_count_ = 0;
}

#define FARMEM_BATCH_POST(call)                           \
  do {                                                    \
    Status _s = (call);                                   \
    if (!_s.ok() && first_error_.ok()) first_error_ = _s; \
    if (_s.ok()) posted_through_ucx_ = true;              \
    return _s;                                            \
  } while (0)

Status Batch::read(GlobalAddress addr, void* dst, size_t bytes) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  FARMEM_TRY(admit(addr, bytes, false, false, &ep, &raddr));
  ++client_->mutable_counters().reads;
  if (const uint8_t* p = direct_target(ep, addr)) {
    if (deferred_count_ == kMaxDeferredReads) perform_deferred_reads();
    prefetch_source(p, bytes);
    deferred_[deferred_count_++] = DeferredRead{dst, p, bytes, ep};
    return OkStatus();
  }
  if (ServedOps* o = served_for(ep, addr.node())) {
    o->read(addr.offset(), dst, bytes);
    return OkStatus();
  }
  FARMEM_BATCH_POST(ep->post_get(dst, raddr, bytes, &completion_, deadline_ns_));
}

Status Batch::write(GlobalAddress addr, const void* src, size_t bytes) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  FARMEM_TRY(admit(addr, bytes, false, true, &ep, &raddr));
  ++client_->mutable_counters().writes;
  perform_deferred_reads();  // program order: earlier reads of this batch come first
  if (uint8_t* p = direct_target(ep, addr)) {
    direct_write(p, src, bytes);
    return OkStatus();
  }
  if (ServedOps* o = served_for(ep, addr.node())) {
    o->write(addr.offset(), src, bytes);
    return OkStatus();
  }
  auto& written = off_direct().written;
  if (std::find(written.begin(), written.end(), ep) == written.end()) written.push_back(ep);
  FARMEM_BATCH_POST(ep->post_put(src, raddr, bytes, &completion_, deadline_ns_));
}

Status Batch::cas(GlobalAddress addr, uint64_t expected, uint64_t desired, uint64_t* old_value) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  if (old_value == nullptr) return InvalidArgument("Batch::cas needs a result pointer");
  FARMEM_TRY(admit(addr, 8, true, true, &ep, &raddr));
  ++client_->mutable_counters().cas;
  perform_deferred_reads();
  if (uint8_t* p = direct_target(ep, addr)) {
    *old_value = direct_cas(p, expected, desired);
    return OkStatus();
  }
  if (ServedOps* o = served_for(ep, addr.node())) {
    o->cas(addr.offset(), expected, desired, old_value);
    return OkStatus();
  }
  *old_value = desired;
  uint64_t* operand = &operands_[ops_ - 1];
  *operand = expected;
  FARMEM_BATCH_POST(ep->post_cas(raddr, operand, old_value, &completion_, deadline_ns_));
}

Status Batch::faa(GlobalAddress addr, uint64_t add, uint64_t* old_value) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  if (old_value == nullptr) return InvalidArgument("Batch::faa needs a result pointer");
  FARMEM_TRY(admit(addr, 8, true, true, &ep, &raddr));
  ++client_->mutable_counters().faa;
  perform_deferred_reads();
  if (uint8_t* p = direct_target(ep, addr)) {
    *old_value = direct_faa(p, add);
    return OkStatus();
  }
  if (ServedOps* o = served_for(ep, addr.node())) {
    o->faa(addr.offset(), add, old_value);
    return OkStatus();
  }
  uint64_t* operand = &operands_[ops_ - 1];
  *operand = add;
  FARMEM_BATCH_POST(ep->post_faa(raddr, operand, old_value, &completion_, deadline_ns_));
}

Status Batch::fence() {
  perform_deferred_reads();
  // Direct operations are complete when posted, so they are ordered already; operations that
  // went through UCX are ordered only by UCX's fence, and later ones must then go through UCX.
  if (!posted_through_ucx_) return OkStatus();
  ucx_fenced_ = true;
  Status s = client_->worker().fence();
  if (!s.ok() && first_error_.ok()) first_error_ = s;
  return s;
}

bool Batch::WaitAwaitable::await_ready() {
  b->waited_ = true;
  // First: a failure it finds makes the posts below and the deferred reads see it.
  b->client_->pace(b->ops_);
  if (b->off_ != nullptr) {
    for (auto& o : b->off_->served) {
      Status s = o->post(&b->completion_, b->deadline_ns_);
      if (!s.ok() && b->first_error_.ok()) b->first_error_ = s;
    }
    for (fabric::Endpoint* ep : b->off_->written) {
      Status s = ep->post_flush(&b->completion_, b->deadline_ns_);
      if (!s.ok() && b->first_error_.ok()) b->first_error_ = s;
    }
  }
  if (b->completion_.remaining > 0) return false;  // deferred reads run when UCX completes
  if (b->deferred_count_ == 0) return true;
  // Yield once so that other coroutines post (and prefetch) their reads before these copy,
  // unless nobody else would run.
  if (b->client_->scheduler().others_ready()) return false;
  b->perform_deferred_reads();
  return true;
}

void Batch::WaitAwaitable::await_suspend(std::coroutine_handle<> h) {
  b->handle_ = h;
  if (b->completion_.remaining == 0) b->client_->scheduler().post(h);  // the yield
}

Status Batch::WaitAwaitable::await_resume() {
  b->handle_ = nullptr;
  b->perform_deferred_reads();
  if (b->off_ != nullptr) {
    for (auto& o : b->off_->served) o->finish();
  }
  FARMEM_TRY(b->first_error_);
  return b->completion_.status;
}

// ---------------------------------------------------------------------------------------------
// RPC awaitable

namespace {

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

// ---------------------------------------------------------------------------------------------
// ThreadClient

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
  by_node_.clear();
  sessions_.clear();  // closes the endpoints, then the door connections: the sessions end
  if (may_touch) scheduler_->detach(worker_.get());
  worker_.reset();
}

uint64_t ThreadClient::deadline_in_ms(uint64_t ms) { return now_ns() + ms * 1'000'000; }

Status ThreadClient::connect_all() {
  const ClientOptions& o = cluster_->config().options;
  fabric::WorkerOptions wo;
  wo.max_pending_ops = o.max_inflight;
  wo.default_timeout_ns = op_timeout_ns_;
  auto worker = fabric::Worker::create(*cluster_->context_, wo);
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
  for (size_t i = 0; i < cluster_->nodes_.size(); ++i) {
    if (!cluster_->nodes_[i].down) FARMEM_TRY(connect_node(i));
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

Status ThreadClient::connect_node(size_t index) {
  const ClientOptions& o = cluster_->config().options;
  NodeInfo& node = cluster_->nodes_[index];
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
  Status s = co_await read(addr, &current, 8);
  FARMEM_CO_TRY(s);
  runtime::Backoff backoff(backoff_, *scheduler_);
  for (;;) {
    uint64_t desired = fn(current);
    uint64_t found = 0;
    Status cs = co_await cas(addr, current, desired, &found);
    FARMEM_CO_TRY(cs);
    if (found == current) {
      backoff.succeeded();
      co_return desired;
    }
    current = found;
    if (backoff.exhausted()) co_return RetriesExhausted("atomic update", backoff.attempts());
    co_await backoff.retry();
  }
}

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
  Status s = co_await rpc(node, static_cast<uint16_t>(w::Opcode::kAlloc), &req, sizeof(req), &resp,
                          sizeof(resp), &got);
  FARMEM_CO_TRY(s);
  if (got != sizeof(resp)) co_return ProtocolError("malformed alloc reply");
  co_return GlobalAddress{node, resp.offset};
}

Task<Status> ThreadClient::free_on(GlobalAddress addr) {
  w::FreeRequest req{addr.offset()};
  Status s = co_await rpc(addr.node(), static_cast<uint16_t>(w::Opcode::kFree), &req, sizeof(req),
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
  auto chunk = co_await allocate_on(node, chunk_bytes, 4096);
  FARMEM_CO_TRY(chunk);
  // Other coroutines may have refilled while this one waited for its chunk.
  co_return allocators_[node].take_after_refill(cls, *chunk, chunk_bytes);
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
  Status s = co_await rpc(cluster_->root_node(name), static_cast<uint16_t>(w::Opcode::kRootLookup),
                          req.data(), req.size(), &resp, sizeof(resp), &got);
  FARMEM_CO_TRY(s);
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

}  // namespace

Task<Result<uint64_t>> ThreadClient::object_create(uint16_t node, std::string name,
                                                   bool ephemeral) {
  FARMEM_CO_TRY(check_object_name(name));
  w::ObjectRequest r{0, static_cast<uint32_t>(name.size()), ephemeral ? w::kObjectEphemeral : 0u};
  std::string req(reinterpret_cast<const char*>(&r), sizeof(r));
  req += name;
  w::ObjectResponse resp{};
  uint32_t got = 0;
  Status s = co_await rpc(node, static_cast<uint16_t>(w::Opcode::kObjectCreate), req.data(),
                          req.size(), &resp, sizeof(resp), &got);
  FARMEM_CO_TRY(s);
  if (got != sizeof(resp)) co_return ProtocolError("malformed object reply");
  co_return resp.id;
}

Task<Result<uint64_t>> ThreadClient::object_open(uint16_t node, std::string name) {
  FARMEM_CO_TRY(check_object_name(name));
  w::ObjectRequest r{0, static_cast<uint32_t>(name.size()), 0};
  std::string req(reinterpret_cast<const char*>(&r), sizeof(r));
  req += name;
  w::ObjectResponse resp{};
  uint32_t got = 0;
  Status s = co_await rpc(node, static_cast<uint16_t>(w::Opcode::kObjectOpen), req.data(),
                          req.size(), &resp, sizeof(resp), &got);
  FARMEM_CO_TRY(s);
  if (got != sizeof(resp)) co_return ProtocolError("malformed object reply");
  co_return resp.id;
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
  Status s = co_await rpc(node, static_cast<uint16_t>(w::Opcode::kSessionsAlive), req.data(),
                          req.size(), reply.data(), static_cast<uint32_t>(reply.size()), &got);
  FARMEM_CO_TRY(s);
  if (got != ids.size()) co_return ProtocolError("malformed sessions-alive reply");
  std::vector<bool> alive(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) alive[i] = reply[i] != 0;
  co_return alive;
}

Task<Result<NodeStats>> ThreadClient::stats(uint16_t node) {
  w::StatsResponse r{};
  uint32_t got = 0;
  Status s =
      co_await rpc(node, static_cast<uint16_t>(w::Opcode::kStats), nullptr, 0, &r, sizeof(r), &got);
  FARMEM_CO_TRY(s);
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
  co_return n;
}

}  // namespace farmem::client
