#include "farmem/fabric/endpoint.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "farmem/common/clock.h"
#include "farmem/common/log.h"
#include "farmem/fabric/status_map.h"

namespace farmem::fabric {
namespace {

// Shared end of every in-flight operation (pooled or in a UCX request).
void finish_op(PendingOp* op, ucs_status_t status) {
  Worker* w = op->owner;
  Completion* c = op->completion;
  op->completion = nullptr;
  Status s;
  if (status != UCS_OK) {
    Endpoint* ep = op->endpoint;
    if (ep != nullptr && ep->failed()) {
      s = ep->failure();
    } else {
      s = from_ucs(status, fmt::format("operation to {}", ep ? ep->peer() : "?"));
    }
    // A request that never left: its reply will not come either.
    PendingOp* reply = op->partner;
    if (op->kind == PendingOp::Kind::kRpcSend && reply != nullptr) {
      w->unregister_reply(reply);
      Completion* rc = reply->completion;
      w->release_op(reply);
      if (rc) rc->complete_one(s);
    }
  }
  w->release_op(op);
  if (c) c->complete_one(std::move(s));
}

// One-sided operations: the record lives in the request itself.
void on_request_done(void* request, ucs_status_t status, void* /*user_data*/) {
  finish_op(static_cast<PendingOp*>(request), status);
  ucp_request_free(request);
}

// RPC sends: the record comes from the pool (it holds the header UCX reads).
void on_op_done(void* request, ucs_status_t status, void* user_data) {
  ucp_request_free(request);
  finish_op(static_cast<PendingOp*>(user_data), status);
}

void on_reply_sent(void* request, ucs_status_t, void* user_data) {
  ucp_request_free(request);
  std::free(user_data);
}

ucp_request_param_t op_param(PendingOp* op) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &on_op_done;
  p.user_data = op;
  return p;
}

}  // namespace

Result<std::unique_ptr<Endpoint>> Endpoint::create(Worker& worker, const void* address,
                                                   size_t address_bytes, std::string peer) {
  if (address == nullptr || address_bytes == 0) {
    return InvalidArgument(fmt::format("empty worker address for {}", peer));
  }
  std::unique_ptr<Endpoint> ep(new Endpoint(worker, std::move(peer)));
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                 UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  p.address = static_cast<const ucp_address_t*>(address);
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = &Endpoint::on_error;
  p.err_handler.arg = ep.get();
  ucs_status_t st = ucp_ep_create(worker.handle(), &p, &ep->ep_);
  if (st != UCS_OK) return from_ucs(st, fmt::format("connect to {}", ep->peer_));
  return ep;
}

Endpoint::~Endpoint() {
  close_now();
  worker_->forget_endpoint(this);  // also when it was closed earlier
}

void Endpoint::on_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* self = static_cast<Endpoint*>(arg);
  self->direct_base_ = nullptr;  // direct operations fail from now on, like posted ones
  if (!self->failed_) {
    self->failed_ = true;
    self->failure_ = PeerFailed(
        fmt::format("connection to {} failed: {}", self->peer_, ucs_status_string(status)));
  }
  self->worker_->schedule_close(self);
}

void Endpoint::fail(Status why) {
  direct_base_ = nullptr;
  if (failed_) return;
  failed_ = true;
  failure_ = std::move(why);
  worker_->schedule_close(this);
}

void Endpoint::close_now() {
  if (closed_) return;
  closed_ = true;
  failed_ = true;
  direct_base_ = nullptr;  // before the remote key (and with it the mapping) goes away
  if (failure_.ok()) failure_ = Unavailable(fmt::format("connection to {} closed", peer_));
  worker_->forget_endpoint(this);
  if (ep_ != nullptr) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep_, &p);
    if (UCS_PTR_IS_PTR(r)) ucp_request_free(r);
    ep_ = nullptr;
  }
  // Whatever UCX did not complete during the close: waiters get the failure now, and the
  // records forget this endpoint (which may be deleted before UCX calls back).
  worker_->detach_ops_of(this, failure_);
  if (rkey_) {
    ucp_rkey_destroy(rkey_);
    rkey_ = nullptr;
  }
}

