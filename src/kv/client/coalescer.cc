#include "farmem/kv/coalescer.h"

#include <fmt/format.h>

#include <algorithm>

#include "farmem/common/check.h"
#include "farmem/common/clock.h"

namespace farmem::kv {

namespace w = wire;

// A kOps message: its request, the slots of its operations, and its reply buffer.
struct OpsMessage {
  Coalescer* owner = nullptr;
  NodeWindow* window = nullptr;
  OpsRequest request;
  std::vector<OpSlot*> slots;
  std::unique_ptr<uint8_t[]> reply{new uint8_t[w::kMaxRpcPayloadBytes]};
  uint32_t reply_bytes = 0;
  size_t reply_estimate = 0;  // reply bytes the operations are expected to take
  uint32_t max_ops = w::kMaxOpsPerMessage;
  uint64_t deadline_ns = 0;
  fabric::Completion done;
};

struct NodeWindow {
  uint16_t node = 0;
  uint32_t in_flight = 0;
  std::vector<Lane*> blocked;  // lanes with messages waiting for room, in order
};

namespace {
constexpr size_t kMaxSpareMessages = 64;
}

Lane::Lane(Coalescer* owner, uint64_t pool, uint16_t node, fabric::Endpoint* ep)
    : owner_(owner), pool_(pool), node_(node), ep_(ep), window_(owner->window_for(node)) {}

Lane::~Lane() { owner_->forget(this); }

Coalescer::Coalescer(client::ThreadClient* client, const CoalescerOptions& options)
    : client_(client), options_(options) {
  options_.max_in_flight = std::max<uint32_t>(options_.max_in_flight, 1);
  options_.max_ops = std::clamp<uint32_t>(options_.max_ops, 1, w::kMaxOpsPerMessage);
}

Coalescer::~Coalescer() = default;

size_t Coalescer::in_flight(uint16_t node) const {
  for (const NodeWindow& w : windows_) {
    if (w.node == node) return w.in_flight;
  }
  return 0;
}

NodeWindow* Coalescer::window_for(uint16_t node) {
  for (NodeWindow& w : windows_) {
    if (w.node == node) return &w;
  }
  windows_.push_back(NodeWindow{node, 0, {}});
  return &windows_.back();
}

void Coalescer::forget(Lane* lane) {
  flush_.erase(std::remove(flush_.begin(), flush_.end(), lane), flush_.end());
  auto& b = lane->window_->blocked;
  b.erase(std::remove(b.begin(), b.end(), lane), b.end());
  for (OpsMessage* m : lane->queue_) fail(m, Cancelled("the pool handle was closed"));
  lane->queue_.clear();
}

void Coalescer::Submit::await_suspend(std::coroutine_handle<> h) {
  slot->handle = h;
  c->enqueue(lane, slot, flags, key, value, reply_value_hint);
}

OpsMessage* Coalescer::take_message(Lane* lane) {
  std::unique_ptr<OpsMessage> m;
  if (!spare_.empty()) {
    m = std::move(spare_.back());
    spare_.pop_back();
  } else {
    m = std::make_unique<OpsMessage>();
    m->owner = this;
    m->done.notify = &Coalescer::on_done;
  }
  m->done.owner = m.get();
  m->window = lane->window_;
  m->request.reset(lane->pool_);
  m->slots.clear();
  m->reply_bytes = 0;
  m->reply_estimate = sizeof(w::KvOpsReplyHeader);
  m->max_ops = options_.coalesce ? options_.max_ops : 1;
  m->deadline_ns = now_ns() + options_.timeout_ns;
  return m.release();
}

void Coalescer::recycle(OpsMessage* m) {
  std::unique_ptr<OpsMessage> owned(m);
  if (spare_.size() < kMaxSpareMessages) spare_.push_back(std::move(owned));
}

void Coalescer::enqueue(Lane* lane, OpSlot* slot, uint8_t flags, std::string_view key,
                        std::string_view value, size_t reply_value_hint) {
  if (slot->op != w::KvOp::kPut) value = {};
  const size_t reply = op_reply_bytes(slot->op == w::KvOp::kGet ? reply_value_hint : 0);
  OpsMessage* m = lane->queue_.empty() ? nullptr : lane->queue_.back();
  if (m == nullptr || !m->request.fits(key.size(), value.size(), m->max_ops) ||
      m->reply_estimate + reply > w::kMaxRpcPayloadBytes) {
    m = take_message(lane);
    lane->queue_.push_back(m);
  }
  m->request.add(slot->op, flags, key, value);
  m->slots.push_back(slot);
  m->reply_estimate += reply;
  if (!options_.coalesce) {
    pump(lane);
    return;
  }
  if (!lane->listed_) {
    lane->listed_ = true;
    flush_.push_back(lane);
  }
  if (!round_end_pending_) {
    round_end_pending_ = true;
    client_->scheduler().at_round_end(&Coalescer::on_round_end, this);
  }
}

void Coalescer::on_round_end(void* self) {
  auto* c = static_cast<Coalescer*>(self);
  c->round_end_pending_ = false;
  std::vector<Lane*> lanes;
  lanes.swap(c->flush_);
  for (Lane* lane : lanes) {
    lane->listed_ = false;
    c->pump(lane);
  }
  lanes.clear();
  if (c->flush_.empty()) c->flush_.swap(lanes);  // keep the capacity
}

void Coalescer::pump(Lane* lane) {
  while (!lane->queue_.empty()) {
    if (lane->window_->in_flight >= options_.max_in_flight) {
      if (!lane->blocked_) {
        lane->blocked_ = true;
        lane->window_->blocked.push_back(lane);
      }
      return;
    }
    OpsMessage* m = lane->queue_.front();
    lane->queue_.pop_front();
    post(lane, m);
  }
}

void Coalescer::post(Lane* lane, OpsMessage* m) {
  if (lane->ep_ == nullptr) {
    fail(m, NotFound(fmt::format("no memory node with id {}", lane->node_)));
    return;
  }
  FARMEM_ASSERT(!m->slots.empty() && m->slots.size() == m->request.count() &&
                    m->request.count() <= w::kMaxOpsPerMessage &&
                    m->request.bytes() <= w::kMaxRpcPayloadBytes,
                "a kOps message fits the wire limits");
  m->done.remaining = 0;
  m->done.status = OkStatus();
  Status s = lane->ep_->post_rpc(static_cast<uint16_t>(w::KvOpcode::kOps), m->request.data(),
                                 m->request.bytes(), m->reply.get(), w::kMaxRpcPayloadBytes,
                                 &m->reply_bytes, &m->done, m->deadline_ns);
  if (!s.ok()) {
    fail(m, s);
    return;
  }
  ++messages_;
  ops_ += m->slots.size();
  ++m->window->in_flight;
  ++client_->mutable_counters().rpcs;
}

void Coalescer::fail(OpsMessage* m, const Status& why) {
  for (OpSlot* s : m->slots) s->status = why;
  wake(m);
}

void Coalescer::wake(OpsMessage* m) {
  runtime::Scheduler& sched = client_->scheduler();
  for (OpSlot* s : m->slots) sched.post(s->handle);
  recycle(m);
}

void Coalescer::on_done(fabric::Completion* c) {
  auto* m = static_cast<OpsMessage*>(c->owner);
  m->owner->finish(m);
}

void Coalescer::finish(OpsMessage* m) {
  NodeWindow* win = m->window;
  FARMEM_ASSERT(win->in_flight > 0, "a finished message was in flight");
  --win->in_flight;
  if (!win->blocked.empty() && !window_pending_) {
    window_pending_ = true;  // posting is not allowed inside a completion callback
    client_->worker().defer(&Coalescer::on_window, this);
  }
  if (!m->done.status.ok()) {
    fail(m, m->done.status);
    return;
  }
  OpsReplyReader reader(m->reply.get(), m->reply_bytes);
  Status s = reader.begin(static_cast<uint32_t>(m->slots.size()));
  for (size_t i = 0; i < m->slots.size() && s.ok(); ++i) {
    OpSlot* slot = m->slots[i];
    std::string_view value;
    s = reader.next(slot->op, &slot->reply, &value);
    if (s.ok() && slot->value != nullptr && !value.empty()) slot->value->assign(value);
    if (s.ok() && slot->value != nullptr && value.empty()) slot->value->clear();
  }
  if (!s.ok()) {
    fail(m, s);
    return;
  }
  wake(m);
}

void Coalescer::on_window(void* self) {
  auto* c = static_cast<Coalescer*>(self);
  c->window_pending_ = false;
  for (NodeWindow& w : c->windows_) {
    std::vector<Lane*> lanes;
    lanes.swap(w.blocked);
    for (Lane* lane : lanes) {
      lane->blocked_ = false;
      c->pump(lane);
    }
  }
}

}  // namespace farmem::kv
