#include "farmem/kv/pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "farmem/common/clock.h"
#include "farmem/kv/codec.h"
#include "farmem/kv/record.h"
#include "pool_context.h"

namespace farmem::kv {

namespace w = wire;
using runtime::Task;

namespace {
constexpr uint8_t kPutFlags = w::kPutCreateOnly | w::kPutDontOverwrite;
}

Pool::Pool(PoolContext* context, std::string name, uint16_t node, const w::KvPoolReply& reply,
           uint32_t id)
    : context_(context),
      name_(std::move(name)),
      handle_(reply.pool),
      node_(node),
      id_(id),
      capacity_bytes_(reply.capacity_bytes),
      created_((reply.flags & w::kPoolReplyCreated) != 0),
      one_sided_(context->one_sided(node)),
      lane_(&context->coalescer, reply.pool, node, context->client->endpoint(node)) {}

Pool::~Pool() = default;

Status Pool::check_key(std::string_view key) const {
  if (!open_) return InvalidArgument(fmt::format("pool '{}' is closed", name_));
  if (key.empty() || key.size() > w::kMaxKeyBytes) {
    return InvalidArgument(
        fmt::format("keys are 1..{} bytes (a request with its headers fits in 64 KiB), not {}",
                    w::kMaxKeyBytes, key.size()));
  }
  return OkStatus();
}

Status Pool::check_open() const {
  if (!open_) return InvalidArgument(fmt::format("pool '{}' is closed", name_));
  return OkStatus();
}

void Pool::remember(uint64_t hash, const w::KvOpReply& reply) {
  context_->cache.store(id_, hash, RecordLocation{reply.record, reply.version, reply.record_bytes});
}

Task<Status> Pool::close() {
  if (!open_) co_return InvalidArgument(fmt::format("pool '{}' is not open", name_));
  std::vector<uint8_t> reply;
  Status s = co_await call(w::KvOpcode::kPoolClose, encode_pool_ref(handle_), &reply, 0);
  // Whatever the node answered, this handle is done (a session's handles close with it).
  open_ = false;
  co_return s;
}

Task<Status> Pool::call(w::KvOpcode opcode, std::string request, std::vector<uint8_t>* reply,
                        uint32_t reply_capacity) {
  Status s = co_await context_->call(node_, opcode, std::move(request), reply, reply_capacity);
  co_return s;
}

// ---- get / put / erase ----------------------------------------------------------------------

namespace {

// Records up to this size are read into the get's frame, then only the value is copied out.
constexpr uint32_t kFrameRecordBytes = 256;

// *value holds a copy of the record at `loc`: true (and *value is the record's value) if the
// copy is that incarnation of `key` (kv/record.h).
bool accept_copy(const RecordLocation& loc, std::string_view key, std::string* value) {
  uint64_t value_bytes = 0;
  const size_t at = check_record_copy(reinterpret_cast<uint8_t*>(value->data()), loc.record_bytes,
                                      key, loc.version, &value_bytes);
  if (at == 0) return false;
  std::memmove(value->data(), value->data() + at, value_bytes);
  value->resize(value_bytes);
  return true;
}

// The same for a copy in the get's frame: the value is copied out into *value.
bool accept_frame_copy(uint8_t* copy, const RecordLocation& loc, std::string_view key,
                       std::string* value) {
  uint64_t value_bytes = 0;
  const size_t at = check_record_copy(copy, loc.record_bytes, key, loc.version, &value_bytes);
  if (at == 0) return false;
  value->assign(reinterpret_cast<const char*>(copy + at), value_bytes);
  return true;
}

// The value size a cached record of `key` suggests (the get's reply budget): its record's
// bytes after the header and key.
size_t value_bytes_hint(const RecordLocation& loc, std::string_view key) {
  return loc.record_bytes - std::min<size_t>(loc.record_bytes, record_bytes(key.size(), 0));
}

}  // namespace

Task<bool> Pool::read_record(const RecordLocation& loc, std::string_view key, std::string* value) {
  value->resize(loc.record_bytes);
  Status s = co_await context_->client->read(GlobalAddress(node_, loc.record), value->data(),
                                             loc.record_bytes);
  co_return s.ok() && accept_copy(loc, key, value);
}

Task<Result<bool>> Pool::get(std::string_view key, std::string* value) {
  FARMEM_CO_TRY(check_key(key));
  StoreStats& st = context_->stats;
  ++st.gets;
  uint64_t hash = 0;
  size_t hint = 0;
  if (one_sided_) {
    hash = LocationCache::key_hash(id_, key);
    // The cache entry is likely a cache miss: start loading it and let the thread's other
    // coroutines run meanwhile, when there are any (as the hash table's speculative get does).
    context_->cache.prefetch(hash);
    runtime::Scheduler& sched = context_->client->scheduler();
    if (sched.others_ready()) co_await sched.yield();
    RecordLocation loc;
    if (context_->cache.lookup(id_, hash, &loc)) {
      ++st.get_round_trips;
      // Inline rather than read_record(): the hit path is the one that counts.
      bool hit = false;
      if (loc.record_bytes <= kFrameRecordBytes) {
        alignas(8) uint8_t copy[kFrameRecordBytes];  // frames are not over-aligned
        Status s = co_await context_->client->read(GlobalAddress(node_, loc.record), copy,
                                                   loc.record_bytes);
        hit = s.ok() && accept_frame_copy(copy, loc, key, value);
      } else {
        hit = co_await read_record(loc, key, value);
      }
      if (hit) {
        ++st.one_sided_hits;
        co_return true;
      }
      hint = value_bytes_hint(loc, key);
    }
    ++st.one_sided_misses;
  }
  for (int attempt = 0;; ++attempt) {
    OpSlot slot;
    slot.op = w::KvOp::kGet;
    slot.value = value;
    ++st.get_round_trips;
    co_await context_->coalescer.submit(&lane_, &slot, 0, key, {}, hint);
    FARMEM_CO_TRY(slot.status);
    const w::KvOpReply& r = slot.reply;
    if (r.status == static_cast<int32_t>(StatusCode::kNotFound)) {
      if (one_sided_) context_->cache.forget(id_, hash);
      co_return false;
    }
    FARMEM_CO_TRY(op_status(r.status, w::KvOp::kGet, name_, key.size()));
    if ((r.flags & w::kReplyNeedsLocate) == 0) {
      if (one_sided_) remember(hash, r);
      co_return true;
    }
    // The value did not fit in the reply: read the record it names one-sidedly, ask again alone
    // (once, if a reply can carry it), or locate / read / release.
    if (one_sided_ && r.record != 0 && r.record_bytes != 0) {
      const RecordLocation loc{r.record, r.version, r.record_bytes};
      ++st.get_round_trips;
      const bool hit = co_await read_record(loc, key, value);
      if (hit) {
        remember(hash, r);
        co_return true;
      }
    }
    if (attempt == 0 && r.value_bytes <= kMaxReplyValueBytes) {
      hint = r.value_bytes;
      ++st.refetches;
      continue;
    }
    st.get_round_trips += 3;  // locate, read, release
    auto located = co_await get_located(key, value);
    co_return located;
  }
}

Task<Result<bool>> Pool::get_located(std::string_view key, std::string* value) {
  auto loc = co_await locate(key, w::LocateMode::kRead, 0, 0, 0);
  if (!loc.ok()) {
    if (loc.status().code() == StatusCode::kNotFound) co_return false;
    co_return loc.status();
  }
  const uint64_t bytes = std::min(loc->length, loc->value_bytes);
  value->resize(bytes);
  Status s;
  if (bytes > 0) {
    s = co_await context_->client->read(GlobalAddress(node_, loc->address), value->data(), bytes);
  }
  Status r = co_await release(loc->token, 0);
  FARMEM_CO_TRY(s);
  FARMEM_CO_TRY(r);
  co_return true;
}

Task<Status> Pool::put(std::string_view key, std::string_view value, uint8_t flags, bool* existed) {
  FARMEM_CO_TRY(check_key(key));
  if ((flags & ~kPutFlags) != 0)
    co_return InvalidArgument(fmt::format("unknown put flags {:#x}", flags));
  if (value.size() > w::kMaxValueBytes) {
    co_return InvalidArgument(
        fmt::format("values are at most {} bytes, not {}", w::kMaxValueBytes, value.size()));
  }
  if (existed != nullptr) *existed = false;
  ++context_->stats.puts;
  if (!put_fits_message(key.size(), value.size())) {
    Status s = co_await put_direct(key, value.data(), value.size(), flags, existed);
    co_return s;
  }
  OpSlot slot;
  slot.op = w::KvOp::kPut;
  co_await context_->coalescer.submit(&lane_, &slot, flags, key, value);
  FARMEM_CO_TRY(slot.status);
  const uint64_t hash = one_sided_ ? LocationCache::key_hash(id_, key) : 0;
  if (slot.reply.status != 0) {
    if (one_sided_) context_->cache.forget(id_, hash);
    co_return op_status(slot.reply.status, w::KvOp::kPut, name_, key.size());
  }
  if (existed != nullptr) *existed = (slot.reply.flags & w::kReplyExisted) != 0;
  if (one_sided_) remember(hash, slot.reply);
  co_return OkStatus();
}

Task<Status> Pool::erase(std::string_view key) {
  FARMEM_CO_TRY(check_key(key));
  ++context_->stats.erases;
  OpSlot slot;
  slot.op = w::KvOp::kErase;
  co_await context_->coalescer.submit(&lane_, &slot, 0, key, {});
  FARMEM_CO_TRY(slot.status);
  if (one_sided_) context_->cache.forget(id_, LocationCache::key_hash(id_, key));
  co_return op_status(slot.reply.status, w::KvOp::kErase, name_, key.size());
}

// ---- locate / release: direct transfers, ranges, locks ---------------------------------------

Task<Result<w::KvLocateReply>> Pool::locate(std::string_view key, w::LocateMode mode, uint8_t flags,
                                            uint64_t offset, uint64_t length) {
  std::vector<uint8_t> reply;
  Status s =
      co_await call(w::KvOpcode::kLocate, encode_locate(handle_, mode, flags, offset, length, key),
                    &reply, sizeof(w::KvLocateReply));
  FARMEM_CO_TRY(s);
  w::KvLocateReply r;
  FARMEM_CO_TRY(decode_fixed(reply.data(), reply.size(), &r));
  ++context_->stats.locates;
  if (one_sided_ && mode != w::LocateMode::kRead) {
    context_->cache.forget(id_, LocationCache::key_hash(id_, key));
  }
  co_return r;
}

Task<Status> Pool::release(uint64_t token, uint32_t flags) {
  std::vector<uint8_t> reply;
  Status s = co_await call(w::KvOpcode::kRelease, encode_release(handle_, token, flags), &reply, 0);
  co_return s;
}

Task<Result<uint64_t>> Pool::get_direct(std::string_view key, void* buffer, uint64_t capacity) {
  FARMEM_CO_TRY(check_key(key));
  auto loc = co_await locate(key, w::LocateMode::kRead, 0, 0, 0);
  FARMEM_CO_TRY(loc);
  const uint64_t bytes = std::min(loc->length, loc->value_bytes);
  Status s;
  if (bytes > capacity) {
    s = OutOfRange(
        fmt::format("the value of {} bytes does not fit in a {}-byte buffer", bytes, capacity));
  } else if (bytes > 0) {
    s = co_await context_->client->read(GlobalAddress(node_, loc->address), buffer, bytes);
  }
  Status r = co_await release(loc->token, 0);
  FARMEM_CO_TRY(s);
  FARMEM_CO_TRY(r);
  co_return bytes;
}

Task<Status> Pool::put_direct(std::string_view key, const void* value, uint64_t bytes,
                              uint8_t flags, bool* existed) {
  FARMEM_CO_TRY(check_key(key));
  if ((flags & ~kPutFlags) != 0)
    co_return InvalidArgument(fmt::format("unknown put flags {:#x}", flags));
  if (bytes > w::kMaxValueBytes) {
    co_return InvalidArgument(
        fmt::format("values are at most {} bytes, not {}", w::kMaxValueBytes, bytes));
  }
  if (existed != nullptr) *existed = false;
  const uint8_t lflags = (flags & kPutFlags) != 0 ? w::kLocateCreateOnly : 0;
  auto loc = co_await locate(key, w::LocateMode::kPutNew, lflags, 0, bytes);
  if (!loc.ok()) {
    if (loc.status().code() == StatusCode::kAlreadyExists && (flags & w::kPutDontOverwrite)) {
      if (existed != nullptr) *existed = true;
      co_return OkStatus();
    }
    co_return loc.status();
  }
  Status s;
  if (loc->length < bytes) {
    s = ProtocolError(fmt::format("locate gave {} bytes for a {}-byte value", loc->length, bytes));
  } else if (bytes > 0) {
    s = co_await context_->client->write(GlobalAddress(node_, loc->address), value, bytes);
  }
  Status r = co_await release(loc->token, s.ok() ? 0 : w::kReleaseAbort);
  FARMEM_CO_TRY(s);
  co_return r;
}

Task<Result<uint64_t>> Pool::read_range(std::string_view key, uint64_t offset, void* buffer,
                                        uint64_t length) {
  FARMEM_CO_TRY(check_key(key));
  if (length == 0) co_return uint64_t{0};
  // [offset, end of value): a range that runs past the end reads what there is.
  auto loc = co_await locate(key, w::LocateMode::kRead, 0, offset, 0);
  FARMEM_CO_TRY(loc);
  const uint64_t bytes = std::min(loc->length, length);
  Status s;
  if (bytes > 0) {
    s = co_await context_->client->read(GlobalAddress(node_, loc->address), buffer, bytes);
  }
  Status r = co_await release(loc->token, 0);
  FARMEM_CO_TRY(s);
  FARMEM_CO_TRY(r);
  co_return bytes;
}

Task<Status> Pool::write_range(std::string_view key, uint64_t offset, const void* data,
                               uint64_t length) {
  FARMEM_CO_TRY(check_key(key));
  if (length == 0) co_return OkStatus();
  auto loc = co_await locate(key, w::LocateMode::kWrite, 0, offset, length);
  FARMEM_CO_TRY(loc);
  Status s;
  if (loc->length < length) {
    s = OutOfRange(fmt::format("bytes [{}, {}) pass the end of the {}-byte value", offset,
                               offset + length, loc->value_bytes));
  } else {
    s = co_await context_->client->write(GlobalAddress(node_, loc->address), data, length);
  }
  Status r = co_await release(loc->token, 0);
  FARMEM_CO_TRY(s);
  co_return r;
}

Task<Result<KeyLock>> Pool::lock(std::string_view key, LockMode mode) {
  FARMEM_CO_TRY(check_key(key));
  const auto m = mode == LockMode::kWrite ? w::LocateMode::kWrite : w::LocateMode::kRead;
  auto loc = co_await locate(key, m, 0, 0, 0);
  FARMEM_CO_TRY(loc);
  co_return KeyLock{loc->token, GlobalAddress(node_, loc->address), loc->length, loc->value_bytes};
}

Task<Status> Pool::unlock(const KeyLock& lock) {
  FARMEM_CO_TRY(check_open());
  Status s = co_await release(lock.token, 0);
  co_return s;
}

// ---- index, attributes, configuration, ADO -----------------------------------------------

Task<Result<FindMatch>> Pool::find(std::string_view expression, uint64_t start) {
  FARMEM_CO_TRY(check_open());
  if (expression.empty() || expression.size() > w::kMaxFindExpressionBytes) {
    co_return InvalidArgument(
        fmt::format("find expressions are 1..{} bytes", w::kMaxFindExpressionBytes));
  }
  // Each request examines a bounded number of keys; the loop is bounded by one op timeout.
  const uint64_t deadline = now_ns() + context_->op_timeout_ns();
  for (;;) {
    std::vector<uint8_t> reply;
    Status s = co_await call(w::KvOpcode::kFind, encode_find(handle_, start, expression), &reply,
                             w::kMaxRpcPayloadBytes);
    FARMEM_CO_TRY(s);
    w::KvFindReply r;
    FindMatch m;
    FARMEM_CO_TRY(decode_find(reply.data(), reply.size(), &r, &m.key));
    if ((r.flags & w::kFindMore) == 0) {
      m.position = r.position;
      co_return m;
    }
    if (r.position <= start && start != 0) {
      co_return ProtocolError("find did not advance (kFindMore at the same position)");
    }
    start = r.position;
    if (now_ns() > deadline) {
      co_return TimedOut(fmt::format("find '{}' in pool '{}' still searching at position {}",
                                     expression, name_, start));
    }
  }
}

Task<Result<uint64_t>> Pool::attribute(w::Attribute attribute, std::string_view key) {
  FARMEM_CO_TRY(check_open());
  if (key.size() > w::kMaxKeyBytes) co_return InvalidArgument("key too long");
  std::vector<uint8_t> reply;
  Status s = co_await call(w::KvOpcode::kAttribute, encode_attribute(handle_, attribute, key),
                           &reply, sizeof(w::KvAttributeReply));
  FARMEM_CO_TRY(s);
  w::KvAttributeReply r;
  FARMEM_CO_TRY(decode_fixed(reply.data(), reply.size(), &r));
  co_return r.value;
}

Task<Result<w::KvPoolInfo>> Pool::info() {
  FARMEM_CO_TRY(check_open());
  std::vector<uint8_t> reply;
  Status s = co_await call(w::KvOpcode::kPoolInfo, encode_pool_ref(handle_), &reply,
                           sizeof(w::KvPoolInfo));
  FARMEM_CO_TRY(s);
  w::KvPoolInfo r;
  FARMEM_CO_TRY(decode_fixed(reply.data(), reply.size(), &r));
  co_return r;
}

Task<Result<uint64_t>> Pool::count() {
  auto r = co_await attribute(w::Attribute::kCount);
  co_return r;
}

Task<Status> Pool::configure(std::string_view command) {
  FARMEM_CO_TRY(check_open());
  if (command.empty() || command.size() > w::kMaxConfigureBytes) {
    co_return InvalidArgument(
        fmt::format("configure commands are 1..{} bytes", w::kMaxConfigureBytes));
  }
  std::vector<uint8_t> reply;
  Status s =
      co_await call(w::KvOpcode::kPoolConfigure, encode_configure(handle_, command), &reply, 0);
  co_return s;
}

Task<Result<AdoResult>> Pool::invoke(w::KvOpcode opcode, std::string_view key,
                                     std::string_view value, std::string_view request,
                                     uint32_t flags, uint64_t value_size) {
  FARMEM_CO_TRY(check_open());
  if (key.size() > w::kMaxKeyBytes || request.size() > w::kMaxAdoRequestBytes ||
      sizeof(w::KvAdoRequest) + key.size() + value.size() + request.size() >
          w::kMaxRpcPayloadBytes) {
    co_return InvalidArgument(fmt::format(
        "ADO invocation too large: {}-byte key, {}-byte value, {}-byte request (the request is "
        "at most {} bytes, all of it at most {})",
        key.size(), value.size(), request.size(), w::kMaxAdoRequestBytes,
        w::kMaxRpcPayloadBytes - sizeof(w::KvAdoRequest)));
  }
  if ((flags & ~w::kAdoKnownFlags) != 0) {
    co_return InvalidArgument(fmt::format("unknown ADO flags {:#x}", flags));
  }
  std::vector<uint8_t> reply;
  Status s = co_await call(opcode, encode_ado(handle_, flags, value_size, key, value, request),
                           &reply, w::kMaxRpcPayloadBytes);
  FARMEM_CO_TRY(s);
  AdoResult r;
  FARMEM_CO_TRY(decode_ado(reply.data(), reply.size(), &r));
  if (one_sided_ && !key.empty()) context_->cache.forget(id_, LocationCache::key_hash(id_, key));
  co_return r;
}

Task<Result<AdoResult>> Pool::invoke_ado(std::string_view key, std::string_view request,
                                         uint32_t flags, uint64_t value_size) {
  auto r = co_await invoke(w::KvOpcode::kInvokeAdo, key, {}, request, flags, value_size);
  co_return r;
}

Task<Result<AdoResult>> Pool::invoke_put_ado(std::string_view key, std::string_view value,
                                             std::string_view request, uint32_t flags) {
  auto r = co_await invoke(w::KvOpcode::kInvokePutAdo, key, value, request, flags, 0);
  co_return r;
}

}  // namespace farmem::kv