Status Endpoint::attach_region(uint64_t base, uint64_t bytes, const void* packed_rkey,
                               size_t rkey_bytes) {
  FARMEM_TRY(check_usable());
  direct_base_ = nullptr;
  if (rkey_) ucp_rkey_destroy(rkey_);
  rkey_ = nullptr;
  ucs_status_t st = ucp_ep_rkey_unpack(ep_, packed_rkey, &rkey_);
  if (st != UCS_OK) return from_ucs(st, fmt::format("unpack remote key of {}", peer_));
  region_base_ = base;
  region_bytes_ = bytes;
  // Direct access only if UCX maps the region here (shared memory; UCS_ERR_UNREACHABLE over
  // TCP or RDMA) and the mapping is linear: the last word must sit where the first word's
  // pointer says it does.
  void* first = nullptr;
  void* last = nullptr;
  if (bytes >= 8 && ucp_rkey_ptr(rkey_, base, &first) == UCS_OK &&
      ucp_rkey_ptr(rkey_, base + bytes - 8, &last) == UCS_OK && first != nullptr &&
      static_cast<uint8_t*>(last) == static_cast<uint8_t*>(first) + (bytes - 8)) {
    direct_base_ = static_cast<uint8_t*>(first);
  }
  return OkStatus();
}

Status Endpoint::check_usable() const {
  if (failed_ || closed_) {
    return failure_.ok() ? PeerFailed(fmt::format("connection to {} is closed", peer_)) : failure_;
  }
  return OkStatus();
}

Status Endpoint::finish_post(ucs_status_ptr_t r, PendingOp* op, Completion* c, uint64_t deadline_ns,
                             const char* what) {
  if (r == nullptr) {
    worker_->release_op(op);
    return OkStatus();
  }
  if (UCS_PTR_IS_ERR(r)) {
    worker_->release_op(op);
    return from_ucs(UCS_PTR_STATUS(r), fmt::format("{} to {}", what, peer_));
  }
  op->completion = c;
  // The clock is read only for operations that did not complete at once.
  op->deadline_ns = deadline_ns != 0 ? deadline_ns : worker_->deadline_after_default();
  ++c->remaining;
  worker_->track(op);
  return OkStatus();
}

namespace {
// Not zero-filled on purpose (hot path): UCX reads only the fields op_attr_mask names.
inline ucp_request_param_t rma_param() {
  ucp_request_param_t p;
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
  p.cb.send = &on_request_done;
  return p;
}
}  // namespace

Status Endpoint::finish_rma(ucs_status_ptr_t r, Completion* c, uint64_t deadline_ns,
                            const char* what) {
  if (r == nullptr) return OkStatus();
  if (UCS_PTR_IS_ERR(r)) return from_ucs(UCS_PTR_STATUS(r), fmt::format("{} to {}", what, peer_));
  PendingOp* op = worker_->adopt_request(r);
  op->kind = PendingOp::Kind::kRma;
  op->endpoint = this;
  op->completion = c;
  op->deadline_ns = deadline_ns != 0 ? deadline_ns : worker_->deadline_after_default();
  ++c->remaining;
  worker_->track(op);
  return OkStatus();
}

Status Endpoint::check_rma() const {
  if (failed_ || closed_) return check_usable();
  if (!worker_->can_post()) return ResourceExhausted("too many operations in flight on worker");
  return OkStatus();
}

Status Endpoint::post_get(void* dst, uint64_t remote_addr, size_t bytes, Completion* c,
                          uint64_t deadline_ns) {
  FARMEM_TRY(check_rma());
  ucp_request_param_t p = rma_param();
  return finish_rma(ucp_get_nbx(ep_, dst, bytes, remote_addr, rkey_, &p), c, deadline_ns, "read");
}

Status Endpoint::post_put(const void* src, uint64_t remote_addr, size_t bytes, Completion* c,
                          uint64_t deadline_ns) {
  FARMEM_TRY(check_rma());
  ucp_request_param_t p = rma_param();
  return finish_rma(ucp_put_nbx(ep_, src, bytes, remote_addr, rkey_, &p), c, deadline_ns, "write");
}

