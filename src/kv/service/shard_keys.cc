// Shard (shard.h): the key requests: coalesced get / put / erase (kOps), locate and release
// (direct transfers, ranges, locks), find and attributes.
#include <fmt/format.h>
#include <zlib.h>

#include "farmem/common/check.h"
#include "shard.h"

namespace farmem::kv::service {

namespace w = farmem::kv::wire;
using memnode::Request;

// ---------------------------------------------------------------------------------------------
// Key operations

namespace {

using farmem::wire::kMaxRpcPayloadBytes;
static_assert(sizeof(w::KvOpsReplyHeader) + w::kMaxOpsPerMessage * sizeof(w::KvOpReply) <=
              kMaxRpcPayloadBytes);

// One kOps message being served: its pool, its session's rights, and where it reports.
struct OpsRun {
  ServerPool& pool;
  uint64_t session;
  bool writable;
  uint64_t now_ns;
  RegionView region;
  ShardCounters& counters;
  PoolHooks* hooks;  // null: no ADO support
};

// What one operation gives its reply (the locals of the message's loop).
struct OpResult {
  Status status;
  w::KvOpReply reply{};
  KeyInfo info;                 // the key's record (get, put)
  const void* value = nullptr;  // a get's value, carried in the reply
};

// room: the reply bytes the get's value may take.
void op_get(const OpsRun& run, const OpView& op, size_t room, OpResult* res) {
  run.counters.gets.fetch_add(1, std::memory_order_relaxed);
  res->status = run.pool.check_readable(op.key, run.session);
  if (!res->status.ok()) return;
  auto k = run.pool.lookup(op.key);
  if (!k.ok()) {
    res->status = k.status();
    return;
  }
  res->info = *k;
  res->reply.value_bytes = res->info.value_bytes;
  if (pad8(res->info.value_bytes) > room) {
    res->reply.flags |= w::kReplyNeedsLocate;
  } else {
    res->value = run.region.at(res->info.value);
  }
  if (run.hooks != nullptr && run.pool.ado().post_get) {
    run.hooks->on_key_signal(run.pool, KeySignal::kPostGet, op.key);
  }
}

// Counts a put or erase in `counter`; false (res failed) on a read-only handle.
bool start_write(const OpsRun& run, std::atomic<uint64_t>& counter, OpResult* res) {
  counter.fetch_add(1, std::memory_order_relaxed);
  if (run.writable) return true;
  res->status = PermissionDenied("pool is open read-only");
  return false;
}

void op_put(const OpsRun& run, const OpView& op, OpResult* res) {
  if (!start_write(run, run.counters.puts, res)) return;
  bool existed = false;
  res->status = run.pool.put(op.key, op.value.data(), static_cast<uint32_t>(op.value.size()),
                             op.op.flags, run.now_ns, &res->info, &existed);
  if (!res->status.ok()) return;
  res->reply.value_bytes = res->info.value_bytes;
  if (existed) res->reply.flags |= w::kReplyExisted;
  if (!existed && run.hooks != nullptr && run.pool.ado().post_put) {
    run.hooks->on_key_signal(run.pool, KeySignal::kPostPut, op.key);
  }
}

void op_erase(const OpsRun& run, const OpView& op, OpResult* res) {
  if (!start_write(run, run.counters.erases, res)) return;
  res->status = run.pool.erase(op.key, run.now_ns);
  if (res->status.ok() && run.hooks != nullptr && run.pool.ado().post_erase) {
    run.hooks->on_key_signal(run.pool, KeySignal::kPostErase, op.key);
  }
}

// The reply's status, and where the key's record is now (get, put); failures are counted,
// but for the answers that are not failures (absent, exists).
void finish_op_reply(const OpsRun& run, w::KvOp kind, OpResult* res) {
  const Status& s = res->status;
  res->reply.status = static_cast<int32_t>(s.code());
  if (s.ok() && kind != w::KvOp::kErase) {
    res->reply.record = res->info.record;
    res->reply.version = res->info.version;
    res->reply.record_bytes = static_cast<uint32_t>(res->info.record_bytes());
  } else if (!s.ok() && s.code() != StatusCode::kNotFound &&
             s.code() != StatusCode::kAlreadyExists) {
    run.counters.failures.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

Status Shard::ops(const Request& r, Out* out) {
  w::KvOpsHeader h;
  std::vector<OpView> list;
  FARMEM_TRY(parse_ops(r.payload, &h, &list));
  auto p = open_pool(h.pool, r.session);
  FARMEM_TRY(p);
  const OpsRun run{**p,       r.session,   (*p)->writable(r.session), context_.now_ns(), region_,
                   counters_, hooks_.get()};
  counters_.ops_messages.fetch_add(1, std::memory_order_relaxed);
  counters_.coalesced_ops.fetch_add(list.size(), std::memory_order_relaxed);
  out->reserve(sizeof(w::KvOpsReplyHeader) + list.size() * sizeof(w::KvOpReply));
  append(out, w::KvOpsReplyHeader{static_cast<uint32_t>(list.size()), 0});
  for (size_t i = 0; i < list.size(); ++i) {
    const OpView& op = list[i];
    const auto kind = static_cast<w::KvOp>(op.op.op);
    OpResult res;
    switch (kind) {
      case w::KvOp::kGet: {
        // What the ops after this one need, at the least, must stay free (the fixed parts of
        // a reply of kMaxOpsPerMessage operations fit in one message, values or not).
        const size_t rest = (list.size() - i - 1) * sizeof(w::KvOpReply);
        op_get(run, op, kMaxRpcPayloadBytes - out->size() - sizeof(w::KvOpReply) - rest, &res);
        break;
      }
      case w::KvOp::kPut:
        op_put(run, op, &res);
        break;
      case w::KvOp::kErase:
        op_erase(run, op, &res);
        break;
    }
    end_op();  // this operation's changes are logged as they are now
    finish_op_reply(run, kind, &res);
    append(out, res.reply);
    if (res.value != nullptr) append_padded(out, res.value, res.info.value_bytes);
  }
  FARMEM_ASSERT(out->size() <= kMaxRpcPayloadBytes, "a kOps reply fits in one message");
  return OkStatus();
}

Status Shard::locate(const Request& r, Out* out) {
  auto v = parse_locate(r.payload);
  FARMEM_TRY(v);
  const auto mode = static_cast<w::LocateMode>(v->fixed.mode);
  auto p = mode == w::LocateMode::kRead ? open_pool(v->fixed.pool, r.session)
                                        : writable_pool(v->fixed.pool, r.session);
  FARMEM_TRY(p);
  counters_.locates.fetch_add(1, std::memory_order_relaxed);
  auto g = (*p)->lock(r.session, v->key, mode, v->fixed.offset, v->fixed.length, v->fixed.flags,
                      context_.now_ns());
  FARMEM_TRY(g);
  append(out, w::KvLocateReply{g->token, g->address, g->length, g->value_bytes});
  return OkStatus();
}

Status Shard::release(const Request& r) {
  auto v = parse_release(r.payload);
  FARMEM_TRY(v);
  auto p = open_pool(v->pool, r.session);
  FARMEM_TRY(p);
  return (*p)->release(r.session, v->token, v->flags, context_.now_ns());
}

Status Shard::find(const Request& r, Out* out) {
  auto v = parse_find(r.payload);
  FARMEM_TRY(v);
  auto p = open_pool(v->fixed.pool, r.session);
  FARMEM_TRY(p);
  const SecondaryIndex* index = (*p)->secondary();
  if (index == nullptr) return InvalidArgument("pool has no secondary index");
  auto f = index->find(v->expression, v->fixed.start);
  FARMEM_TRY(f);
  append(out, w::KvFindReply{f->position, static_cast<uint32_t>(f->key.size()),
                             f->more ? w::kFindMore : 0u});
  out->append(f->key);
  return OkStatus();
}

Status Shard::attribute(const Request& r, Out* out) {
  auto v = parse_attribute(r.payload);
  FARMEM_TRY(v);
  auto p = open_pool(v->fixed.pool, r.session);
  FARMEM_TRY(p);
  ServerPool& pool = **p;
  uint64_t value = 0;
  if (v->per_key) {
    FARMEM_TRY(pool.check_readable(v->key, r.session));
    auto k = pool.lookup(v->key);
    FARMEM_TRY(k);
    switch (static_cast<w::Attribute>(v->fixed.attribute)) {
      case w::Attribute::kValueLength:
        value = k->value_bytes;
        break;
      case w::Attribute::kCrc32:
        value = crc32_z(0, region_.at(k->value), k->value_bytes);
        break;
      default:
        value = k->write_epoch_ns;
        break;
    }
  } else {
    switch (static_cast<w::Attribute>(v->fixed.attribute)) {
      case w::Attribute::kCount:
        value = pool.count();
        break;
      case w::Attribute::kUsedBytes:
        value = pool.used_bytes();
        break;
      default:
        value = pool.capacity_bytes();
        break;
    }
  }
  append(out, w::KvAttributeReply{value});
  return OkStatus();
}

}  // namespace farmem::kv::service
