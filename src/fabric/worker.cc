#include "farmem/fabric/worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>

#include "farmem/common/clock.h"
#include "farmem/fabric/endpoint.h"
#include "farmem/fabric/status_map.h"

namespace farmem::fabric {

Result<std::unique_ptr<Worker>> Worker::create(Context& context, const WorkerOptions& options) {
  if (options.max_pending_ops == 0) return InvalidArgument("max_pending_ops must be > 0");
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h w = nullptr;
  ucs_status_t st = ucp_worker_create(context.handle(), &params, &w);
  if (st != UCS_OK) return from_ucs(st, "ucp_worker_create");
  std::unique_ptr<Worker> worker(new Worker(w, options));
  st = ucp_worker_get_efd(w, &worker->event_fd_);
  if (st != UCS_OK) return from_ucs(st, "ucp_worker_get_efd");
  if (options.register_rpc_client) {
    FARMEM_TRY(worker->set_am_handler(wire::kAmRpcResponse, &Worker::on_rpc_reply, worker.get()));
  }
  return worker;
}

Worker::Worker(ucp_worker_h w, const WorkerOptions& options)
    : worker_(w), options_(options), ops_(options.max_pending_ops) {
  free_ops_.reserve(ops_.size());
  for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) free_ops_.push_back(&*it);
}

Worker::~Worker() {
  close_failed_endpoints();
  ucp_worker_destroy(worker_);
}

Status Worker::set_am_handler(uint16_t id, ucp_am_recv_callback_t cb, void* arg) {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                 UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  p.id = id;
  p.cb = cb;
  p.arg = arg;
  p.flags = UCP_AM_FLAG_WHOLE_MSG;
  return from_ucs(ucp_worker_set_am_recv_handler(worker_, &p), "ucp_worker_set_am_recv_handler");
}

unsigned Worker::progress() {
  unsigned n = ucp_worker_progress(worker_);
  if (!to_close_.empty()) close_failed_endpoints();
  while (!deferred_.empty()) {
    std::vector<Deferred> now;
    now.swap(deferred_);
    for (const Deferred& d : now) d.fn(d.arg);
    ++n;
  }
  return n;
}

std::string Worker::address() const {
  ucp_address_t* a = nullptr;
  size_t n = 0;
  if (ucp_worker_get_address(worker_, &a, &n) != UCS_OK) return {};
  std::string out(reinterpret_cast<const char*>(a), n);
  ucp_worker_release_address(worker_, a);
  return out;
}

bool Worker::arm() { return ucp_worker_arm(worker_) == UCS_OK; }

Status Worker::fence() { return from_ucs(ucp_worker_fence(worker_), "ucp_worker_fence"); }

uint64_t Worker::deadline_after_default() const { return now_ns() + options_.default_timeout_ns; }

PendingOp* Worker::acquire_op() {
  if (free_ops_.empty()) return nullptr;
  PendingOp* op = free_ops_.back();
  free_ops_.pop_back();
  assert(op->kind == PendingOp::Kind::kFree);
  op->owner = this;
  ++in_flight_;
  return op;
}

PendingOp* Worker::adopt_request(void* request) {
  auto* op = new (request) PendingOp();
  op->in_request = true;
  op->owner = this;
  ++in_flight_;
  return op;
}

void Worker::release_op(PendingOp* op) {
  assert(op->kind != PendingOp::Kind::kFree || op->completion == nullptr);
  if (op->linked) untrack(op);
  if (op->partner != nullptr) op->partner->partner = nullptr;
  if (op->in_request) {
    op->completion = nullptr;
    --in_flight_;
    return;  // the UCX request is freed by its callback
  }
  std::free(op->owned_payload);
  op->owned_payload = nullptr;
  op->kind = PendingOp::Kind::kFree;
  op->completion = nullptr;
  op->endpoint = nullptr;
  op->partner = nullptr;
  op->reply_buffer = nullptr;
  op->reply_bytes = nullptr;
  --in_flight_;
  free_ops_.push_back(op);
}

void Worker::track(PendingOp* op) {
  assert(!op->linked);
  op->linked = true;
  // Deadlines are almost always monotonic: walk back from the tail.
  PendingOp* after = tail_;
  while (after != nullptr && after->deadline_ns > op->deadline_ns) after = after->prev;
  op->prev = after;
  op->next = after ? after->next : head_;
  if (op->next)
    op->next->prev = op;
  else
    tail_ = op;
  if (after)
    after->next = op;
  else
    head_ = op;
}

void Worker::untrack(PendingOp* op) {
  if (!op->linked) return;
  op->linked = false;
  if (op->prev)
    op->prev->next = op->next;
  else
    head_ = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    tail_ = op->prev;
  op->prev = op->next = nullptr;
}

