#include "farmem/client/served_ops.h"

#include <algorithm>
#include <cstring>

namespace farmem::client {

namespace w = farmem::wire;

ServedOps::Message& ServedOps::room_for(uint32_t request_bytes, uint32_t reply_bytes) {
  if (!messages_.empty()) {
    Message& m = messages_.back();
    if (!m.posted && m.count < w::kMaxMemOpsPerMessage &&
        m.request.size() + request_bytes <= w::kMaxRpcPayloadBytes &&
        m.reply_expected + reply_bytes <= w::kMaxRpcPayloadBytes) {
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
  Message& m = room_for(static_cast<uint32_t>(sizeof(op)) + data_bytes, reply_bytes);
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

void ServedOps::cas(uint64_t offset, uint64_t expected, uint64_t desired, uint64_t* old_value) {
  w::MemOp op{static_cast<uint8_t>(w::MemOpKind::kCas), 0, 0, 8, offset, expected, desired};
  add(op, nullptr, reinterpret_cast<uint8_t*>(old_value), 8);
}

void ServedOps::faa(uint64_t offset, uint64_t add_value, uint64_t* old_value) {
  w::MemOp op{static_cast<uint8_t>(w::MemOpKind::kFaa), 0, 0, 8, offset, add_value, 0};
  add(op, nullptr, reinterpret_cast<uint8_t*>(old_value), 8);
}

Status ServedOps::post(fabric::Completion* c, uint64_t deadline_ns) {
  for (Message& m : messages_) {
    if (m.posted) continue;
    w::MemOpsHeader h{m.count, 0};
    std::memcpy(m.request.data(), &h, sizeof(h));
    m.reply.resize(m.reply_expected);
    m.posted = true;
    FARMEM_RETURN_IF_ERROR(ep_->post_rpc(static_cast<uint16_t>(w::Opcode::kMemOps),
                                         m.request.data(), m.request.size(), m.reply.data(),
                                         m.reply_expected, &m.reply_bytes, c, deadline_ns));
  }
  return OkStatus();
}

void ServedOps::finish() {
  for (Message& m : messages_) {
    if (m.reply_bytes != m.reply_expected) continue;  // failed or late: nothing arrived
    for (const Dest& d : m.dests) std::memcpy(d.dst, m.reply.data() + d.reply_at, d.bytes);
  }
  messages_.clear();
}

}  // namespace farmem::client
