#include "farmem/client/op_awaitable.h"

#include <utility>

#include "direct_access.h"
#include "farmem/client/thread_client.h"

namespace farmem::client {

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
  if (client_->throttling()) {
    if (!client_->throttle().try_acquire()) {
      ++client_->mutable_counters().throttled;
      return false;
    }
    credit_ = true;
  }
  post();
  if (deferred_ != nullptr) {
    // A direct read or atomic: yield once so that other coroutines post (and prefetch) theirs,
    // unless nobody else would run, in which case it is performed now.
    if (client_->scheduler().others_ready()) return false;
    finish_deferred();
  }
  return completion_.remaining == 0;
}

void OpAwaitable::await_suspend(std::coroutine_handle<> h) {
  handle_ = h;
  if (!posted_) {
    client_->throttle().enqueue(&waiter_);
  } else if (deferred_ != nullptr) {
    client_->scheduler().post(h);  // the yield; the operation happens in await_resume
  }
}

Status OpAwaitable::await_resume() {
  if (deferred_ != nullptr) finish_deferred();
  if (credit_) client_->throttle().release();
  ClientCounters& k = client_->mutable_counters();
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
  if (self->handle_) self->client_->scheduler().post(self->handle_);
}

void OpAwaitable::on_credit(runtime::Throttle::Waiter* wt) {
  auto* self = static_cast<OpAwaitable*>(wt->owner);
  self->credit_ = true;
  self->post();
  if (self->completion_.remaining == 0) self->client_->scheduler().post(self->handle_);
}

void OpAwaitable::finish_deferred() {
  uint8_t* p = deferred_;
  deferred_ = nullptr;
  // The node may have failed while this coroutine yielded; its mapping is then gone.
  fabric::Endpoint* ep = client_->endpoint(addr_.node());
  if (ep->direct_base() == nullptr) {
    completion_.fail(direct::lost_mapping(*ep));
    return;
  }
  switch (kind_) {
    case OpKind::kRead:
      direct::read(buf_, p, bytes_);
      break;
    case OpKind::kWrite:
      break;  // never deferred
    case OpKind::kCas:
      *result_ = direct::cas(p, expected_, *result_);  // *result_ holds the desired value
      break;
    case OpKind::kFaa:
      *result_ = direct::faa(p, expected_);  // expected_ holds the addend
      break;
  }
}

bool OpAwaitable::post_direct(fabric::Endpoint* ep, GlobalAddress addr) {
  uint8_t* base = client_->direct_base(ep);
  if (base == nullptr) return false;
  uint8_t* p = base + addr.offset();
  switch (kind_) {
    case OpKind::kRead:
      direct::prefetch_source(p, bytes_);
      deferred_ = p;
      break;
    case OpKind::kWrite:
      direct::write(p, buf_, bytes_);
      break;
    case OpKind::kCas:
    case OpKind::kFaa:
      __builtin_prefetch(p, 1, 3);  // for writing: the atomic then finds the line owned
      deferred_ = p;
      break;
  }
  return true;
}

void OpAwaitable::post_served(uint16_t node) {
  ServedLane* lane = client_->served_lane(node);
  const ServedLane::Set set{&completion_, deadline_ns_};
  switch (kind_) {
    case OpKind::kRead:
      lane->read(addr_.offset(), buf_, bytes_, set);
      break;
    case OpKind::kWrite:
      lane->write(addr_.offset(), buf_, bytes_, set);
      break;
    case OpKind::kCas:
      lane->cas(addr_.offset(), expected_, *result_, result_, set);  // *result_: the desired value
      break;
    case OpKind::kFaa:
      lane->faa(addr_.offset(), expected_, result_, set);  // expected_: the addend
      break;
  }
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
  if (client_->served(addr_.node())) return post_served(addr_.node());
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

}  // namespace farmem::client
