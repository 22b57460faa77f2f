// AdoManager's processes (ado_manager.h): launch, stop, pool events, polling.
#include "ado_manager.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "farmem/common/log.h"
#include "farmem/kv/service.h"
#include "shard.h"

namespace farmem::kv::service {

namespace {

// The farmem-ado next to this executable.
std::string default_ado_binary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "farmem-ado";
  return (self.parent_path() / "farmem-ado").string();
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
    : shard_(shard), options_(std::move(options)), launch_retry_ns_(launch_retry_ns) {
  // Work ids of a durable node's lives never meet: an undo log left by an earlier life cannot
  // pass for an invocation of this one.
  std::lock_guard<std::mutex> lock(shard_.context().node->mu);
  next_work_ = (shard_.context().node->boot << kBootWorkShift) + 1;
}

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

PoolAdo& AdoManager::ado_of(ServerPool& pool) {
  auto [it, inserted] = pools_.try_emplace(pool.handle());
  if (inserted) {
    it->second.handle = pool.handle();
    it->second.name = pool.name();
  }
  return it->second;
}

PoolAdo* AdoManager::find(uint64_t handle) {
  auto it = pools_.find(handle);
  return it == pools_.end() ? nullptr : &it->second;
}

pid_t AdoManager::pid_of(uint64_t pool) const {
  auto it = pools_.find(pool);
  if (it == pools_.end() || !it->second.proc.process || it->second.proc.process->dead()) return -1;
  return it->second.proc.process->pid();
}

// ---------------------------------------------------------------------------------------------
// The process

Status AdoManager::ensure_process(PoolAdo& a, ServerPool& pool) {
  if (a.proc.process && !a.proc.process->dead()) return OkStatus();
  retire(a);
  if (!pool.ado().configured()) {
    return InvalidArgument(fmt::format("pool '{}' has no ADO plugins", pool.name()));
  }
  if (a.retry_at_ns != 0 && shard_.context().now_ns() < a.retry_at_ns) return a.launch_failure;
  ado::Launch l = launch_of(a, pool);
  if (auto undo = pool.undo_block(); undo.ok()) {
    l.undo = {*undo, pool.undo_bytes()};
  } else {
    log::warn("kv: the ADO of {} has no undo log (tx_add fails): {}", describe(pool),
              undo.status().to_string());
  }
  FARMEM_TRY(resolve_node_address());
  auto callbacks = std::make_unique<Callbacks>(this, a.handle);
  auto p = AdoProcess::spawn(options_, l, callbacks.get(), shard_.context().now_ns());
  if (!p.ok()) return launch_failed(a, p.status());
  a.launched_before = true;
  a.plugins = pool.ado().plugins;
  a.params = pool.ado().params;
  a.proc.pool = a.handle;
  a.proc.callbacks = std::move(callbacks);
  a.proc.process = std::move(*p);
  if ((l.flags & FARMEM_ADO_LAUNCH_NEW_POOL) != 0) {
    a.proc.process->send_event(FARMEM_ADO_EVENT_CREATE, {});
  }
  Status watched = shard_.context().watch_fd(a.proc.process->fd());
  a.proc.watched = watched.ok();  // unwatched, it is still read from poll() (idle check)
  const uint64_t handle = a.handle;
  const AdoProcess* process = a.proc.process.get();
  a.proc.process->on_launched(
      [this, handle, process](const Status& s) { on_launched(handle, process, s); });
  return OkStatus();
}

ado::Launch AdoManager::launch_of(const PoolAdo& a, const ServerPool& pool) const {
  // A new pool: its first ADO on this node, and no keys yet.
  const bool new_pool = !a.launched_before && pool.count() == 0;
  ado::Launch l;
  l.flags = new_pool ? FARMEM_ADO_LAUNCH_NEW_POOL : 0;
  if (shard_.context().node->journal != nullptr) l.flags |= ado::kLaunchDurableNode;
  l.pool_capacity_bytes = pool.capacity_bytes();
  l.region_bytes = shard_.region().bytes;
  l.node_id = shard_.context().config().node_id;
  l.pool_name = pool.name();
  l.plugin_paths = pool.ado().plugins;
  l.params.assign(pool.ado().params.begin(), pool.ado().params.end());
  return l;
}

Status AdoManager::resolve_node_address() {
  if (!options_.node_address.empty()) return OkStatus();
  // The door's port is known once the node listens.
  const memnode::ServerConfig& config = shard_.context().config();
  std::string host = config.listen == "0.0.0.0" ? "127.0.0.1" : config.listen;
  uint16_t port = shard_.context().node->door_port.load();
  if (port == 0) return Unavailable("the memory node's door is not open yet");
  options_.node_address = fmt::format("{}:{}", host, port);
  return OkStatus();
}

void AdoManager::on_launched(uint64_t handle, const AdoProcess* process, const Status& s) {
  PoolAdo* a = find(handle);
  // A retired process's launch concerns nobody, nor that of one stop() is ending (a configure
  // that changed the plugins or parameters): stop() ends what waited for it, and its end is not
  // a failed launch that would hold off the next one.
  if (a == nullptr || a->proc.process.get() != process || a->stopping) return;
  if (!s.ok()) {
    fail_all(*a, launch_failed(*a, s));
  } else {
    a->retry_at_ns = 0;
    pump(*a);
  }
}

Status AdoManager::launch_failed(PoolAdo& a, const Status& why) {
  if (launch_retry_ns_ == 0) return why;
  a.retry_at_ns = shard_.context().now_ns() + launch_retry_ns_;
  a.launch_failure = Status(why.code(), fmt::format("{} (no new ADO process is tried for {} ms "
                                                    "after a failed launch)",
                                                    why.message(), launch_retry_ns_ / 1'000'000));
  return a.launch_failure;
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
  a.proc = AdoProc{};
}

// ---------------------------------------------------------------------------------------------
// ServerPool events, time

void AdoManager::on_pool_event(ServerPool& pool, PoolEvent event, uint64_t session) {
  PoolAdo* a = find(pool.handle());
  switch (event) {
    case PoolEvent::kOpen:
      return on_open(pool);
    case PoolEvent::kClose:
      return on_close(pool, a);
    case PoolEvent::kDelete:
      return on_delete(pool, a);
    case PoolEvent::kConfigured:
      return on_configured(pool, a);
  }
}

void AdoManager::on_open(ServerPool& pool) {
  if (!pool.ado().configured()) return;
  PoolAdo& a = ado_of(pool);
  Status s = ensure_process(a, pool);
  if (!s.ok()) {
    log::warn("kv: cannot start the ADO of {}: {}", describe(pool), s.to_string());
    return;
  }
  a.proc.process->send_event(FARMEM_ADO_EVENT_OPEN, {});
}

void AdoManager::on_close(ServerPool& pool, PoolAdo* a) {
  if (a == nullptr) return;
  a->send_event(FARMEM_ADO_EVENT_CLOSE, {});
  if (pool.open_handles() == 0) {
    stop(*a, Unavailable(fmt::format("pool '{}' was closed", pool.name())));
  }
}

void AdoManager::on_delete(ServerPool& pool, PoolAdo* a) {
  if (a == nullptr) return;
  // The pool's memory goes when this returns: a process that may still be writing it (a work in
  // flight, here or in a process stopping after its last work) is killed and reaped first; an
  // idle one hears of the deletion and stops.
  const Status gone = Unavailable(fmt::format("pool '{}' was deleted", pool.name()));
  for (size_t i = 0; i < dying_.size(); ++i) {  // (indices: ending a work may retire more)
    AdoProcess* d = dying_[i].process.get();
    if (dying_[i].pool == pool.handle() && d->state() == AdoProcess::State::kBusy) {
      d->kill_now(gone);
    }
  }
  if (a->proc.process && a->running) {
    a->proc.process->kill_now(gone);
  } else {
    a->send_event(FARMEM_ADO_EVENT_POOL_DELETE, {});
  }
  stop(*a, gone);
  pools_.erase(pool.handle());
}

void AdoManager::on_configured(ServerPool& pool, PoolAdo* a) {
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
  std::erase_if(dying_, [](const AdoProc& d) { return d.process->reaped() && d.process->dead(); });
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
