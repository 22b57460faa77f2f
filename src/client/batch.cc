#include "farmem/client/batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "direct_access.h"
#include "farmem/client/cluster.h"
#include "farmem/client/thread_client.h"
#include "farmem/common/check.h"
#include "farmem/common/clock.h"

namespace farmem::client {

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
    client_->flush_served();  // its served operations may still wait for the round's end
    client_->worker().progress();
    client_->worker().expire(now_ns());
  }
}

void Batch::on_complete(fabric::Completion* c) {
  auto* self = static_cast<Batch*>(c->owner);
  if (self->handle_ == nullptr) return;
  if (self->persists_held()) {  // the rest completed: now the persists (posted off the callback)
    self->client_->worker().defer(&Batch::post_persists_then_resume, self);
    return;
  }
  self->client_->scheduler().post(self->handle_);
}

bool Batch::persists_held() const {
  return off_ != nullptr && !off_->after.empty() && !persists_posted_;
}

bool Batch::post_persists() {
  if (!persists_held()) return false;
  persists_posted_ = true;
  if (!first_error_.ok() || !completion_.status.ok()) return false;  // a failed batch: none
  for (auto& o : off_->after) o->post(&completion_, deadline_ns_);
  return completion_.remaining > 0;
}

void Batch::post_persists_then_resume(void* p) {
  auto* self = static_cast<Batch*>(p);
  if (self->post_persists()) return;  // their completion resumes the waiter
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
  note(s);
  if (s.ok()) ++ops_;
  return s;
}

Status Batch::note_ucx_post(Status s) {
  note(s);
  if (s.ok()) posted_through_ucx_ = true;
  return s;
}

uint64_t* Batch::operand_slot() {
  FARMEM_ASSERT(ops_ - 1 < kMaxOps, "a batch operation was posted without being admitted");
  return &operands_[ops_ - 1];
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
  return served.emplace_back(std::make_unique<ServedOps>(client_->served_lane(node))).get();
}

void Batch::perform_deferred_reads() {
  for (uint32_t i = 0; i < deferred_count_; ++i) {
    const DeferredRead& d = deferred_[i];
    if (d.ep->direct_base() == nullptr) {  // the node failed since the read was posted
      if (first_error_.ok()) first_error_ = direct::lost_mapping(*d.ep);
      continue;
    }
    direct::read(d.dst, d.src, d.bytes);
  }
  deferred_count_ = 0;
}

Status Batch::read(GlobalAddress addr, void* dst, size_t bytes) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  FARMEM_TRY(admit(addr, bytes, false, false, &ep, &raddr));
  ++client_->mutable_counters().reads;
  if (const uint8_t* p = direct_target(ep, addr)) {
    if (deferred_count_ == kMaxDeferredReads) perform_deferred_reads();
    FARMEM_ASSERT(deferred_count_ < kMaxDeferredReads, "deferred reads overflow their array");
    direct::prefetch_source(p, bytes);
    deferred_[deferred_count_++] = DeferredRead{dst, p, bytes, ep};
    return OkStatus();
  }
  if (ServedOps* o = served_for(ep, addr.node())) {
    o->read(addr.offset(), dst, bytes);
    return OkStatus();
  }
  return note_ucx_post(ep->post_get(dst, raddr, bytes, &completion_, deadline_ns_));
}

Status Batch::write(GlobalAddress addr, const void* src, size_t bytes) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  FARMEM_TRY(admit(addr, bytes, false, true, &ep, &raddr));
  ++client_->mutable_counters().writes;
  perform_deferred_reads();  // program order: earlier reads of this batch come first
  if (uint8_t* p = direct_target(ep, addr)) {
    direct::write(p, src, bytes);
    return OkStatus();
  }
  if (ServedOps* o = served_for(ep, addr.node())) {
    o->write(addr.offset(), src, bytes);
    return OkStatus();
  }
  auto& written = off_direct().written;
  if (std::find(written.begin(), written.end(), ep) == written.end()) written.push_back(ep);
  return note_ucx_post(ep->post_put(src, raddr, bytes, &completion_, deadline_ns_));
}

