#include "ado_manager.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "farmem/common/log.h"
#include "farmem/kv/service.h"
#include "shard.h"

namespace farmem::kv::service {

namespace w = farmem::kv::wire;

namespace {

uint64_t owner_of(uint64_t work_id) { return kAdoOwnerBit | work_id; }

std::string range_bytes(uint64_t offset, uint64_t bytes) {
  ado::ValueRange v{offset, bytes};
  return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
}

// The farmem-ado next to this executable.
std::string default_ado_binary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "farmem-ado";
  return (self.parent_path() / "farmem-ado").string();
}

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

}  // namespace

class AdoManager::Callbacks : public AdoCallbacks {
 public:
  Callbacks(AdoManager* m, uint64_t handle) : m_(m), handle_(handle) {}
  Result<std::string> on_callback(const ado::Callback& c) override {
    return m_->callback(handle_, c);
  }

 private:
  AdoManager* m_;
  uint64_t handle_;
};

AdoManager::AdoManager(Shard& shard, AdoProcessOptions options, uint64_t launch_retry_ns)
    : shard_(shard), options_(std::move(options)), launch_retry_ns_(launch_retry_ns) {}

AdoManager::~AdoManager() {
  // Node shutdown: whatever waits hears so, and every process is killed and reaped.
  for (auto& [handle, a] : pools_) {
    if (a.running) answer(*a.running, Unavailable("the memory node is shutting down"));
    a.running.reset();
    fail_all(a, Unavailable("the memory node is shutting down"));
    if (a.proc.process && a.proc.watched) shard_.context().unwatch_fd(a.proc.process->fd());
    a.proc.process.reset();  // SIGKILL, waitpid
  }
  dying_.clear();
}

std::string AdoManager::describe(const ServerPool& pool) const {
  return fmt::format("pool '{}' (plugins {})", pool.name(), fmt::join(pool.ado().plugins, ", "));
}

AdoManager::PoolAdo& AdoManager::ado_of(ServerPool& pool) {
  auto [it, inserted] = pools_.try_emplace(pool.handle());
  if (inserted) {
    it->second.handle = pool.handle();
    it->second.name = pool.name();
  }
  return it->second;
}

AdoManager::PoolAdo* AdoManager::find(uint64_t handle) {
  auto it = pools_.find(handle);
  return it == pools_.end() ? nullptr : &it->second;
}

pid_t AdoManager::pid_of(uint64_t pool) const {
  auto it = pools_.find(pool);
  if (it == pools_.end() || !it->second.proc.process || it->second.proc.process->dead()) return -1;
  return it->second.proc.process->pid();
}

// ---------------------------------------------------------------------------------------------
// Invocations

void AdoManager::invoke(ServerPool& pool, memnode::Request& r, memnode::Responder responder) {
  w::KvAdoRequest req{};
  std::memcpy(&req, r.payload.data(), sizeof(req));
  const bool put = r.header.opcode == static_cast<uint16_t>(w::KvOpcode::kInvokePutAdo);
  auto bad = [&](std::string_view why) {
    shard_.counters().failures.fetch_add(1, std::memory_order_relaxed);
    responder.fail(
        InvalidArgument(fmt::format("ADO invocation on pool '{}': {}", pool.name(), why)));
  };
  if ((req.flags & ~w::kAdoKnownFlags) != 0) return bad("unknown flags");
  if (req.key_bytes > w::kMaxKeyBytes) return bad("key too long");
  if (req.request_bytes > w::kMaxAdoRequestBytes) return bad("request too long");
  if (!put && (req.value_bytes != 0 || (req.flags & (w::kAdoNoOverwrite | w::kAdoDetached)))) {
    return bad("a value, kAdoNoOverwrite or kAdoDetached needs invoke_put_ado");
  }
  const uint64_t total =
      sizeof(req) + uint64_t{req.key_bytes} + req.value_bytes + req.request_bytes;
  if (total != r.payload.size()) {
    return bad(fmt::format("{} bytes announced, {} sent", total, r.payload.size()));
  }
  const bool detached = (req.flags & w::kAdoDetached) != 0;
  const bool creates = (req.flags & (w::kAdoCreateOnDemand | w::kAdoCreateOnly)) != 0;
  if (req.key_bytes == 0 && (creates || (put && !detached))) return bad("needs a key");
  if (creates && req.value_size > UINT32_MAX) return bad("value_size above 4 GiB - 1");
  if (detached && req.value_bytes == 0) return bad("kAdoDetached needs a value");
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
  Job job;
  job.work_id = next_work_++;
  job.opcode = r.header.opcode;
  job.flags = req.flags;
  job.value_size = req.value_size;
  const char* p = reinterpret_cast<const char*>(r.payload.data()) + sizeof(req);
  job.key.assign(p, req.key_bytes);
  job.value.assign(p + req.key_bytes, req.value_bytes);
  job.request.assign(p + req.key_bytes + req.value_bytes, req.request_bytes);
  job.enqueued_ns = shard_.context().now_ns();
  if (req.flags & w::kAdoAsync) {
    w::KvAdoReply empty{0, 0};
    responder.ok(&empty, sizeof(empty));
  } else {
    job.responder.emplace(std::move(responder));
  }
  a.queue.push_back(std::move(job));
  pump(a);
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
  Job job;
  job.work_id = next_work_++;
  job.signal = signal_code(signal);
  job.key.assign(key);
  job.enqueued_ns = shard_.context().now_ns();
  a.queue.push_back(std::move(job));
  pump(a);
}