Status Endpoint::post_cas(uint64_t remote_addr, const uint64_t* expected, uint64_t* inout,
                          Completion* c, uint64_t deadline_ns) {
  FARMEM_TRY(check_rma());
  ucp_request_param_t p = rma_param();
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  p.datatype = ucp_dt_make_contig(8);
  p.reply_buffer = inout;
  return finish_rma(
      ucp_atomic_op_nbx(ep_, UCP_ATOMIC_OP_CSWAP, expected, 1, remote_addr, rkey_, &p), c,
      deadline_ns, "compare-and-swap");
}

Status Endpoint::post_faa(uint64_t remote_addr, const uint64_t* add, uint64_t* old_out,
                          Completion* c, uint64_t deadline_ns) {
  FARMEM_TRY(check_rma());
  ucp_request_param_t p = rma_param();
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  p.datatype = ucp_dt_make_contig(8);
  p.reply_buffer = old_out;
  return finish_rma(ucp_atomic_op_nbx(ep_, UCP_ATOMIC_OP_ADD, add, 1, remote_addr, rkey_, &p), c,
                    deadline_ns, "fetch-and-add");
}

Status Endpoint::post_flush(Completion* c, uint64_t deadline_ns) {
  FARMEM_TRY(check_rma());
  ucp_request_param_t p = rma_param();
  return finish_rma(ucp_ep_flush_nbx(ep_, &p), c, deadline_ns, "flush");
}

Status Endpoint::post_rpc(uint16_t opcode, const void* payload, size_t payload_bytes, void* reply,
                          uint32_t reply_capacity, uint32_t* reply_bytes, Completion* c,
                          uint64_t deadline_ns) {
  if (payload_bytes > wire::kMaxRpcPayloadBytes) {
    return InvalidArgument(fmt::format("RPC payload of {} bytes exceeds the {}-byte maximum",
                                       payload_bytes, wire::kMaxRpcPayloadBytes));
  }
  wire::RpcHeader h{};
  h.magic = wire::kRpcMagic;
  h.version = wire::kProtocolVersion;
  h.opcode = opcode;
  h.payload_bytes = static_cast<uint32_t>(payload_bytes);
  return post_raw_request(h, payload, payload_bytes, reply, reply_capacity, reply_bytes, c,
                          deadline_ns);
}

Status Endpoint::post_raw_request(const wire::RpcHeader& header, const void* payload,
                                  size_t payload_bytes, void* reply, uint32_t reply_capacity,
                                  uint32_t* reply_bytes, Completion* c, uint64_t deadline_ns) {
  FARMEM_TRY(check_rma());
  PendingOp* send = worker_->acquire_op();
  PendingOp* wait = send != nullptr ? worker_->acquire_op() : nullptr;
  if (wait == nullptr) {
    if (send != nullptr) worker_->release_op(send);
    return ResourceExhausted("too many operations in flight on worker");
  }
  // The payload is copied so that a request abandoned at its deadline never reads the
  // caller's buffer afterwards; UCX reads the copy until the send completes.
  if (payload_bytes > 0) {
    send->owned_payload = static_cast<uint8_t*>(std::malloc(payload_bytes));
    if (send->owned_payload == nullptr) {
      worker_->release_op(send);
      worker_->release_op(wait);
      return ResourceExhausted("out of memory for an RPC request");
    }
    std::memcpy(send->owned_payload, payload, payload_bytes);
  }
  send->kind = PendingOp::Kind::kRpcSend;
  send->endpoint = this;
  send->header = header;
  send->header.request_id = worker_->next_request_id();
  wait->kind = PendingOp::Kind::kRpcReply;
  wait->endpoint = this;
  wait->request_id = send->header.request_id;
  wait->reply_buffer = reply;
  wait->reply_capacity = reply_capacity;
  wait->reply_bytes = reply_bytes;
  wait->completion = c;
  wait->deadline_ns = deadline_ns != 0 ? deadline_ns : worker_->deadline_after_default();
  send->partner = wait;
  wait->partner = send;
  ++c->remaining;
  worker_->register_reply(wait);

  ucp_request_param_t p = op_param(send);
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
  ucs_status_ptr_t r =
      ucp_am_send_nbx(ep_, wire::kAmRpcRequest, &send->header, sizeof(send->header),
                      send->owned_payload, payload_bytes, &p);
  if (UCS_PTR_IS_ERR(r)) {
    worker_->unregister_reply(wait);
    worker_->release_op(wait);
    FARMEM_ASSERT(c->remaining > 0, "the reply's count was taken back twice");
    --c->remaining;
  }
  return finish_post(r, send, c, deadline_ns, "RPC request");
}

