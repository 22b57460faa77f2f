// AdoManager: Active Data Objects on one shard of the kv service (its PoolHooks).
//
// One ADO process (AdoProcess, farmem-ado) per pool with plugins (configure AdoPlugins::),
// started on the first open (or the configure that adds plugins to an open pool, or the first
// invocation), stopped when the last handle closes, the pool is deleted or its ADO settings
// change, and killed at node shutdown. Invocations (kInvokeAdo, kInvokePutAdo) and signals
// (post-put / post-get / post-erase) of a pool wait in a bounded FIFO (kMaxQueued) and go to
// its ADO one at a time:
//   1. At dispatch the target key is prepared by the invocation's flags: put (invoke_put_ado;
//      kAdoNoOverwrite keeps an existing value), detached value (kAdoDetached: copied into new
//      pool memory, values[1]), create on demand (kAdoCreateOnDemand: a new value of value_size,
//      zeroed with kAdoZeroNewValue), create only (kAdoCreateOnly: create and answer, no ADO
//      call). Then the key is locked for the invocation — a write lock (the record becomes
//      `locked`: one-sided readers fall back to RPC, which answers kBusy), or a read lock with
//      kAdoReadOnly — under an owner id of its own (kAdoOwnerBit | work id).
//   2. The ADO gets the value's region offset and length (never the bytes: it maps the region)
//      and answers within ado_timeout_ms; its store callbacks are answered at once here.
//   3. Then every lock the invocation holds is released (a write lock publishes a new version
//      and checksum, a created value is published; if the ADO failed, created values are
//      dropped), the target is erased if the plugin asked (FARMEM_ADO_ERASE_TARGET), and the
//      reply (KvAdoReply + responses, as the plugin made it) goes to the client.
// kAdoAsync answers at once and runs the invocation later. A failed ADO (crash, hang, refused
// launch) fails its invocation with kUnavailable / kTimedOut naming the pool and plugins; the
// next one starts a fresh process, except after a failed launch (a plugin that does not load or
// refuses): for launch_retry_ns invocations get the same error at once without a new process
// (a configure of other plugins or parameters ends the wait). Nothing here blocks: processes are
// watched through the worker (WorkerContext::watch_fd) and read in poll().
//
// Files: ado_manager.cc (the processes: launch, stop, pool events, polling),
// ado_invocations.cc (the queue: invocations, signals, dispatch, answers) and ado_callbacks.h
// (the plugins' store callbacks); ado_pool.h holds the per-pool state. Thread safety: the
// shard's worker thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ado_pool.h"
#include "ado_process.h"
#include "hooks.h"
#include "server_pool.h"

namespace farmem::kv::service {

class AdoManager : public PoolHooks {
 public:
  static constexpr size_t kMaxQueued = 256;             // invocations and signals waiting per pool
  static constexpr uint64_t kIdleCheckNs = 10'000'000;  // how often idle ADOs are read
  static constexpr int kBootWorkShift = 40;             // work ids: (boot << 40) + n (boots < 2^16)

  // launch_retry_ns: after a failed launch, how long invocations get its error at once (no new
  // process is tried); a configure that changes the plugins or parameters ends it early.
  AdoManager(Shard& shard, AdoProcessOptions options, uint64_t launch_retry_ns);
  ~AdoManager() override;

  void invoke(ServerPool& pool, memnode::Request& request, memnode::Responder responder) override;
  void on_pool_event(ServerPool& pool, PoolEvent event, uint64_t session) override;
  void on_key_signal(ServerPool& pool, KeySignal signal, std::string_view key) override;
  void poll(uint64_t now_ns) override;
  uint64_t wake_at_ns() const override;

  // For tests: the pid of a pool's ADO process (-1 if none).
  pid_t pid_of(uint64_t pool) const;

 private:
  class Callbacks;

  PoolAdo& ado_of(ServerPool& pool);
  PoolAdo* find(uint64_t handle);

  // ---- the process (ado_manager.cc) ----
  // Starts the pool's ADO if it has none that lives.
  Status ensure_process(PoolAdo& a, ServerPool& pool);
  // The launch message of the pool's next process.
  ado::Launch launch_of(const PoolAdo& a, const ServerPool& pool) const;
  // Sets options_.node_address once the node's door is open.
  Status resolve_node_address();
  // Records a failed launch; returns the error invocations get until the retry time.
  Status launch_failed(PoolAdo& a, const Status& why);
  void on_launched(uint64_t handle, const AdoProcess* process, const Status& s);
  // Stops the pool's ADO (graceful; killed after the grace) and fails what waits.
  void stop(PoolAdo& a, const Status& why);
  void retire(PoolAdo& a);
  void on_open(ServerPool& pool);
  void on_close(ServerPool& pool, PoolAdo* a);
  void on_delete(ServerPool& pool, PoolAdo* a);
  void on_configured(ServerPool& pool, PoolAdo* a);

  // ---- invocations and signals (ado_invocations.cc) ----
  void enqueue(PoolAdo& a, AdoJob job);
  // Dispatches queued jobs while the ADO is ready.
  void pump(PoolAdo& a);
  // Prepares and sends one job; false if it was answered at once (error, create-only).
  bool dispatch(PoolAdo& a, ServerPool& pool, AdoJob& job);
  Status prepare(PoolAdo& a, ServerPool& pool, AdoJob& job, ado::Work* work);
  // The prepare steps: a signal's current value; an invocation's value (put or detached); the
  // lock on its target key.
  void prepare_signal(ServerPool& pool, const AdoJob& job, ado::Work* work);
  Status prepare_value(PoolAdo& a, ServerPool& pool, const AdoJob& job, ado::Work* work);
  Status lock_target(ServerPool& pool, AdoJob& job, ado::Work* work);
  void on_done(uint64_t handle, Result<ado::Done> r);
  // Releases the job's locks (publishing, or dropping new values when !ok; when !ok the
  // target's value is put back as it was first).
  void release(ServerPool* pool, AdoJob& job, bool ok);
  void undo_target(ServerPool& pool, const AdoJob& job);
  void answer(AdoJob& job, const Status& s, std::string_view reply = {});
  void fail_all(PoolAdo& a, const Status& why);
  Result<std::string> callback(uint64_t handle, const ado::Callback& c);
  Result<std::string> log_undo(ServerPool& pool, const AdoJob* job, const ado::Callback& c);
  std::string describe(const ServerPool& pool) const;

  Shard& shard_;
  AdoProcessOptions options_;
  uint64_t launch_retry_ns_;
  std::unordered_map<uint64_t, PoolAdo> pools_;  // by pool handle
  std::vector<AdoProc> dying_;                   // stopped or failed, until reaped
  uint64_t next_work_ = 1;
  uint64_t dropped_signals_ = 0;
};

// The factory KvServiceOptions::make_hooks uses when ado_plugin_dir is set.
std::unique_ptr<PoolHooks> make_ado_manager(Shard& shard);

}  // namespace farmem::kv::service