Status AdoManager::ensure_process(PoolAdo& a, ServerPool& pool) {
  if (a.proc.process && !a.proc.process->dead()) return OkStatus();
  retire(a);
  if (!pool.ado().configured()) {
    return InvalidArgument(fmt::format("pool '{}' has no ADO plugins", pool.name()));
  }
  if (a.retry_at_ns != 0 && shard_.context().now_ns() < a.retry_at_ns) return a.launch_failure;
  // A new pool: its first ADO on this node, and no keys yet.
  const bool new_pool = !a.launched_before && pool.count() == 0;
  ado::Launch l;
  l.flags = new_pool ? FARMEM_ADO_LAUNCH_NEW_POOL : 0;
  l.pool_capacity_bytes = pool.capacity_bytes();
  l.region_bytes = shard_.region().bytes;
  l.node_id = shard_.context().config().node_id;
  l.pool_name = pool.name();
  l.plugin_paths = pool.ado().plugins;
  l.params.assign(pool.ado().params.begin(), pool.ado().params.end());
  if (options_.node_address.empty()) {  // the door's port is known once the node listens
    const memnode::ServerConfig& config = shard_.context().config();
    std::string host = config.listen == "0.0.0.0" ? "127.0.0.1" : config.listen;
    uint16_t port = shard_.context().node->door_port.load();
    if (port == 0) return Unavailable("the memory node's door is not open yet");
    options_.node_address = fmt::format("{}:{}", host, port);
  }
  auto callbacks = std::make_unique<Callbacks>(this, a.handle);
  auto p = AdoProcess::spawn(options_, l, callbacks.get(), shard_.context().now_ns());
  if (!p.ok()) return launch_failed(a, p.status());
  a.launched_before = true;
  a.plugins = pool.ado().plugins;
  a.params = pool.ado().params;
  a.proc.pool = a.handle;
  a.proc.callbacks = std::move(callbacks);
  a.proc.process = std::move(*p);
  if (new_pool) a.proc.process->send_event(FARMEM_ADO_EVENT_CREATE, {});
  Status watched = shard_.context().watch_fd(a.proc.process->fd());
  a.proc.watched = watched.ok();  // unwatched, it is still read from poll() (idle check)
  const uint64_t handle = a.handle;
  AdoProcess* process = a.proc.process.get();
  a.proc.process->on_launched([this, handle, process](const Status& s) {
    PoolAdo* pa = find(handle);
    // A retired process's launch concerns nobody: stop() already ended what waited for it.
    if (pa == nullptr || pa->proc.process.get() != process) return;
    if (!s.ok()) {
      fail_all(*pa, launch_failed(*pa, s));
    } else {
      pa->retry_at_ns = 0;
      pump(*pa);
    }
  });
  return OkStatus();
}