Status Endpoint::send_reply(const wire::RpcHeader& request, StatusCode code, const void* payload,
                            size_t payload_bytes) {
  FARMEM_TRY(check_usable());
  const size_t limit =
      code == StatusCode::kOk ? wire::kMaxRpcPayloadBytes : wire::kMaxErrorMessageBytes;
  if (payload_bytes > limit) payload_bytes = limit;
  auto* buf = static_cast<uint8_t*>(std::malloc(sizeof(wire::RpcHeader) + payload_bytes + 1));
  if (buf == nullptr) return ResourceExhausted("out of memory for a reply");
  wire::RpcHeader h = request;
  h.magic = wire::kRpcMagic;
  h.version = wire::kProtocolVersion;
  h.payload_bytes = static_cast<uint32_t>(payload_bytes);
  h.status = static_cast<int32_t>(code);
  h.reserved = 0;
  std::memcpy(buf, &h, sizeof(h));
  if (payload_bytes > 0) std::memcpy(buf + sizeof(h), payload, payload_bytes);
  ucp_request_param_t p{};
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = &on_reply_sent;
  p.user_data = buf;
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  ucs_status_ptr_t r = ucp_am_send_nbx(ep_, wire::kAmRpcResponse, buf, sizeof(h), buf + sizeof(h),
                                       payload_bytes, &p);
  if (UCS_PTR_IS_PTR(r)) return OkStatus();  // freed by on_reply_sent
  std::free(buf);
  if (UCS_PTR_IS_ERR(r)) return from_ucs(UCS_PTR_STATUS(r), fmt::format("reply to {}", peer_));
  return OkStatus();
}

namespace {

// UCX's description of an endpoint's configuration (ucp_ep_print_info).
std::string ep_info(ucp_ep_h ep) {
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (f == nullptr) return {};
  ucp_ep_print_info(ep, f);
  std::fclose(f);
  std::string out(text, size);
  std::free(text);
  return out;
}

}  // namespace

bool Endpoint::native_rma() const {
  // UCX lists the lanes of one-sided protocols as "get[i]: ..."/"put[i]: ..."; with emulation
  // (TCP) there are none.
  return ep_ != nullptr && ep_info(ep_).find("get[") != std::string::npos;
}

std::string Endpoint::transports() const {
  if (ep_ == nullptr) return "closed";
  const std::string info = ep_info(ep_);
  const char* text = info.data();
  const size_t size = info.size();
  // Lines look like "#   lane[0]:  3:posix/memory.0 md[3] ... am am_bw#0".
  std::set<std::string> seen;
  std::string out;
  std::string_view all(text, size);
  size_t pos = 0;
  while ((pos = all.find("lane[", pos)) != std::string_view::npos) {
    size_t colon = all.find(':', all.find(']', pos));
    size_t eol = all.find('\n', pos);
    size_t start = all.find(':', colon + 1);
    if (start == std::string_view::npos) break;
    if (start > eol) {  // "lane[0]: cm rdmacm": a connection manager, not a data lane
      pos = eol;
      continue;
    }
    ++start;
    size_t end = all.find_first_of(" \n", start);
    std::string tl(all.substr(start, end - start));
    if (auto dot = tl.rfind('.'); dot != std::string::npos && tl.find('/') < dot) tl.resize(dot);
    if (seen.insert(tl).second) out += (out.empty() ? "" : ",") + tl;
    pos = end;
  }
  return out.empty() ? "unknown" : out;
}

}  // namespace farmem::fabric
