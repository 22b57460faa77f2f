#include "farmem/client/served_ops.h"

#include <algorithm>

namespace farmem::client {

namespace w = farmem::wire;

void ServedOps::add(const w::MemOp& op, uint8_t* dst, const void* data) {
  const auto at = static_cast<uint32_t>(data_.size());
  if (data != nullptr) data_.append(static_cast<const char*>(data), op.bytes);
  ops_.push_back(Op{op, dst, at});
}

void ServedOps::read(uint64_t offset, void* dst, size_t bytes) {
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t done = 0; done < bytes;) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(w::kMaxMemOpBytes, bytes - done));
    add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kRead), 0, 0, n, offset + done, 0, 0},
        out + done, nullptr);
    done += n;
  }
}

void ServedOps::write(uint64_t offset, const void* src, size_t bytes) {
  const auto* in = static_cast<const uint8_t*>(src);
  for (size_t done = 0; done < bytes;) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(w::kMaxMemOpBytes, bytes - done));
    add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kWrite), 0, 0, n, offset + done, 0, 0}, nullptr,
        in + done);
    done += n;
  }
}

void ServedOps::persist(uint64_t offset, uint64_t bytes) {
  for (uint64_t done = 0; done < bytes;) {
    const auto n =
        static_cast<uint32_t>(std::min<uint64_t>(w::kMaxMemOpPersistBytes, bytes - done));
    add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kPersist), 0, 0, n, offset + done, 0, 0},
        nullptr, nullptr);
    done += n;
  }
}

void ServedOps::cas(uint64_t offset, uint64_t expected, uint64_t desired, uint64_t* old_value) {
  add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kCas), 0, 0, 8, offset, expected, desired},
      reinterpret_cast<uint8_t*>(old_value), nullptr);
}

void ServedOps::faa(uint64_t offset, uint64_t add_value, uint64_t* old_value) {
  add(w::MemOp{static_cast<uint8_t>(w::MemOpKind::kFaa), 0, 0, 8, offset, add_value, 0},
      reinterpret_cast<uint8_t*>(old_value), nullptr);
}

void ServedOps::post(fabric::Completion* c, uint64_t deadline_ns) {
  for (const Op& o : ops_) {
    const bool write = o.op.kind == static_cast<uint8_t>(w::MemOpKind::kWrite);
    lane_->add(o.op, write ? data_.data() + o.data_at : nullptr, o.dst, c, deadline_ns);
  }
  ops_.clear();
  data_.clear();
}

}  // namespace farmem::client
