// What the ADO manager (ado_manager.h) keeps per pool: the pool's ADO process, the queue of its
// invocations and signals (AdoJob), the job running and the locks it holds (AdoGrant), and the
// pool memory the ADO allocated. Plain data; AdoManager and the store callbacks
// (ado_callbacks.h) change it. Thread safety: the pool's worker thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../ado/channel.h"
#include "ado_process.h"
#include "farmem/common/status.h"
#include "farmem/kv/wire.h"
#include "farmem/memnode/service.h"
#include "server_pool.h"

namespace farmem::kv::service {

// The lock owner of a job's key locks: never a session id (kAdoOwnerBit).
inline uint64_t ado_owner(uint64_t work_id) { return kAdoOwnerBit | work_id; }

// A key lock a job holds: its target's, or one a store callback took.
struct AdoGrant {
  uint64_t token = 0;
  std::string key;
  wire::LocateMode mode = wire::LocateMode::kRead;
  uint64_t address = 0;  // region offset of the value
  uint64_t bytes = 0;    // the value's length
};

inline constexpr uint64_t kMaxAdoUndoBytes = 16ull << 20;

// One invocation or signal.
struct AdoJob {
  uint64_t work_id = 0;
  uint16_t opcode = 0;
  uint32_t flags = 0;   // wire::kAdo*
  uint32_t signal = 0;  // FARMEM_ADO_SIGNAL_* (a signal), else 0
  uint64_t value_size = 0;
  std::string key, value, request;
  std::optional<memnode::Responder> responder;  // none: async or signal
  uint64_t enqueued_ns = 0;
  // While it runs:
  std::vector<AdoGrant> grants;         // the target's first, then the callbacks'
  std::vector<ado::RecordRef> listing;  // iterate's snapshot, taken at cursor 0
  // The target value as it was before a write invocation (at most kMaxAdoUndoBytes): put back
  // if the ADO process dies in the middle, so the value is the old one or the new one.
  std::string undo;
  bool has_undo = false;

  // The lock this job holds on `key`, or null.
  AdoGrant* held(std::string_view key) {
    for (auto& g : grants) {
      if (g.key == key) return &g;
    }
    return nullptr;
  }
};

// A process and the object answering its callbacks (they live and die together).
struct AdoProc {
  uint64_t pool = 0;  // the pool's handle
  std::unique_ptr<AdoCallbacks> callbacks;
  std::unique_ptr<AdoProcess> process;
  bool watched = false;
};

// A pool's ADO: its process, its queue.
struct PoolAdo {
  uint64_t handle = 0;
  std::string name;
  AdoProc proc;
  std::deque<AdoJob> queue;
  std::optional<AdoJob> running;
  std::map<uint64_t, uint64_t> allocations;    // ADO-allocated pool memory: offset -> bytes
  std::vector<ado::RecordRef> launch_listing;  // iterate's snapshot outside an invocation
  uint64_t last_read_ns = 0;
  bool stopping = false;             // stop() in progress: nothing is dispatched
  bool launched_before = false;      // an ADO was started for this pool (CREATE event sent)
  std::vector<std::string> plugins;  // what the current process was launched with
  std::map<std::string, std::string> params;
  Status launch_failure;     // the last failed launch's error, refused until retry_at_ns
  uint64_t retry_at_ns = 0;  // 0: no failed launch to wait out

  // Sends an op event to the process, if there is one.
  void send_event(uint32_t event, std::string_view key) {
    if (proc.process) proc.process->send_event(event, key);
  }
};

}  // namespace farmem::kv::service