Status Batch::cas(GlobalAddress addr, uint64_t expected, uint64_t desired, uint64_t* old_value) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  if (old_value == nullptr) return InvalidArgument("Batch::cas needs a result pointer");
  FARMEM_TRY(admit(addr, 8, true, true, &ep, &raddr));
  ++client_->mutable_counters().cas;
  perform_deferred_reads();
  if (uint8_t* p = direct_target(ep, addr)) {
    *old_value = direct::cas(p, expected, desired);
    return OkStatus();
  }
  if (ServedOps* o = served_for(ep, addr.node())) {
    o->cas(addr.offset(), expected, desired, old_value);
    return OkStatus();
  }
  *old_value = desired;
  uint64_t* operand = operand_slot();
  *operand = expected;
  return note_ucx_post(ep->post_cas(raddr, operand, old_value, &completion_, deadline_ns_));
}

Status Batch::faa(GlobalAddress addr, uint64_t add, uint64_t* old_value) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  if (old_value == nullptr) return InvalidArgument("Batch::faa needs a result pointer");
  FARMEM_TRY(admit(addr, 8, true, true, &ep, &raddr));
  ++client_->mutable_counters().faa;
  perform_deferred_reads();
  if (uint8_t* p = direct_target(ep, addr)) {
    *old_value = direct::faa(p, add);
    return OkStatus();
  }
  if (ServedOps* o = served_for(ep, addr.node())) {
    o->faa(addr.offset(), add, old_value);
    return OkStatus();
  }
  uint64_t* operand = operand_slot();
  *operand = add;
  return note_ucx_post(ep->post_faa(raddr, operand, old_value, &completion_, deadline_ns_));
}

Status Batch::persist(GlobalAddress addr, uint64_t bytes) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  FARMEM_TRY(admit(addr, bytes, false, true, &ep, &raddr));
  if (!client_->cluster().durable(addr.node())) return OkStatus();  // nothing to keep there
  if (ServedOps* o = served_for(ep, addr.node())) {
    o->persist(addr.offset(), bytes);
    return OkStatus();
  }
  auto& after = off_direct().after;
  auto it =
      std::find_if(after.begin(), after.end(), [ep](const auto& o) { return o->endpoint() == ep; });
  ServedOps* o =
      it != after.end()
          ? it->get()
          : after.emplace_back(std::make_unique<ServedOps>(client_->served_lane(addr.node())))
                .get();
  o->persist(addr.offset(), bytes);
  return OkStatus();
}

Status Batch::call(uint16_t node, uint16_t procedure, const void* args, size_t bytes, void* reply,
                   size_t reply_bytes) {
  fabric::Endpoint* ep;
  uint64_t raddr;
  if (bytes == 0 || bytes > wire::kMaxMemOpBytes || reply_bytes < wire::kMinCallReplyBytes ||
      reply_bytes > wire::kMaxCallReplyBytes || reply_bytes % 8 != 0) {
    Status s = InvalidArgument(
        fmt::format("call with {} argument bytes and a {}-byte reply slot", bytes, reply_bytes));
    note(s);
    return s;
  }
  // (The node's region start names the node: a call reaches no address of its own.)
  FARMEM_TRY(admit(GlobalAddress(node, 0), 1, false, false, &ep, &raddr));
  ServedOps* o = served_for(ep, node);
  if (o == nullptr) {
    Status s = InvalidArgument(fmt::format("node {} does not serve calls on this transport", node));
    note(s);
    return s;
  }
  perform_deferred_reads();
  o->call(procedure, args, bytes, reply, reply_bytes);
  return OkStatus();
}

Status Batch::fence() {
  perform_deferred_reads();
  // Direct operations are complete when posted, so they are ordered already; operations that
  // went through UCX are ordered only by UCX's fence, and later ones must then go through UCX.
  if (!posted_through_ucx_) return OkStatus();
  ucx_fenced_ = true;
  Status s = client_->worker().fence();
  note(s);
  return s;
}

bool Batch::WaitAwaitable::await_ready() {
  b->waited_ = true;
  // First: a failure it finds makes the posts below and the deferred reads see it.
  b->client_->pace(b->ops_);
  if (b->off_ != nullptr) {
    for (auto& o : b->off_->served) o->post(&b->completion_, b->deadline_ns_);
    for (fabric::Endpoint* ep : b->off_->written) {
      b->note(ep->post_flush(&b->completion_, b->deadline_ns_));
    }
  }
  if (b->completion_.remaining > 0) return false;  // deferred reads run when UCX completes
  if (b->post_persists()) return false;
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
  FARMEM_TRY(b->first_error_);
  return b->completion_.status;
}

}  // namespace farmem::client
