// The memory node's service door: how code that runs on the memory node plugs in.
//
// A Service owns a range of RPC opcodes and, on each worker thread, a ServiceWorker that
// handles the requests of that range arriving on that worker. The core service (allocation,
// roots, objects, stats, served one-sided operations) is one like any other; later ones (the
// key-value store, transaction recovery, far-memory agents) register the same way, without
// editing the dispatch.
//
// Contract for handlers:
//  - handle() runs on the worker thread that received the request (the session's worker),
//    outside UCX callbacks, and must not block: no sleeping, no waiting for another process,
//    no unbounded loops. Shared node state (NodeState) is taken under NodeState::mu briefly.
//  - Every request is answered exactly once through its Responder: now, or later from the same
//    worker thread (keep the Responder, e.g. while a helper process works). A Responder
//    dropped unanswered replies kInternal. If the session ends first, the reply is dropped.
//  - on_session_end() is called on the session's worker when it ends (for per-session state).
//  - poll() is called on every loop round of the worker with the current time; it must be
//    cheap (check a deadline, a queue) and is where deferred work finishes.
// Thread safety: a Service is shared by all workers (its methods may run concurrently on
// several worker threads); each ServiceWorker belongs to one worker thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/common/status.h"
#include "farmem/fabric/wire.h"
#include "farmem/memnode/node_state.h"

namespace farmem::memnode {

class ServerWorker;

// One request as a handler sees it.
struct Request {
  wire::RpcHeader header{};
  std::vector<uint8_t> payload;
  uint64_t session = 0;  // the requesting session
  uint32_t worker = 0;   // the worker thread serving it
};

// Answers one request exactly once (move-only).
class Responder {
 public:
  Responder(ServerWorker* worker, uint64_t session, const wire::RpcHeader& header)
      : worker_(worker), session_(session), header_(header) {}
  Responder(Responder&& o) noexcept;
  Responder& operator=(Responder&& o) noexcept;
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  ~Responder();

  void ok(const void* data, size_t bytes);
  void ok(std::string_view bytes) { ok(bytes.data(), bytes.size()); }
  void fail(const Status& status);
  // ok() when status is OK (with `bytes`), fail() otherwise.
  void finish(const Status& status, std::string_view bytes = {});
  bool answered() const { return worker_ == nullptr; }
  uint64_t session() const { return session_; }

 private:
  ServerWorker* worker_;
  uint64_t session_;
  wire::RpcHeader header_;
};

// What a ServiceWorker may use on its worker thread.
struct WorkerContext {
  NodeState* node = nullptr;
  uint32_t worker_index = 0;
};

class ServiceWorker {
 public:
  virtual ~ServiceWorker() = default;
  virtual void handle(Request& request, Responder responder) = 0;
  virtual void on_session_end(uint64_t session) {}
  virtual void poll(uint64_t now_ns) {}
};

class Service {
 public:
  virtual ~Service() = default;
  virtual std::string_view name() const = 0;
  virtual uint16_t first_opcode() const = 0;
  virtual uint16_t last_opcode() const = 0;
  // Called once per worker thread at start-up, on that thread.
  virtual std::unique_ptr<ServiceWorker> start_worker(const WorkerContext& context) = 0;
};

// Services by opcode range; ranges may not overlap. Built before the server starts.
class ServiceRegistry {
 public:
  Status add(std::shared_ptr<Service> service);
  // Index of the service owning `opcode`, or -1.
  int find(uint16_t opcode) const;
  const std::vector<std::shared_ptr<Service>>& services() const { return services_; }

 private:
  std::vector<std::shared_ptr<Service>> services_;
};

// The core service (opcodes 1..wire::kLastCoreOpcode): alloc, free, roots, objects, stats,
// echo, sessions-alive, served one-sided operations. Always registered by Server::create.
std::shared_ptr<Service> make_core_service();

}  // namespace farmem::memnode
