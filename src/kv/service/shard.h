// Shard: the kv service's state and request handlers on one worker thread.
//
// A shard owns the pools whose name hashes to its worker (XXH3(name) % workers), their handles
// (worker:8 | slot:24 | generation:32), which sessions have them open, which are temporary
// (deleted when their creating session ends), and its counters. The
// service (service.cc) routes each request to the shard that owns its pool; everything here
// then runs on that shard's thread. Sources: shard.cc (dispatch, handles, sessions),
// shard_pools.cc (pool requests), shard_keys.cc (key requests). KvShared is what all shards share:
// the directory of pool names (list, the per-node pool limit), per-shard counters and the version
// counter. On a durable node (shard_durable.cc) a shard also logs the region bytes each request
// changed, answers once they are stable, and rebuilds its pools at start.
// Thread safety: a Shard on its worker's thread; KvShared as marked.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "farmem/kv/service.h"
#include "farmem/kv/wire.h"
#include "farmem/memnode/service.h"
#include "farmem/memnode/stable_replies.h"
#include "farmem/storage/journal.h"
#include "hooks.h"
#include "messages.h"
#include "server_pool.h"

namespace farmem::kv::service {

// Counters of one shard (KvShardStats), written by its thread, read by any.
struct ShardCounters {
  std::atomic<uint64_t> puts{0}, gets{0}, erases{0}, locates{0}, ado_invocations{0}, failures{0},
      clients{0}, pools{0}, coalesced_ops{0}, ops_messages{0};
};

struct KvShared {
  explicit KvShared(KvServiceOptions o) : options(std::move(o)) {}
  const KvServiceOptions options;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<PoolSummary>> directory;  // (mu) every pool by name
  std::array<ShardCounters, farmem::wire::kMaxServerWorkers> counters;
  std::atomic<uint64_t> next_version{1};
};

// The shard a pool name belongs to.
uint32_t shard_of(std::string_view name, uint32_t workers);
// A pool's node object is named kPoolObjectPrefix + the pool's name.
inline constexpr std::string_view kPoolObjectPrefix = "kv/";

class Shard {
 public:
  Shard(const memnode::WorkerContext& context, KvShared& shared);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // A request whose pool belongs to this shard (or that needs no pool).
  void handle(memnode::Request& request, memnode::Responder responder);
  void on_session_end(uint64_t session);
  void poll(uint64_t now_ns);
  uint64_t wake_at_ns() const;

  // ---- for PoolHooks (this thread) ----
  const memnode::WorkerContext& context() const { return context_; }
  const KvServiceOptions& options() const { return shared_.options; }
  RegionView region() const { return region_; }
  // The pool a handle names, if it is on this shard (whoever has it open), else null.
  ServerPool* pool(uint64_t handle);
  ServerPool* pool_by_name(std::string_view name);
  ShardCounters& counters() { return counters_; }
  // Answers a request the hooks kept once what the pools changed so far is stable (logged
  // first: on a durable node, an ADO's answer acknowledges its changes; at once otherwise).
  void answer_when_stable(memnode::Responder responder, const Status& status, std::string reply);
  // Logs what the pools changed so far now, without waiting for it to be stable (an ADO's undo
  // entries, before it changes the bytes they restore). The shard's write failure, if any.
  Status log_changes();

 private:
  struct Slot {
    std::unique_ptr<ServerPool> pool;
    uint32_t generation = 0;
  };
  using Out = std::string;

  // ---- durable node (shard_durable.cc) ----
  bool durable() const { return context_.node->journal != nullptr; }
  // Rebuilds the pools of this shard that a data directory holds (construction).
  void recover_pools();
  Status recover_pool(const memnode::ObjectTable::Object& object,
                      std::vector<MemorySource::Block> blocks, uint64_t* max_version);
  // The end of one key operation: copies the bytes it changed (as they are now) for the next
  // flush, so that a later operation of the same request cannot change what this one logs.
  void end_op();
  void take_copies(const std::vector<DirtyRanges::Range>& ranges);
  // Logs what the pools changed since the last flush (one write for the copies); returns the
  // LSN the next answers wait for.
  uint64_t flush();
  void log_copies();
  // A change that could not be logged: every later request of this shard fails with it, so
  // nothing is acknowledged that a restart would not bring back.
  void write_failure(const Status& status);

  // ---- dispatch, handles, sessions (shard.cc) ----
  Status dispatch(memnode::Request& r, Out* out);
  // The pool `handle` names if `session` has it open.
  Result<ServerPool*> open_pool(uint64_t handle, uint64_t session);
  Result<ServerPool*> writable_pool(uint64_t handle, uint64_t session);
  void invoke(memnode::Request& r, memnode::Responder responder);
  // Deletes the temporary pools `session` created (their other handles die with them).
  void drop_temporary_pools(uint64_t session);
  void refresh_gauges();

  // ---- pools (shard_pools.cc) ----
  Status create(const memnode::Request& r, Out* out);
  Status open(const memnode::Request& r, Out* out);
  Status close(const memnode::Request& r);
  Status destroy(const memnode::Request& r);
  Status configure(const memnode::Request& r);
  Status info(const memnode::Request& r, Out* out);
  Status list(const memnode::Request& r, Out* out);
  Status shard_stats(const memnode::Request& r, Out* out);
  Result<ServerPool*> make_pool(const PoolNameRequest& req, uint64_t now_ns);
  // A slot, handle and ServerPool for pool `name`, whose object exists and whose name is in the
  // directory, durable on a durable node; `setup` (init or recover) readies it. On failure the
  // slot is free again and the caller undoes the rest.
  Result<ServerPool*> install_pool(const std::string& name, uint64_t object_id,
                                   uint64_t capacity_bytes, std::shared_ptr<PoolSummary> summary,
                                   bool temporary, const std::function<Status(ServerPool&)>& setup);
  // The steps of making (and removing) a pool: its name in the node's directory, its node
  // object (which owns its memory), its slot.
  Status enter_directory(const std::string& name, std::shared_ptr<PoolSummary> summary);
  void leave_directory(const std::string& name);
  Result<uint64_t> create_pool_object(const std::string& name);
  void destroy_pool_object(uint64_t object_id);
  uint32_t take_slot();
  void open_handle(ServerPool* pool, uint64_t session, bool writable);
  void forget_session_pool(uint64_t session, ServerPool* pool);
  void remove_pool(ServerPool* pool);

  // ---- keys (shard_keys.cc) ----
  Status ops(const memnode::Request& r, Out* out);
  Status locate(const memnode::Request& r, Out* out);
  Status release(const memnode::Request& r);
  Status find(const memnode::Request& r, Out* out);
  Status attribute(const memnode::Request& r, Out* out);

  memnode::WorkerContext context_;
  KvShared& shared_;
  ShardCounters& counters_;
  RegionView region_;
  Versions versions_;
  uint64_t grace_ns_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::unordered_map<uint64_t, std::unordered_set<uint32_t>> session_pools_;  // session -> slots
  // Temporary pools (wire::kPoolTemporary): handle -> the session whose end deletes the pool.
  std::unordered_map<uint64_t, uint64_t> temporary_;
  std::unique_ptr<PoolHooks> hooks_;
  DirtyRanges dirty_;
  memnode::StableReplies replies_;
  // end_op() to flush(): the copied bytes one after the other, and (offset, bytes) of each.
  std::string copied_;
  std::vector<std::pair<uint64_t, uint64_t>> copies_;
  uint64_t last_lsn_ = 0;  // the last range logged: answers wait for it to be stable
  Status failed_;          // write_failure()
};

}  // namespace farmem::kv::service
