#include "farmem/memnode/memops.h"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "farmem/fabric/wire.h"

namespace farmem::memnode {

namespace w = farmem::wire;

namespace {

Status check_op(const w::MemOp& op, uint64_t region_bytes) {
  if (op.reserved0 != 0 || op.reserved1 != 0) return ProtocolError("reserved memop fields not 0");
  const auto kind = static_cast<w::MemOpKind>(op.kind);
  const bool atomic = kind == w::MemOpKind::kCas || kind == w::MemOpKind::kFaa;
  const bool persist = kind == w::MemOpKind::kPersist;
  if (kind != w::MemOpKind::kRead && kind != w::MemOpKind::kWrite && !atomic && !persist) {
    return ProtocolError(fmt::format("unknown memop kind {}", op.kind));
  }
  const uint32_t max_bytes = persist ? w::kMaxMemOpPersistBytes : w::kMaxMemOpBytes;
  if (atomic ? op.bytes != 8 : (op.bytes == 0 || op.bytes > max_bytes)) {
    return InvalidArgument(fmt::format("memop of {} bytes", op.bytes));
  }
  if (op.offset > region_bytes || op.bytes > region_bytes - op.offset) {
    return OutOfRange(fmt::format("{} bytes at offset {} exceed the node's {}-byte region",
                                  op.bytes, op.offset, region_bytes));
  }
  if (kind != w::MemOpKind::kRead && op.offset < w::kRegionHeaderBytes) {
    return OutOfRange(fmt::format("offset {} lies in the node's reserved {}-byte header", op.offset,
                                  w::kRegionHeaderBytes));
  }
  if (atomic && op.offset % 8 != 0) {
    return InvalidArgument(fmt::format("atomic operation at unaligned offset {}", op.offset));
  }
  if (!atomic && op.operand0 | op.operand1) {
    return ProtocolError("read/write/persist memop carries operands");
  }
  if (kind == w::MemOpKind::kFaa && op.operand1 != 0) return ProtocolError("FAA carries operand1");
  return OkStatus();
}

struct Parsed {
  w::MemOp op;
  size_t data_at;  // writes: where the data starts in the request
};

}  // namespace

Status execute_memops(uint8_t* region, uint64_t region_bytes, const uint8_t* req, size_t n,
                      std::string* reply, std::vector<PersistCopy>* persists) {
  w::MemOpsHeader h;
  if (n < sizeof(h)) return InvalidArgument(fmt::format("memops request of {} bytes", n));
  std::memcpy(&h, req, sizeof(h));
  if (h.reserved != 0) return ProtocolError("reserved memops header field not 0");
  if (h.count == 0 || h.count > w::kMaxMemOpsPerMessage) {
    return InvalidArgument(
        fmt::format("memops request with {} operations (1..{})", h.count, w::kMaxMemOpsPerMessage));
  }
  std::vector<Parsed> ops;
  ops.reserve(h.count);
  size_t at = sizeof(h);
  uint64_t reply_bytes = 0, persist_bytes = 0;
  for (uint32_t i = 0; i < h.count; ++i) {
    if (n - at < sizeof(w::MemOp)) return ProtocolError("memops request is truncated");
    Parsed p;
    std::memcpy(&p.op, req + at, sizeof(p.op));
    at += sizeof(p.op);
    FARMEM_TRY(check_op(p.op, region_bytes));
    p.data_at = at;
    const auto kind = static_cast<w::MemOpKind>(p.op.kind);
    if (kind == w::MemOpKind::kWrite) {
      const size_t padded = w::pad8(p.op.bytes);
      if (n - at < padded) return ProtocolError("memops write data is truncated");
      at += padded;
    } else if (kind == w::MemOpKind::kPersist) {
      persist_bytes += p.op.bytes;
    } else {
      reply_bytes += kind == w::MemOpKind::kRead ? w::pad8(p.op.bytes) : 8;
    }
    ops.push_back(p);
  }
  if (at != n) return ProtocolError("memops request has trailing bytes");
  if (reply_bytes > w::kMaxRpcPayloadBytes) {
    return InvalidArgument(
        fmt::format("memops reply of {} bytes exceeds {}", reply_bytes, w::kMaxRpcPayloadBytes));
  }
  if (persist_bytes > w::kMaxMemOpsPersistBytes) {
    return InvalidArgument(fmt::format("memops persists of {} bytes exceed {}", persist_bytes,
                                       w::kMaxMemOpsPersistBytes));
  }
  reply->assign(reply_bytes, '\0');
  char* out = reply->data();
  for (const Parsed& p : ops) {
    uint8_t* target = region + p.op.offset;
    switch (static_cast<w::MemOpKind>(p.op.kind)) {
      case w::MemOpKind::kRead:
        std::memcpy(out, target, p.op.bytes);
        out += w::pad8(p.op.bytes);
        break;
      case w::MemOpKind::kWrite:
        std::memcpy(target, req + p.data_at, p.op.bytes);
        break;
      case w::MemOpKind::kCas: {
        uint64_t expected = p.op.operand0;
        __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(target), &expected, p.op.operand1,
                                    false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        std::memcpy(out, &expected, 8);
        out += 8;
        break;
      }
      case w::MemOpKind::kFaa: {
        uint64_t old = __atomic_fetch_add(reinterpret_cast<uint64_t*>(target), p.op.operand0,
                                          __ATOMIC_SEQ_CST);
        std::memcpy(out, &old, 8);
        out += 8;
        break;
      }
      case w::MemOpKind::kPersist:
        if (persists != nullptr) {
          std::atomic_thread_fence(std::memory_order_seq_cst);  // the writes before it
          persists->push_back(
              {p.op.offset, std::string(reinterpret_cast<const char*>(target), p.op.bytes)});
        }
        break;
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return OkStatus();
}

}  // namespace farmem::memnode
