#include "farmem/client/served_ops.h"

#include <algorithm>
#include <cstring>

namespace farmem::client {

namespace w = farmem::wire;

ServedOps::Message& ServedOps::room_for(uint32_t request_bytes, uint32_t reply_bytes,
                                        uint32_t persist_bytes) {
  if (!messages_.empty()) {
    Message& m = messages_.back();
    if (!m.posted && m.count < w::kMaxMemOpsPerMessage &&
        m.request.size() + request_bytes <= w::kMaxRpcPayloadBytes &&
        m.reply_expected + reply_bytes <= w::kMaxRpcPayloadBytes &&
        m.persist_bytes + persist_bytes <= w::kMaxMemOpsPersistBytes) {
      return m;
    }
  }
  Message& m = messages_.emplace_back();
  m.request.assign(sizeof(w::MemOpsHeader), '\0');
  return m;
}

void ServedOps::add(const w::MemOp& op, const void* data, uint8_t* dst, uint32_t reply_bytes) {
  const bool write = op.kind == static_cast<uint8_t>(w::MemOpKind::kWrite);
  const uint32_t data_bytes = write ? w::pad8(op.bytes) : 0;
  const uint32_t persist_bytes =
      op.kind == static_cast<uint8_t>(w::MemOpKind::kPersist) ? op.bytes : 0;
  Message& m = room_for(static_cast<uint32_t>(sizeof(op)) + data_bytes, reply_bytes, persist_bytes);
  m.persist_bytes += persist_bytes;
  m.request.append(reinterpret_cast<const char*>(&op), sizeof(op));
  if (write) {
    m.request.append(static_cast<const char*>(data), op.bytes);
    m.request.append(data_bytes - op.bytes, '\0');
  }
  if (reply_bytes > 0) {
    m.dests.push_back(Dest{dst, op.kind == static_cast<uint8_t>(w::MemOpKind::kRead) ? op.bytes : 8,
                           m.reply_expected});
    m.reply_expected += reply_bytes;
  }
  ++m.count;
}

void ServedOps::read(uint64_t offset, void* dst, size_t bytes) {
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t done = 0; done < bytes;) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(w::kMaxMemOpBytes, bytes - done));
    w::MemOp op{static_cast<uint8_t>(w::MemOpKind::kRead), 0, 0, n, offset + done, 0, 0};
    add(op, nullptr, out + done, w::pad8(n));
    done += n;
  }
}

void ServedOps::write(uint64_t offset, const void* src, size_t bytes) {
  const auto* in = static_cast<const uint8_t*>(src);
  for (size_t done = 0; done < bytes;) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(w::kMaxMemOpBytes, bytes - done));
    w::MemOp op{static_cast<uint8_t>(w::MemOpKind::kWrite), 0, 0, n, offset + done, 0, 0};
    add(op, in + done, nullptr, 0);
    done += n;
  }
}

void ServedOps::persist(uint64_t offset, uint64_t bytes) {
  for (uint64_t done = 0; done < bytes;) {
    const auto n =
        static_cast<uint32_t>(std::min<uint64_t>(w::kMaxMemOpPersistBytes, bytes - done));
    w::MemOp op{static_cast<uint8_t>(w::MemOpKind::kPersist), 0, 0, n, offset + done, 0, 0};
    add(op, nullptr, nullptr, 0);
    done += n;
  }
}

void ServedOps::cas(uint64_t offset, uint64_t expected, uint64_t desired, uint64_t* old_value) {
  w::MemOp op{static_cast<uint8_t>(w::MemOpKind::kCas), 0, 0, 8, offset, expected, desired};
  add(op, nullptr, reinterpret_cast<uint8_t*>(old_value), 8);
}

void ServedOps::faa(uint64_t offset, uint64_t add_value, uint64_t* old_value) {
  w::MemOp op{static_cast<uint8_t>(w::MemOpKind::kFaa), 0, 0, 8, offset, add_value, 0};
  add(op, nullptr, reinterpret_cast<uint8_t*>(old_value), 8);
}

Status ServedOps::post(fabric::Completion* c, uint64_t deadline_ns) {
  outer_ = c;
  deadline_ns_ = deadline_ns;
  for (size_t i = next_; i < messages_.size(); ++i) ++c->remaining;  // each completes once
  return post_more();
}

Status ServedOps::post_more() {
  Status first;
  while (next_ < messages_.size() && (in_flight_ < kWindow || !failed_.ok())) {
    Message& m = messages_[next_++];
    m.posted = true;
    if (!failed_.ok()) {  // an earlier message failed: the rest are not sent
      outer_->complete_one(failed_);
      continue;
    }
    w::MemOpsHeader h{m.count, 0};
    std::memcpy(m.request.data(), &h, sizeof(h));
    m.reply.resize(m.reply_expected);
    m.owner = this;
    m.done.notify = &ServedOps::on_message_done;
    m.done.owner = &m;
    Status s =
        ep_->post_rpc(static_cast<uint16_t>(w::Opcode::kMemOps), m.request.data(), m.request.size(),
                      m.reply.data(), m.reply_expected, &m.reply_bytes, &m.done, deadline_ns_);
    if (!s.ok()) {
      if (first.ok()) first = s;
      failed_ = s;
      outer_->complete_one(s);
      continue;
    }
    ++in_flight_;
  }
  return first;
}

void ServedOps::on_message_done(fabric::Completion* c) {
  // Inside a UCX callback or Worker::expire: record, and leave posting to pump().
  auto* m = static_cast<Message*>(c->owner);
  ServedOps* self = m->owner;
  --self->in_flight_;
  if (!c->status.ok() && self->failed_.ok()) self->failed_ = c->status;
  if (self->next_ < self->messages_.size() && !self->pump_scheduled_) {
    self->pump_scheduled_ = true;
    self->ep_->worker().defer(&ServedOps::pump, self);
  }
  fabric::Completion* outer = self->outer_;
  outer->complete_one(c->status);  // may resume the waiter: nothing touches self after this
}

void ServedOps::pump(void* p) {
  auto* self = static_cast<ServedOps*>(p);
  self->pump_scheduled_ = false;
  (void)self->post_more();
}

void ServedOps::finish() {
  for (Message& m : messages_) {
    if (m.reply_bytes != m.reply_expected) continue;  // failed or late: nothing arrived
    for (const Dest& d : m.dests) std::memcpy(d.dst, m.reply.data() + d.reply_at, d.bytes);
  }
  messages_.clear();
}

}  // namespace farmem::client
