#include "farmem/client/served_ops.h"

namespace farmem::client {

using wire::MemOpKind;

void ServedOps::read(uint64_t offset, void* dst, size_t bytes) {
  ops_.push_back(Op{MemOpKind::kRead, offset, bytes, 0, 0, dst, 0});
}

void ServedOps::write(uint64_t offset, const void* src, size_t bytes) {
  ops_.push_back(Op{MemOpKind::kWrite, offset, bytes, 0, 0, nullptr, data_.size()});
  data_.append(static_cast<const char*>(src), bytes);
}

void ServedOps::persist(uint64_t offset, uint64_t bytes) {
  ops_.push_back(Op{MemOpKind::kPersist, offset, bytes, 0, 0, nullptr, 0});
}

void ServedOps::cas(uint64_t offset, uint64_t expected, uint64_t desired, uint64_t* old_value) {
  ops_.push_back(Op{MemOpKind::kCas, offset, 8, expected, desired, old_value, 0});
}

void ServedOps::faa(uint64_t offset, uint64_t add_value, uint64_t* old_value) {
  ops_.push_back(Op{MemOpKind::kFaa, offset, 8, add_value, 0, old_value, 0});
}

void ServedOps::call(uint16_t procedure, const void* args, size_t bytes, void* reply,
                     size_t reply_bytes) {
  ops_.push_back(Op{MemOpKind::kCall, 0, bytes, procedure, reply_bytes, reply, data_.size()});
  data_.append(static_cast<const char*>(args), bytes);
}

void ServedOps::post(fabric::Completion* c, uint64_t deadline_ns) {
  const ServedLane::Set set{c, deadline_ns};
  for (const Op& o : ops_) {
    auto* old_value = static_cast<uint64_t*>(o.dst);
    switch (o.kind) {
      case MemOpKind::kRead:
        lane_->read(o.offset, o.dst, o.bytes, set);
        break;
      case MemOpKind::kWrite:
        lane_->write(o.offset, data_.data() + o.data_at, o.bytes, set);
        break;
      case MemOpKind::kCas:
        lane_->cas(o.offset, o.operand0, o.operand1, old_value, set);
        break;
      case MemOpKind::kFaa:
        lane_->faa(o.offset, o.operand0, old_value, set);
        break;
      case MemOpKind::kPersist:
        lane_->persist(o.offset, o.bytes, set);
        break;
      case MemOpKind::kCall:
        lane_->call(static_cast<uint16_t>(o.operand0), data_.data() + o.data_at, o.bytes, o.dst,
                    o.operand1, set);
        break;
    }
  }
  ops_.clear();
  data_.clear();
}

}  // namespace farmem::client
