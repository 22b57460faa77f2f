#include "farmem/client/served_lane.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "farmem/common/check.h"

namespace farmem::client {

namespace w = farmem::wire;

ServedLane::ServedLane(fabric::Endpoint* ep, uint32_t window, ReadyFn on_ready, void* arg)
    : ep_(ep), window_(window == 0 ? 1 : window), on_ready_(on_ready), arg_(arg) {}

ServedLane::~ServedLane() {
  // Nothing may be left: a message in flight would complete into a destroyed lane.
  FARMEM_ASSERT(in_flight_ == 0, "a served lane destroyed with messages in flight");
  while (!queue_.empty()) {
    Message* m = queue_.front();
    queue_.pop_front();
    finish(m, Cancelled("the client thread closed before the operations were sent"));
  }
}

bool ServedLane::fits(const Message& m, uint32_t request_bytes, uint32_t reply_bytes,
                      uint32_t persist_bytes, uint64_t deadline_ns) const {
  if (m.count >= w::kMaxMemOpsPerMessage ||
      m.request.size() + request_bytes > w::kMaxRpcPayloadBytes ||
      m.reply_expected + reply_bytes > w::kMaxRpcPayloadBytes ||
      m.persist_bytes + persist_bytes > w::kMaxMemOpsPersistBytes) {
    return false;
  }
  if (deadline_ns == m.deadline_ns) return true;
  // Explicit deadlines share a message when this one is not earlier and not much later.
  return deadline_ns != 0 && m.deadline_ns != 0 && deadline_ns > m.deadline_ns &&
         deadline_ns - m.deadline_ns <= kDeadlineSlackNs;
}

ServedLane::Message* ServedLane::take_message() {
  Message* m;
  if (!free_.empty()) {
    m = free_.back();
    free_.pop_back();
  } else {
    m = all_.emplace_back(std::make_unique<Message>()).get();
    m->owner = this;
    m->done.notify = &ServedLane::on_message_done;
    m->done.owner = m;
  }
  m->request.assign(sizeof(w::MemOpsHeader), '\0');
  m->count = 0;
  m->reply_expected = 0;
  m->persist_bytes = 0;
  m->reply_bytes = UINT32_MAX;
  m->dests.clear();
  m->parts.clear();
  m->done.status = Status();
  return m;
}

ServedLane::Message& ServedLane::room_for(uint32_t request_bytes, uint32_t reply_bytes,
                                          uint32_t persist_bytes, uint64_t deadline_ns) {
  if (!queue_.empty() &&
      fits(*queue_.back(), request_bytes, reply_bytes, persist_bytes, deadline_ns)) {
    return *queue_.back();
  }
  Message* m = take_message();
  m->deadline_ns = deadline_ns;
  queue_.push_back(m);
  return *m;
}

void ServedLane::read(uint64_t offset, void* dst, size_t bytes, const Set& set) {
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t done = 0; done < bytes;) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(w::kMaxMemOpBytes, bytes - done));
    add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kRead), 0, 0, n, offset + done, 0, 0}, nullptr,
        out + done, set);
    done += n;
  }
}

void ServedLane::write(uint64_t offset, const void* src, size_t bytes, const Set& set) {
  const auto* in = static_cast<const uint8_t*>(src);
  for (size_t done = 0; done < bytes;) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(w::kMaxMemOpBytes, bytes - done));
    add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kWrite), 0, 0, n, offset + done, 0, 0},
        in + done, nullptr, set);
    done += n;
  }
}

void ServedLane::persist(uint64_t offset, uint64_t bytes, const Set& set) {
  for (uint64_t done = 0; done < bytes;) {
    const auto n =
        static_cast<uint32_t>(std::min<uint64_t>(w::kMaxMemOpPersistBytes, bytes - done));
    add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kPersist), 0, 0, n, offset + done, 0, 0},
        nullptr, nullptr, set);
    done += n;
  }
}

void ServedLane::cas(uint64_t offset, uint64_t expected, uint64_t desired, uint64_t* old_value,
                     const Set& set) {
  add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kCas), 0, 0, 8, offset, expected, desired},
      nullptr, reinterpret_cast<uint8_t*>(old_value), set);
}

void ServedLane::faa(uint64_t offset, uint64_t add_value, uint64_t* old_value, const Set& set) {
  add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kFaa), 0, 0, 8, offset, add_value, 0}, nullptr,
      reinterpret_cast<uint8_t*>(old_value), set);
}

