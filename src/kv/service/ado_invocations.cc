// AdoManager's queue (ado_manager.h): invocations and signals wait in their pool's FIFO, go to
// its ADO one at a time (prepare: value and target lock; then the work), and are answered when
// the ADO is done (release the locks, erase the target if asked, reply).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ado_callbacks.h"
#include "ado_manager.h"
#include "farmem/common/check.h"
#include "farmem/common/log.h"
#include "shard.h"

namespace farmem::kv::service {

namespace w = farmem::kv::wire;

namespace {

uint32_t signal_code(KeySignal s) {
  switch (s) {
    case KeySignal::kPostPut:
      return FARMEM_ADO_SIGNAL_POST_PUT;
    case KeySignal::kPostGet:
      return FARMEM_ADO_SIGNAL_POST_GET;
    case KeySignal::kPostErase:
      return FARMEM_ADO_SIGNAL_POST_ERASE;
  }
  return FARMEM_ADO_SIGNAL_NONE;
}

// What is wrong with an invocation request of `payload_bytes` bytes in all (empty: nothing).
std::string invocation_problem(const w::KvAdoRequest& req, bool put, size_t payload_bytes) {
  if ((req.flags & ~w::kAdoKnownFlags) != 0) return "unknown flags";
  if (req.key_bytes > w::kMaxKeyBytes) return "key too long";
  if (req.request_bytes > w::kMaxAdoRequestBytes) return "request too long";
  if (!put && (req.value_bytes != 0 || (req.flags & (w::kAdoNoOverwrite | w::kAdoDetached)))) {
    return "a value, kAdoNoOverwrite or kAdoDetached needs invoke_put_ado";
  }
  const uint64_t total =
      sizeof(req) + uint64_t{req.key_bytes} + req.value_bytes + req.request_bytes;
  if (total != payload_bytes) {
    return fmt::format("{} bytes announced, {} sent", total, payload_bytes);
  }
  const bool detached = (req.flags & w::kAdoDetached) != 0;
  const bool creates = (req.flags & (w::kAdoCreateOnDemand | w::kAdoCreateOnly)) != 0;
  if (req.key_bytes == 0 && (creates || (put && !detached))) return "needs a key";
  if (creates && req.value_size > UINT32_MAX) return "value_size above 4 GiB - 1";
  if (detached && req.value_bytes == 0) return "kAdoDetached needs a value";
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Entering the queue

void AdoManager::invoke(ServerPool& pool, memnode::Request& r, memnode::Responder responder) {
  w::KvAdoRequest req{};
  std::memcpy(&req, r.payload.data(), sizeof(req));
  const bool put = r.header.opcode == static_cast<uint16_t>(w::KvOpcode::kInvokePutAdo);
  const std::string problem = invocation_problem(req, put, r.payload.size());
  if (!problem.empty()) {
    shard_.counters().failures.fetch_add(1, std::memory_order_relaxed);
    return responder.fail(
        InvalidArgument(fmt::format("ADO invocation on pool '{}': {}", pool.name(), problem)));
  }
  const bool creates = (req.flags & (w::kAdoCreateOnDemand | w::kAdoCreateOnly)) != 0;
  const bool writes = put || creates || (req.flags & w::kAdoReadOnly) == 0;
  if (writes && !pool.writable(r.session)) {
    shard_.counters().failures.fetch_add(1, std::memory_order_relaxed);
    return responder.fail(PermissionDenied(
        fmt::format("pool '{}' is open read-only (use kAdoReadOnly)", pool.name())));
  }
  PoolAdo& a = ado_of(pool);
  if (a.queue.size() >= kMaxQueued) {
    shard_.counters().failures.fetch_add(1, std::memory_order_relaxed);
    return responder.fail(ResourceExhausted(fmt::format(
        "{} invocations already wait for the ADO of pool '{}'", kMaxQueued, pool.name())));
  }
  AdoJob job;
  job.opcode = r.header.opcode;
  job.flags = req.flags;
  job.value_size = req.value_size;
  // key, value, request follow the fixed part, as announced (checked above).
  const std::string_view rest(reinterpret_cast<const char*>(r.payload.data()) + sizeof(req),
                              r.payload.size() - sizeof(req));
  job.key = rest.substr(0, req.key_bytes);
  job.value = rest.substr(req.key_bytes, req.value_bytes);
  job.request = rest.substr(uint64_t{req.key_bytes} + req.value_bytes, req.request_bytes);
  if (req.flags & w::kAdoAsync) {
    w::KvAdoReply empty{0, 0};
    responder.ok(&empty, sizeof(empty));
  } else {
    job.responder.emplace(std::move(responder));
  }
  enqueue(a, std::move(job));
}

void AdoManager::on_key_signal(ServerPool& pool, KeySignal signal, std::string_view key) {
  if (!pool.ado().configured()) return;
  PoolAdo& a = ado_of(pool);
  if (a.queue.size() >= kMaxQueued) {
    if (dropped_signals_++ == 0) {
      log::warn("kv: ADO signal queue of pool '{}' is full; signals are dropped (counted)",
                pool.name());
    }
    return;
  }
  AdoJob job;
  job.signal = signal_code(signal);
  job.key.assign(key);
  enqueue(a, std::move(job));
}

void AdoManager::enqueue(PoolAdo& a, AdoJob job) {
  FARMEM_ASSERT(a.queue.size() < kMaxQueued, "the ADO queue is bounded by its callers");
  job.work_id = next_work_++;
  job.enqueued_ns = shard_.context().now_ns();
  a.queue.push_back(std::move(job));
  pump(a);
}

// ---------------------------------------------------------------------------------------------
// Dispatch

void AdoManager::pump(PoolAdo& a) {
  while (!a.running && !a.stopping && !a.queue.empty()) {
    ServerPool* pool = shard_.pool(a.handle);
    if (pool == nullptr) {
      fail_all(a, NotFound(fmt::format("pool '{}' was deleted", a.name)));
      return;
    }
    Status s = ensure_process(a, *pool);
    if (!s.ok()) {
      fail_all(a, s);
      return;
    }
    if (!a.proc.process->ready()) return;  // launching: on_launched pumps
    AdoJob job = std::move(a.queue.front());
    a.queue.pop_front();
    if (dispatch(a, *pool, job)) return;
  }
}

bool AdoManager::dispatch(PoolAdo& a, ServerPool& pool, AdoJob& job) {
  ado::Work work;
  Status s = prepare(a, pool, job, &work);
  if (!s.ok()) {
    release(&pool, job, false);
    answer(job, s);
    return false;
  }
  if (job.flags & w::kAdoCreateOnly) {
    release(&pool, job, true);
    w::KvAdoReply empty{0, 0};
    answer(job, OkStatus(), std::string_view(reinterpret_cast<const char*>(&empty), sizeof(empty)));
    return false;
  }
  const uint64_t handle = a.handle;
  a.running.emplace(std::move(job));
  a.proc.process->start_work(work, shard_.context().now_ns(), [this, handle](Result<ado::Done> r) {
    on_done(handle, std::move(r));
  });
  return true;
}

Status AdoManager::prepare(PoolAdo& a, ServerPool& pool, AdoJob& job, ado::Work* work) {
  work->work_id = job.work_id;
  work->key = job.key;
  work->request = job.request;
  if (job.signal != 0) {
    prepare_signal(pool, job, work);
    return OkStatus();
  }
  if (job.flags & w::kAdoReadOnly) work->flags |= FARMEM_ADO_WORK_READ_ONLY;
  if (job.flags & w::kAdoAsync) work->flags |= FARMEM_ADO_WORK_ASYNC;
  FARMEM_TRY(prepare_value(a, pool, job, work));
  if (job.key.empty()) return OkStatus();
  return lock_target(pool, job, work);
}

// A signal gets the key's current value, unlocked (a notification).
void AdoManager::prepare_signal(ServerPool& pool, const AdoJob& job, ado::Work* work) {
  work->flags = FARMEM_ADO_WORK_SIGNAL;
  work->signal = job.signal;
  auto info = pool.lookup(job.key);
  if (info.ok()) {
    work->value_count = 1;
    work->values[0] = {info->value, info->value_bytes};
  }
}

// invoke_put_ado's value: a detached copy in new pool memory (values[1]), or put to the key.
Status AdoManager::prepare_value(PoolAdo& a, ServerPool& pool, const AdoJob& job, ado::Work* work) {
  const uint64_t now = shard_.context().now_ns();
  const bool put = job.opcode == static_cast<uint16_t>(w::KvOpcode::kInvokePutAdo);
  if (job.flags & w::kAdoDetached) {
    auto off = pool.allocate(job.value.size(), now);
    FARMEM_TRY(off);
    FARMEM_ASSERT(shard_.region().ptr(*off, job.value.size()) != nullptr,
                  "pool memory lies inside the region");
    std::memcpy(shard_.region().at(*off), job.value.data(), job.value.size());
    a.allocations[*off] = job.value.size();
    work->flags |= FARMEM_ADO_WORK_DETACHED;
    work->value_count = 2;
    work->values[1] = {*off, job.value.size()};
  } else if (put) {
    KeyInfo info;
    bool existed = false;
    uint8_t put_flags = (job.flags & w::kAdoNoOverwrite) ? w::kPutDontOverwrite : 0;
    FARMEM_TRY(pool.put(job.key, job.value.data(), static_cast<uint32_t>(job.value.size()),
                        put_flags, now, &info, &existed));
  }
  return OkStatus();
}

// The target key, locked for the invocation (created first if the flags say so).
Status AdoManager::lock_target(ServerPool& pool, AdoJob& job, ado::Work* work) {
  const uint64_t now = shard_.context().now_ns();
  const uint64_t owner = ado_owner(job.work_id);
  Result<LockGrant> g = Status(Internal("unset"));
  if (pool.lookup(job.key).ok()) {
    if (job.flags & w::kAdoCreateOnly) {
      return AlreadyExists(fmt::format("key exists in pool '{}' (kAdoCreateOnly)", pool.name()));
    }
    auto mode = (job.flags & w::kAdoReadOnly) ? w::LocateMode::kRead : w::LocateMode::kWrite;
    g = pool.lock(owner, job.key, mode, 0, 0, 0, now);
  } else {
    if ((job.flags & (w::kAdoCreateOnDemand | w::kAdoCreateOnly)) == 0) {
      return NotFound(
          fmt::format("no such key in pool '{}' (kAdoCreateOnDemand creates it)", pool.name()));
    }
    g = pool.lock(owner, job.key, w::LocateMode::kPutNew, 0, job.value_size, w::kLocateCreateOnly,
                  now);
    if (g.ok() && (job.flags & w::kAdoZeroNewValue)) {
      std::memset(shard_.region().at(g->address), 0, g->length);
    }
    work->flags |= FARMEM_ADO_WORK_NEW_VALUE;
  }
  FARMEM_TRY(g);
  job.grants.push_back({g->token, job.key, g->mode, g->address, g->value_bytes});
  if (g->mode == w::LocateMode::kWrite && g->value_bytes <= kMaxAdoUndoBytes) {
    job.undo.assign(reinterpret_cast<const char*>(shard_.region().at(g->address)), g->value_bytes);
    job.has_undo = true;
  }
  work->value_count = std::max<uint32_t>(work->value_count, 1);
  work->values[0] = {g->address, g->value_bytes};
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// The end of a job

void AdoManager::release(ServerPool* pool, AdoJob& job, bool ok) {
  if (pool == nullptr) return;  // deleted: its locks went with it
  const uint64_t now = shard_.context().now_ns();
  if (!ok) {
    // The plugin's undo log first (only into values the job holds for writing), then the
    // target's copy: both give back what was there before the invocation.
    (void)pool->roll_back_undo(job.work_id, [&job](uint64_t offset, uint64_t bytes) {
      return std::any_of(job.grants.begin(), job.grants.end(), [&](const AdoGrant& g) {
        return g.mode != w::LocateMode::kRead && offset >= g.address &&
               offset - g.address <= g.bytes && bytes <= g.bytes - (offset - g.address);
      });
    });
    if (job.has_undo) undo_target(*pool, job);
  }
  for (auto it = job.grants.rbegin(); it != job.grants.rend(); ++it) {
    uint32_t flags = (!ok && it->mode == w::LocateMode::kPutNew) ? w::kReleaseAbort : 0;
    (void)pool->release(ado_owner(job.work_id), it->token, flags, now);
  }
  // After the values it covered are published: a crash before this is logged rolls them back.
  if (ok) pool->end_undo(job.work_id);
  job.grants.clear();
  job.listing.clear();
}

// The target's value as it was before the invocation, if the lock still covers the same bytes
// (a resize moved the value to a new record: then it stays as the plugin left it).
void AdoManager::undo_target(ServerPool& pool, const AdoJob& job) {
  const AdoGrant& t = job.grants.front();
  const LockGrant* g = pool.grant(ado_owner(job.work_id), t.token);
  if (g == nullptr || g->address != t.address || g->value_bytes != job.undo.size()) return;
  std::memcpy(shard_.region().at(g->address), job.undo.data(), job.undo.size());
}

void AdoManager::answer(AdoJob& job, const Status& s, std::string_view reply) {
  if (!job.responder) return;
  if (!s.ok()) shard_.counters().failures.fetch_add(1, std::memory_order_relaxed);
  shard_.answer_when_stable(std::move(*job.responder), s, std::string(reply));
  job.responder.reset();
}

void AdoManager::on_done(uint64_t handle, Result<ado::Done> r) {
  PoolAdo* a = find(handle);
  if (a == nullptr || !a->running) return;
  AdoJob job = std::move(*a->running);
  a->running.reset();
  ServerPool* pool = shard_.pool(handle);
  release(pool, job, r.ok());
  if (r.ok() && (r->flags & ado::kDoneEraseTarget) && pool != nullptr && !job.key.empty()) {
    (void)pool->erase(job.key, shard_.context().now_ns());
  }
  if (!r.ok()) {
    answer(job, r.status());
  } else if (r->flags & ado::kDoneNotHandled) {
    answer(job, InvalidArgument(
                    fmt::format("no ADO plugin of pool '{}' accepted the request", a->name)));
  } else {
    answer(job, OkStatus(), r->reply);
  }
  pump(*a);
}

void AdoManager::fail_all(PoolAdo& a, const Status& why) {
  std::deque<AdoJob> queue = std::move(a.queue);
  a.queue.clear();
  for (AdoJob& job : queue) answer(job, why);
}

// ---------------------------------------------------------------------------------------------
// Store callbacks

Result<std::string> AdoManager::callback(uint64_t handle, const ado::Callback& c) {
  PoolAdo* a = find(handle);
  ServerPool* pool = shard_.pool(handle);
  if (a == nullptr || pool == nullptr) return Unavailable("the pool is gone");
  AdoJob* job = nullptr;
  if (c.work_id != 0) {
    if (!a->running || a->running->work_id != c.work_id) {
      return InvalidArgument("callback of a finished invocation");
    }
    job = &*a->running;
  }
  if (c.op == ado::CallbackOp::kLogUndo) return log_undo(*pool, job, c);
  return answer_callback(*pool, *a, job, c, shard_.context().now_ns());
}

// The ADO wrote undo entries: they are logged before it changes what they restore.
Result<std::string> AdoManager::log_undo(ServerPool& pool, const AdoJob* job,
                                         const ado::Callback& c) {
  if (job == nullptr) return InvalidArgument("tx_add outside an invocation");
  if (!pool.mark_undo(c.arg0, c.arg1)) {
    return InvalidArgument("kLogUndo names bytes outside the pool's undo block");
  }
  FARMEM_TRY(shard_.log_changes());
  return std::string();
}

}  // namespace farmem::kv::service