void Worker::register_reply(PendingOp* op) {
  replies_.emplace(op->request_id, op);
  track(op);
}

void Worker::unregister_reply(PendingOp* op) {
  replies_.erase(op->request_id);
  untrack(op);
}

void Worker::detach_ops_of(Endpoint* ep, const Status& why) {
  std::vector<PendingOp*> victims;
  for (PendingOp* op = head_; op != nullptr; op = op->next) {
    if (op->endpoint == ep) victims.push_back(op);
  }
  for (PendingOp* op : victims) {
    Completion* c = op->completion;
    op->completion = nullptr;
    if (op->kind == PendingOp::Kind::kRpcReply) {
      unregister_reply(op);
      release_op(op);
    } else {
      untrack(op);
      op->endpoint = nullptr;
    }
    if (c) c->complete_one(why);
  }
}

void Worker::expire(uint64_t now) {
  while (head_ != nullptr && head_->deadline_ns <= now) {
    PendingOp* op = head_;
    untrack(op);
    Completion* c = op->completion;
    op->completion = nullptr;
    Endpoint* ep = op->endpoint;
    std::string peer = ep ? ep->peer() : std::string("?");
    Status why =
        TimedOut(fmt::format("operation to {} did not complete before its deadline", peer));
    if (op->kind == PendingOp::Kind::kRpcReply) {
      replies_.erase(op->request_id);
      release_op(op);
    } else if (op->kind == PendingOp::Kind::kRpcSend) {
      // UCX still owns the send (it reads the record's own copy of the payload); the record
      // is released by the send callback. Only the waiter gives up.
      op->endpoint = nullptr;
    } else if (ep != nullptr) {
      // The UCX request is still alive and may write into the poster's buffer: close the
      // endpoint now so that nothing lands after the waiter resumes.
      op->endpoint = nullptr;
      ep->fail(
          PeerFailed(fmt::format("connection to {} abandoned after a timed-out operation", peer)));
      ep->close_now();
    }
    if (c) c->complete_one(why);
  }
}

void Worker::schedule_close(Endpoint* ep) {
  if (std::find(to_close_.begin(), to_close_.end(), ep) == to_close_.end()) to_close_.push_back(ep);
}

void Worker::forget_endpoint(Endpoint* ep) {
  to_close_.erase(std::remove(to_close_.begin(), to_close_.end(), ep), to_close_.end());
  closed_.erase(std::remove(closed_.begin(), closed_.end(), ep), closed_.end());
}

void Worker::close_failed_endpoints() {
  std::vector<Endpoint*> eps;
  eps.swap(to_close_);
  for (Endpoint* ep : eps) {
    ep->close_now();
    if (options_.collect_closed) closed_.push_back(ep);
  }
}

ucs_status_t Worker::on_rpc_reply(void* arg, const void* header, size_t header_length, void* data,
                                  size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<Worker*>(arg);
  if (header_length != sizeof(wire::RpcHeader)) return UCS_OK;  // not ours: drop
  wire::RpcHeader h;
  std::memcpy(&h, header, sizeof(h));
  if (h.magic != wire::kRpcMagic) return UCS_OK;
  auto it = self->replies_.find(h.request_id);
  if (it == self->replies_.end()) return UCS_OK;  // late reply after a deadline: drop
  PendingOp* op = it->second;
  self->unregister_reply(op);
  Status s;
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
    s = ProtocolError("reply arrived as rendezvous; replies must be eager");
  } else if (h.status != 0) {
    if (h.status < 0 || h.status > static_cast<int32_t>(kLastStatusCode)) {
      s = ProtocolError(fmt::format("reply carries unknown status {}", h.status));
    } else {
      std::string_view msg(static_cast<const char*>(data), std::min<size_t>(length, 1024));
      s = Status(static_cast<StatusCode>(h.status), msg);
    }
  } else if (h.payload_bytes != length) {
    s = ProtocolError(
        fmt::format("reply announces {} bytes but {} arrived", h.payload_bytes, length));
  } else if (length > op->reply_capacity) {
    s = ProtocolError(
        fmt::format("reply of {} bytes exceeds the {}-byte buffer", length, op->reply_capacity));
  } else {
    if (length > 0) std::memcpy(op->reply_buffer, data, length);
    if (op->reply_bytes) *op->reply_bytes = static_cast<uint32_t>(length);
  }
  Completion* c = op->completion;
  self->release_op(op);
  if (c) c->complete_one(std::move(s));
  return UCS_OK;
}

}  // namespace farmem::fabric
