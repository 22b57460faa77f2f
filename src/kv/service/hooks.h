// PoolHooks: how Active Data Objects (the ADO manager, src/kv/service/ado_*) plug into the kv
// service, and Shard, what they may use of it.
//
// KvServiceOptions::make_hooks makes one PoolHooks per shard (worker), on that worker's thread.
// Every call below runs on that thread and must not block (service door rules,
// memnode/service.h): start work, keep the Responder, and finish it from poll(). To wake up for
// a socket, use shard.context().watch_fd(fd); for a deadline, return it from wake_at_ns().
//
// Without hooks, kInvokeAdo / kInvokePutAdo answer kUnavailable "no ADO support".
#pragma once

#include <cstdint>
#include <string_view>

#include "farmem/memnode/service.h"

namespace farmem::kv::service {

class ServerPool;
class Shard;

enum class PoolEvent : uint8_t {
  kOpen,        // a session opened a handle (create counts); session = it
  kClose,       // a session closed a handle (close, session end); session = it
  kDelete,      // the pool is about to be deleted (still intact); session = the deleter
  kConfigured,  // the pool's AdoSettings changed (configure); session = the configurer
};

enum class KeySignal : uint8_t { kPostPut, kPostGet, kPostErase };

class PoolHooks {
 public:
  virtual ~PoolHooks() = default;
  // kInvokeAdo / kInvokePutAdo on `pool`. Checked before the call: the opcode, the payload
  // holds at least a KvAdoRequest, its pool handle is open in request.session (its writability
  // is pool.writable(session)), and pool.ado().configured(). Everything else of the payload is
  // the hooks' to validate. Answer exactly once, now or later on this thread.
  virtual void invoke(ServerPool& pool, memnode::Request& request,
                      memnode::Responder responder) = 0;
  virtual void on_pool_event(ServerPool& pool, PoolEvent event, uint64_t session) {}
  // After a successful put / get / erase (kOps) of `key`, when the pool's AdoSettings ask for
  // that signal. Notification only: the client's reply does not wait for it.
  virtual void on_key_signal(ServerPool& pool, KeySignal signal, std::string_view key) {}
  // A session ended (after its handles were closed and its locks released).
  virtual void on_session_end(uint64_t session) {}
  virtual void poll(uint64_t now_ns) {}
  virtual uint64_t wake_at_ns() const { return 0; }
};

}  // namespace farmem::kv::service
