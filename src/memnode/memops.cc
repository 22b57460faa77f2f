#include "farmem/memnode/memops.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "farmem/fabric/wire.h"

namespace farmem::memnode {

namespace w = farmem::wire;

namespace {

// (An unknown procedure is the call's own result, not a malformed message.)
Status check_call(const w::MemOp& op) {
  if (op.offset != 0) return ProtocolError("call memop carries an offset");
  if (op.bytes == 0 || op.bytes > w::kMaxMemOpBytes) {
    return InvalidArgument(fmt::format("call with {} argument bytes", op.bytes));
  }
  if (op.operand1 < w::kMinCallReplyBytes || op.operand1 > w::kMaxCallReplyBytes ||
      op.operand1 % 8 != 0) {
    return InvalidArgument(fmt::format("call reply slot of {} bytes", op.operand1));
  }
  if (op.operand0 == 0 || op.operand0 > w::kMaxProcedureId) {
    return InvalidArgument(fmt::format("call of procedure id {}", op.operand0));
  }
  return OkStatus();
}

Status check_op(const w::MemOp& op, uint64_t region_bytes) {
  if (op.reserved0 != 0 || op.reserved1 != 0) return ProtocolError("reserved memop fields not 0");
  const auto kind = static_cast<w::MemOpKind>(op.kind);
  if (kind == w::MemOpKind::kCall) return check_call(op);
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
  size_t data_at;  // writes and calls: where the data starts in the request
};

// Parses and checks the whole request into *ops (nothing is performed).
Status parse_memops(const uint8_t* req, size_t n, uint64_t region_bytes, std::vector<Parsed>* ops) {
  w::MemOpsHeader h;
  if (n < sizeof(h)) return InvalidArgument(fmt::format("memops request of {} bytes", n));
  std::memcpy(&h, req, sizeof(h));
  if (h.reserved != 0) return ProtocolError("reserved memops header field not 0");
  if (h.count == 0 || h.count > w::kMaxMemOpsPerMessage) {
    return InvalidArgument(
        fmt::format("memops request with {} operations (1..{})", h.count, w::kMaxMemOpsPerMessage));
  }
  ops->reserve(h.count);
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
    if (kind == w::MemOpKind::kWrite || kind == w::MemOpKind::kCall) {
      const size_t padded = w::pad8(p.op.bytes);
      if (n - at < padded) return ProtocolError("memops write data is truncated");
      at += padded;
    } else if (kind == w::MemOpKind::kPersist) {
      persist_bytes += p.op.bytes;
    }
    reply_bytes += w::memop_reply_bytes(p.op);
    ops->push_back(p);
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
  return OkStatus();
}

// Runs one call into its reply slot `out` (op.operand1 bytes, zeroed).
void run_call(const MemopsTarget& t, bool durable, const w::MemOp& op, const uint8_t* args,
              char* out) {
  w::CallReplyHeader h{};
  const size_t capacity = op.operand1 - sizeof(h);
  char* result = out + sizeof(h);
  const Procedure* p = t.procedures != nullptr ? t.procedures->find(op.operand0) : nullptr;
  Status error;
  if (p == nullptr) {
    error = NotFound(fmt::format("no procedure {} on this node", op.operand0));
  } else {
    ProcedureCall call{t.region, t.region_bytes, durable,
                       args,     op.bytes,       reinterpret_cast<uint8_t*>(result),
                       capacity};
    Result<size_t> r = p->fn(call);
    if (r.ok() && *r <= capacity) {
      h.bytes = static_cast<uint32_t>(*r);
    } else {
      error =
          r.ok() ? Internal(fmt::format("procedure {} overran its reply", p->name)) : r.status();
      std::memset(result, 0, capacity);
    }
  }
  if (!error.ok()) {
    const std::string_view m = error.message();
    h.code = static_cast<uint16_t>(error.code());
    h.bytes = static_cast<uint32_t>(std::min(m.size(), capacity));
    std::memcpy(result, m.data(), h.bytes);
  }
  std::memcpy(out, &h, sizeof(h));
}

// Performs one checked operation; `out` is where its reply goes (advanced past it).
void perform(const MemopsTarget& t, const Parsed& p, const uint8_t* req, char** out,
             std::vector<PersistCopy>* persists) {
  uint8_t* target = t.region + p.op.offset;
  switch (static_cast<w::MemOpKind>(p.op.kind)) {
    case w::MemOpKind::kRead:
      std::memcpy(*out, target, p.op.bytes);
      break;
    case w::MemOpKind::kWrite:
      std::memcpy(target, req + p.data_at, p.op.bytes);
      break;
    case w::MemOpKind::kCas: {
      uint64_t expected = p.op.operand0;
      __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(target), &expected, p.op.operand1,
                                  false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      std::memcpy(*out, &expected, 8);
      break;
    }
    case w::MemOpKind::kFaa: {
      uint64_t old =
          __atomic_fetch_add(reinterpret_cast<uint64_t*>(target), p.op.operand0, __ATOMIC_SEQ_CST);
      std::memcpy(*out, &old, 8);
      break;
    }
    case w::MemOpKind::kPersist:
      if (persists != nullptr) {
        std::atomic_thread_fence(std::memory_order_seq_cst);  // the writes before it
        persists->push_back(
            {p.op.offset, std::string(reinterpret_cast<const char*>(target), p.op.bytes)});
      }
      break;
    case w::MemOpKind::kCall:
      std::atomic_thread_fence(std::memory_order_seq_cst);
      run_call(t, persists != nullptr, p.op, req + p.data_at, *out);
      break;
  }
  *out += w::memop_reply_bytes(p.op);
}

}  // namespace

Status execute_memops(const MemopsTarget& target, const uint8_t* req, size_t n, std::string* reply,
                      std::vector<PersistCopy>* persists) {
  std::vector<Parsed> ops;
  FARMEM_TRY(parse_memops(req, n, target.region_bytes, &ops));
  uint64_t reply_bytes = 0;
  for (const Parsed& p : ops) reply_bytes += w::memop_reply_bytes(p.op);
  reply->assign(reply_bytes, '\0');
  char* out = reply->data();
  for (const Parsed& p : ops) perform(target, p, req, &out, persists);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return OkStatus();
}

Status execute_memops(uint8_t* region, uint64_t region_bytes, const uint8_t* req, size_t n,
                      std::string* reply, std::vector<PersistCopy>* persists) {
  return execute_memops(MemopsTarget{region, region_bytes, nullptr}, req, n, reply, persists);
}

}  // namespace farmem::memnode