Status AdoManager::launch_failed(PoolAdo& a, const Status& why) {
  if (launch_retry_ns_ == 0) return why;
  a.retry_at_ns = shard_.context().now_ns() + launch_retry_ns_;
  a.launch_failure = Status(why.code(), fmt::format("{} (no new ADO process is tried for {} ms "
                                                    "after a failed launch)",
                                                    why.message(), launch_retry_ns_ / 1'000'000));
  return a.launch_failure;
}

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
    Job job = std::move(a.queue.front());
    a.queue.pop_front();
    if (dispatch(a, *pool, job)) return;
  }
}

bool AdoManager::dispatch(PoolAdo& a, ServerPool& pool, Job& job) {
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

Status AdoManager::prepare(PoolAdo& a, ServerPool& pool, Job& job, ado::Work* work) {
  const uint64_t now = shard_.context().now_ns();
  const uint64_t owner = owner_of(job.work_id);
  work->work_id = job.work_id;
  work->key = job.key;
  work->request = job.request;
  if (job.signal != 0) {  // the key's current value, unlocked (a notification)
    work->flags = FARMEM_ADO_WORK_SIGNAL;
    work->signal = job.signal;
    auto info = pool.lookup(job.key);
    if (info.ok()) {
      work->value_count = 1;
      work->values[0] = {info->value, info->value_bytes};
    }
    return OkStatus();
  }
  if (job.flags & w::kAdoReadOnly) work->flags |= FARMEM_ADO_WORK_READ_ONLY;
  if (job.flags & w::kAdoAsync) work->flags |= FARMEM_ADO_WORK_ASYNC;
  const bool put = job.opcode == static_cast<uint16_t>(w::KvOpcode::kInvokePutAdo);
  if (job.flags & w::kAdoDetached) {
    auto off = pool.allocate(job.value.size(), now);
    FARMEM_TRY(off);
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
  if (job.key.empty()) return OkStatus();
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
  work->value_count = std::max<uint32_t>(work->value_count, 1);
  work->values[0] = {g->address, g->value_bytes};
  return OkStatus();
}

void AdoManager::release(ServerPool* pool, Job& job, bool ok) {
  if (pool == nullptr) return;  // deleted: its locks went with it
  const uint64_t now = shard_.context().now_ns();
  for (auto it = job.grants.rbegin(); it != job.grants.rend(); ++it) {
    uint32_t flags = (!ok && it->mode == w::LocateMode::kPutNew) ? w::kReleaseAbort : 0;
    (void)pool->release(owner_of(job.work_id), it->token, flags, now);
  }
  job.grants.clear();
  job.listing.clear();
}

void AdoManager::answer(Job& job, const Status& s, std::string_view reply) {
  if (!job.responder) return;
  if (!s.ok()) shard_.counters().failures.fetch_add(1, std::memory_order_relaxed);
  job.responder->finish(s, reply);
  job.responder.reset();
}

void AdoManager::on_done(uint64_t handle, Result<ado::Done> r) {
  PoolAdo* a = find(handle);
  if (a == nullptr || !a->running) return;
  Job job = std::move(*a->running);
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
  std::deque<Job> queue = std::move(a.queue);
  a.queue.clear();
  for (Job& job : queue) answer(job, why);
}

void AdoManager::stop(PoolAdo& a, const Status& why) {
  a.stopping = true;
  if (a.proc.process) a.proc.process->stop(shard_.context().now_ns());
  fail_all(a, why);
  retire(a);
  a.stopping = false;
}

void AdoManager::retire(PoolAdo& a) {
  if (!a.proc.process) return;
  if (a.proc.watched) shard_.context().unwatch_fd(a.proc.process->fd());
  a.proc.watched = false;
  dying_.push_back(std::move(a.proc));
  a.proc = Proc{};
}

// ---------------------------------------------------------------------------------------------
// ServerPool events, time

void AdoManager::on_pool_event(ServerPool& pool, PoolEvent event, uint64_t session) {
  PoolAdo* a = find(pool.handle());
  switch (event) {
    case PoolEvent::kOpen: {
      if (!pool.ado().configured()) return;
      PoolAdo& pa = ado_of(pool);
      Status s = ensure_process(pa, pool);
      if (!s.ok()) {
        log::warn("kv: cannot start the ADO of {}: {}", describe(pool), s.to_string());
        return;
      }
      pa.proc.process->send_event(FARMEM_ADO_EVENT_OPEN, {});
      return;
    }
    case PoolEvent::kClose:
      if (a == nullptr) return;
      if (a->proc.process) a->proc.process->send_event(FARMEM_ADO_EVENT_CLOSE, {});
      if (pool.open_handles() == 0) {
        stop(*a, Unavailable(fmt::format("pool '{}' was closed", pool.name())));
      }
      return;
    case PoolEvent::kDelete: {
      if (a == nullptr) return;
      // The pool's memory goes when this returns: a process that may still be writing it (a
      // work in flight, here or in a process stopping after its last work) is killed and
      // reaped first; an idle one hears of the deletion and stops.
      const Status gone = Unavailable(fmt::format("pool '{}' was deleted", pool.name()));
      for (size_t i = 0; i < dying_.size(); ++i) {
        AdoProcess* d = dying_[i].process.get();
        if (dying_[i].pool == pool.handle() && d->state() == AdoProcess::State::kBusy) {
          d->kill_now(gone);
        }
      }
      if (a->proc.process && a->running) {
        a->proc.process->kill_now(gone);
      } else if (a->proc.process) {
        a->proc.process->send_event(FARMEM_ADO_EVENT_POOL_DELETE, {});
      }
      stop(*a, gone);
      pools_.erase(pool.handle());
      return;
    }
    case PoolEvent::kConfigured:
      // New plugins or parameters need a new process (and may launch where the old failed);
      // signals and indexes do not.
      if (a != nullptr && (a->plugins != pool.ado().plugins || a->params != pool.ado().params)) {
        a->retry_at_ns = 0;
        if (a->proc.process) {
          stop(*a, Unavailable(fmt::format("the ADO settings of pool '{}' changed", pool.name())));
        }
      }
      if (pool.ado().configured() && pool.open_handles() > 0) {
        Status s = ensure_process(ado_of(pool), pool);
        if (!s.ok()) log::warn("kv: cannot start the ADO of {}: {}", describe(pool), s.to_string());
      }
      return;
  }
}

void AdoManager::poll(uint64_t now_ns) {
  for (auto& [handle, a] : pools_) {
    AdoProcess* p = a.proc.process.get();
    if (p == nullptr) continue;
    bool idle = p->ready() && !a.running;
    if (!idle || now_ns >= a.last_read_ns + kIdleCheckNs) {
      a.last_read_ns = now_ns;
      p->on_readable(now_ns);
    } else if (p->next_deadline() != 0) {
      p->poll(now_ns);
    }
    if (a.proc.process && a.proc.process->dead()) {
      retire(a);
      pump(a);  // queued work starts a fresh process
    }
  }
  // Retired processes: one still finishing its last work is read (its answer, its callbacks);
  // the others are only reaped. (Indices: reading may retire more processes.)
  for (size_t i = 0; i < dying_.size(); ++i) {
    AdoProcess* d = dying_[i].process.get();
    if (d->state() == AdoProcess::State::kBusy || d->state() == AdoProcess::State::kStopping) {
      d->on_readable(now_ns);
    } else {
      d->poll(now_ns);
    }
  }
  std::erase_if(dying_, [](const Proc& d) { return d.process->reaped() && d.process->dead(); });
}

uint64_t AdoManager::wake_at_ns() const {
  uint64_t at = 0;
  auto nearer = [&at](uint64_t t) {
    if (t != 0 && (at == 0 || t < at)) at = t;
  };
  for (const auto& [handle, a] : pools_) {
    if (!a.proc.process) continue;
    nearer(a.proc.process->next_deadline());
    if (!a.proc.watched) nearer(a.last_read_ns + kIdleCheckNs);
  }
  // Processes waiting to be reaped are checked every idle period.
  if (!dying_.empty()) nearer(shard_.context().now_ns() + kIdleCheckNs);
  return at;
}

// ---------------------------------------------------------------------------------------------
// Store callbacks

Result<std::string> AdoManager::callback(uint64_t handle, const ado::Callback& c) {
  PoolAdo* a = find(handle);
  ServerPool* pool = shard_.pool(handle);
  if (a == nullptr || pool == nullptr) return Unavailable("the pool is gone");
  Job* job = nullptr;
  if (c.work_id != 0) {
    if (!a->running || a->running->work_id != c.work_id) {
      return InvalidArgument("callback of a finished invocation");
    }
    job = &*a->running;
  }
  return callback_on(*pool, *a, job, c);
}

Result<std::string> AdoManager::callback_on(ServerPool& pool, PoolAdo& a, Job* job,
                                            const ado::Callback& c) {
  using Op = ado::CallbackOp;
  const uint64_t now = shard_.context().now_ns();
  const uint64_t owner = owner_of(c.work_id);
  const bool keyed = c.op == Op::kCreateKey || c.op == Op::kOpenKey || c.op == Op::kEraseKey ||
                     c.op == Op::kResize || c.op == Op::kUnlock;
  if (keyed && c.key.empty()) return InvalidArgument("empty key");
  auto held = [&](const std::string& key) -> Grant* {
    if (job == nullptr) return nullptr;
    for (auto& g : job->grants) {
      if (g.key == key) return &g;
    }
    return nullptr;
  };
  auto keep_or_release = [&](const LockGrant& g) {
    if (job != nullptr) {
      job->grants.push_back({g.token, g.key, g.mode, g.address, g.value_bytes});
    } else {
      (void)pool.release(owner, g.token, 0, now);  // outside an invocation: no lock is kept
    }
  };
  switch (c.op) {
    case Op::kCreateKey: {
      if (c.arg0 > UINT32_MAX) return InvalidArgument("value above 4 GiB - 1");
      auto g =
          pool.lock(owner, c.key, w::LocateMode::kPutNew, 0, c.arg0, w::kLocateCreateOnly, now);
      FARMEM_TRY(g);
      std::memset(shard_.region().at(g->address), 0, g->length);
      keep_or_release(*g);
      return range_bytes(g->address, g->value_bytes);
    }
    case Op::kOpenKey: {
      if (Grant* mine = held(c.key)) return range_bytes(mine->address, mine->bytes);
      if (c.arg0 != FARMEM_ADO_LOCK_READ && c.arg0 != FARMEM_ADO_LOCK_WRITE) {
        return InvalidArgument("open_key: lock must be FARMEM_ADO_LOCK_READ or _WRITE");
      }
      auto mode = c.arg0 == FARMEM_ADO_LOCK_WRITE ? w::LocateMode::kWrite : w::LocateMode::kRead;
      auto g = pool.lock(owner, c.key, mode, 0, 0, 0, now);
      FARMEM_TRY(g);
      keep_or_release(*g);
      return range_bytes(g->address, g->value_bytes);
    }
    case Op::kEraseKey: {
      if (held(c.key) != nullptr) {
        return InvalidArgument(
            "erase_key of a key this invocation holds (the target: return "
            "FARMEM_ADO_ERASE_TARGET; others: unlock_key first)");
      }
      FARMEM_TRY(pool.erase(c.key, now));
      if (a.proc.process) a.proc.process->send_event(FARMEM_ADO_EVENT_ERASE, c.key);
      return std::string();
    }
    case Op::kResize: {
      Grant* g = held(c.key);
      if (g == nullptr || g->mode == w::LocateMode::kRead) {
        return InvalidArgument("resize_value needs a key this invocation holds write-locked");
      }
      if (c.arg0 > UINT32_MAX || c.arg0 > w::kMaxValueBytes) return InvalidArgument("too large");
      Result<LockGrant> ng = Status(Internal("unset"));
      if (g->mode == w::LocateMode::kWrite) {
        ng = pool.resize(owner, g->token, c.arg0, now);  // a new record, locked until release
      } else {
        // A value this invocation created (not yet published): a new one of the new size.
        std::string old(reinterpret_cast<const char*>(shard_.region().at(g->address)), g->bytes);
        FARMEM_TRY(pool.release(owner, g->token, w::kReleaseAbort, now));
        ng = pool.lock(owner, c.key, w::LocateMode::kPutNew, 0, c.arg0, 0, now);
        if (!ng.ok()) {  // the created value is gone with its lock
          std::erase_if(job->grants, [&](const Grant& x) { return x.key == c.key; });
          return ng.status();
        }
        {
          uint8_t* v = shard_.region().at(ng->address);
          size_t keep = std::min<uint64_t>(old.size(), c.arg0);
          std::memcpy(v, old.data(), keep);
          std::memset(v + keep, 0, c.arg0 - keep);
        }
      }
      FARMEM_TRY(ng);
      *g = {ng->token, c.key, ng->mode, ng->address, ng->value_bytes};
      if (a.proc.process) a.proc.process->send_event(FARMEM_ADO_EVENT_RESIZE, c.key);
      return range_bytes(ng->address, ng->value_bytes);
    }
    case Op::kAllocate: {
      if (c.arg0 == 0 || c.arg0 > w::kMaxValueBytes) return InvalidArgument("bytes out of range");
      if (c.arg1 > 64 || (c.arg1 & (c.arg1 - 1)) != 0) {
        return InvalidArgument("alignment must be a power of two up to 64");
      }
      if (a.allocations.size() >= (1u << 20)) return ResourceExhausted("too many ADO allocations");
      auto off = pool.allocate(c.arg0, now);
      FARMEM_TRY(off);
      a.allocations[*off] = c.arg0;
      return range_bytes(*off, c.arg0);
    }
    case Op::kFree: {
      auto it = a.allocations.find(c.arg0);
      if (it == a.allocations.end() || it->second != c.arg1) {
        return InvalidArgument("free_pool_memory of memory the ADO did not allocate (or size)");
      }
      pool.free(c.arg0, c.arg1, now);
      a.allocations.erase(it);
      return std::string();
    }
    case Op::kFind: {
      const SecondaryIndex* index = pool.secondary();
      if (index == nullptr) return InvalidArgument("pool has no secondary index");
      auto f = index->find(c.key, c.arg0);
      FARMEM_TRY(f);
      ado::FindReply r{f->position, static_cast<uint32_t>(f->key.size()),
                       f->more ? ado::kFindReplyMore : 0};
      return std::string(reinterpret_cast<const char*>(&r), sizeof(r)) + f->key;
    }
    case Op::kIterate: {
      std::vector<ado::RecordRef>& listing = job != nullptr ? job->listing : a.launch_listing;
      if (c.arg0 == 0) {
        listing.clear();
        listing.reserve(pool.count());
        pool.for_each_key([&listing](std::string_view, const KeyInfo& info) {
          listing.push_back({info.record, info.version});
        });
      }
      if (c.arg0 > listing.size()) return InvalidArgument("iterate: cursor past the end");
      uint64_t n = std::min<uint64_t>({c.arg1, ado::kMaxIterateRefs, listing.size() - c.arg0});
      ado::IterateReply r{c.arg0 + n >= listing.size() ? UINT64_MAX : c.arg0 + n,
                          static_cast<uint32_t>(n), 0};
      std::string out(reinterpret_cast<const char*>(&r), sizeof(r));
      out.append(reinterpret_cast<const char*>(listing.data() + c.arg0),
                 n * sizeof(ado::RecordRef));
      return out;
    }
    case Op::kUnlock: {
      if (job == nullptr) return InvalidArgument("unlock_key outside an invocation");
      if (!job->grants.empty() && job->grants.front().key == c.key) {
        return InvalidArgument("the invocation's target is unlocked when the invocation ends");
      }
      Grant* g = held(c.key);
      if (g == nullptr) return NotFound("this invocation holds no lock on that key");
      FARMEM_TRY(pool.release(owner, g->token, 0, now));
      std::erase_if(job->grants, [&](const Grant& x) { return x.key == c.key; });
      return std::string();
    }
    case Op::kPoolInfo: {
      farmem_ado_pool_info info{pool.count(), pool.used_bytes(), pool.capacity_bytes()};
      return std::string(reinterpret_cast<const char*>(&info), sizeof(info));
    }
  }
  return InvalidArgument("unknown callback");
}

std::unique_ptr<PoolHooks> make_ado_manager(Shard& shard) {
  const KvServiceOptions& o = shard.options();
  const memnode::ServerConfig& config = shard.context().config();
  AdoProcessOptions p;
  p.program = o.ado_binary.empty() ? default_ado_binary() : o.ado_binary;
  p.plugin_dir = o.ado_plugin_dir;
  p.timeout_ms = o.ado_timeout_ms;
  p.cluster_key = config.cluster_key;
  return std::make_unique<AdoManager>(shard, std::move(p),
                                      uint64_t{o.ado_launch_retry_ms} * 1'000'000);
}

}  // namespace farmem::kv::service