void ServedLane::call(uint16_t procedure, const void* args, size_t bytes, void* reply,
                      size_t reply_bytes, const Set& set) {
  FARMEM_ASSERT(bytes > 0 && bytes <= w::kMaxMemOpBytes && reply_bytes >= w::kMinCallReplyBytes &&
                    reply_bytes <= w::kMaxCallReplyBytes && reply_bytes % 8 == 0,
                "call arguments and reply slot within the memops limits");
  add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kCall), 0, 0, static_cast<uint32_t>(bytes), 0,
               procedure, reply_bytes},
      args, static_cast<uint8_t*>(reply), set);
}

void ServedLane::add(const w::MemOp& op, const void* data, uint8_t* dst, const Set& set) {
  fabric::Completion* outer = set.outer;
  const auto kind = static_cast<w::MemOpKind>(op.kind);
  const bool carries_data = kind == w::MemOpKind::kWrite || kind == w::MemOpKind::kCall;
  const uint32_t data_bytes = carries_data ? w::pad8(op.bytes) : 0;
  const uint32_t persist_bytes = kind == w::MemOpKind::kPersist ? op.bytes : 0;
  const auto reply_bytes = static_cast<uint32_t>(w::memop_reply_bytes(op));
  Message& m = room_for(static_cast<uint32_t>(sizeof(op)) + data_bytes, reply_bytes, persist_bytes,
                        set.deadline_ns);
  m.persist_bytes += persist_bytes;
  m.request.append(reinterpret_cast<const char*>(&op), sizeof(op));
  if (data_bytes > 0) {
    m.request.append(static_cast<const char*>(data), op.bytes);
    m.request.append(data_bytes - op.bytes, '\0');
  }
  if (reply_bytes > 0) {
    const uint32_t bytes = kind == w::MemOpKind::kRead ? op.bytes : reply_bytes;
    m.dests.push_back(Dest{dst, bytes, m.reply_expected});
    m.reply_expected += reply_bytes;
  }
  ++m.count;
  if (m.parts.empty() || m.parts.back() != outer) {
    ++outer->remaining;  // completed once per part
    m.parts.push_back(outer);
  }
  mark_ready();
}

void ServedLane::mark_ready() {
  if (ready_) return;
  ready_ = true;
  on_ready_(arg_, this);
}

void ServedLane::flush() {
  ready_ = false;
  if (!failed_.ok()) {  // an earlier message failed: the waiting ones are not sent
    Status s = std::move(failed_);
    failed_ = Status();
    while (!queue_.empty()) {
      Message* m = queue_.front();
      queue_.pop_front();
      finish(m, s);
    }
    return;
  }
  while (!queue_.empty() && in_flight_ < window_) {
    Message* m = queue_.front();
    queue_.pop_front();
    post(m);
  }
}

void ServedLane::post(Message* m) {
  w::MemOpsHeader h{m->count, 0};
  std::memcpy(m->request.data(), &h, sizeof(h));
  m->reply.resize(m->reply_expected);
  m->done.remaining = 0;
  Status s =
      ep_->post_rpc(static_cast<uint16_t>(w::Opcode::kMemOps), m->request.data(), m->request.size(),
                    m->reply.data(), m->reply_expected, &m->reply_bytes, &m->done, m->deadline_ns);
  if (!s.ok()) {
    finish(m, s);
    return;
  }
  ++in_flight_;
  ++messages_posted_;
  ops_posted_ += m->count;
}

void ServedLane::finish(Message* m, const Status& s) {
  const bool whole = s.ok() && m->reply_bytes == m->reply_expected;
  if (whole) {
    for (const Dest& d : m->dests) std::memcpy(d.dst, m->reply.data() + d.reply_at, d.bytes);
  }
  const Status status = whole ? Status() : (s.ok() ? ProtocolError("short kMemOps reply") : s);
  // Completing a part may post a coroutine (never resume it here) or add operations to this
  // lane: those go into waiting messages, never into m (neither waiting nor free until below).
  for (fabric::Completion* outer : m->parts) outer->complete_one(status);
  m->parts.clear();
  free_.push_back(m);
}

void ServedLane::on_message_done(fabric::Completion* c) {
  // Inside a UCX callback or Worker::expire: complete the parts, and leave posting to flush().
  auto* m = static_cast<Message*>(c->owner);
  ServedLane* self = m->owner;
  --self->in_flight_;
  Status s = std::move(c->status);
  if (!s.ok() && self->failed_.ok() && !self->queue_.empty()) self->failed_ = s;
  self->finish(m, s);
  if (!self->queue_.empty()) self->mark_ready();
}

}  // namespace farmem::client
