// The memory node's service door: how code that runs on the memory node plugs in.
//
// A Service owns a range of RPC opcodes and, on each worker thread, a ServiceWorker that
// handles the requests of that range arriving on that worker. The core service (allocation,
// roots, objects, stats, served one-sided operations) is one like any other; later ones (the
// key-value store, transaction recovery, far-memory agents) register the same way, without
// editing the dispatch.
//
// Contract for handlers:
//  - handle() runs on a worker thread (the session's worker, or the worker a request was
//    forwarded to), outside UCX callbacks, and must not block: no sleeping, no waiting for
//    another process, no unbounded loops. Shared node state (NodeState) is taken under
//    NodeState::mu briefly.
//  - Every request is answered exactly once through its Responder: now, or later from the same
//    worker thread (keep the Responder, e.g. while a helper process works). A Responder
//    dropped unanswered replies kInternal. If the session ends first, the reply is dropped.
//  - Forwarding (WorkerContext::forward): state that lives on one worker (a shard) is worked on
//    only by that worker's thread. A request that arrives elsewhere is handed to the same
//    service on the owning worker through a bounded cross-worker queue (an eventfd wakes a
//    sleeping worker); handle() runs there, and its Responder sends the answer back through the
//    session's own worker (UCX workers are single-threaded). Order: the requests one worker
//    forwards to another are handled in the order they were forwarded.
//  - on_session_end(session) is called on every worker when a session ends: first on the
//    session's own worker, then on each other worker after every request the session had
//    forwarded to it, so per-session state kept on any worker can be released.
//  - poll() is called on every loop round of the worker with the current time; it must be
//    cheap (check a deadline, a queue) and is where deferred work finishes. A sleeping worker
//    wakes for its sessions, forwarded work, a file descriptor a service watches
//    (WorkerContext::watch_fd) becoming readable, and the earliest wake_at_ns() of its services.
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
#include "farmem/memnode/procedure.h"

namespace farmem::memnode {

class ServerWorker;

// One request as a handler sees it.
struct Request {
  wire::RpcHeader header{};
  std::vector<uint8_t> payload;
  uint64_t session = 0;         // the requesting session
  uint32_t worker = 0;          // the worker thread serving it
  uint32_t session_worker = 0;  // the worker that owns the session (!= worker when forwarded)
};

// Where a Responder's answer goes: the server's worker (tests may supply their own sink).
class ReplySink {
 public:
  // `home_worker`: the worker owning the session, or Responder::kThisWorker.
  virtual void send_reply(uint64_t session, uint32_t home_worker, const wire::RpcHeader& request,
                          StatusCode code, const void* payload, size_t bytes) = 0;

 protected:
  ~ReplySink() = default;
};

// Answers one request exactly once (move-only). Used on the thread of the worker serving the
// request; the sink routes the answer to the session's own worker if that is another one.
class Responder {
 public:
  static constexpr uint32_t kThisWorker = UINT32_MAX;
  // A null sink answers nowhere (the answer is dropped).
  Responder(ReplySink* sink, uint64_t session, const wire::RpcHeader& header,
            uint32_t home_worker = kThisWorker)
      : worker_(sink), session_(session), header_(header), home_(home_worker) {}
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
  const wire::RpcHeader& header() const { return header_; }

 private:
  friend class ServerWorker;  // forwarding moves the duty to answer to another worker
  ReplySink* worker_;
  uint64_t session_;
  wire::RpcHeader header_;
  uint32_t home_;
};

// What the server's worker offers its services (implemented by the server's worker; see
// WorkerContext for the contract).
class WorkerHost {
 public:
  virtual void forward(uint32_t service, uint32_t target_worker, Request&& request,
                       Responder&& responder) = 0;
  virtual Status watch_fd(int fd) = 0;
  virtual void unwatch_fd(int fd) = 0;

 protected:
  ~WorkerHost() = default;
};

// What a ServiceWorker may use on its worker thread (copyable; valid while the server runs).
struct WorkerContext {
  NodeState* node = nullptr;
  uint32_t worker_index = 0;
  uint32_t worker_count = 1;
  uint32_t service_index = 0;  // the service's place in the registry (forwarding uses it)
  WorkerHost* host = nullptr;  // null in tests without a server: no forwarding, no watching

  // Hands `request` to this service's ServiceWorker on `target_worker` (!= worker_index), whose
  // handle() runs it on that worker's thread with request.worker = target_worker; its answer
  // travels back through the session's worker. Never blocks: when the target's queue is full
  // (4096 requests or 16 MiB) the request is answered kResourceExhausted at once; a bad target
  // (or no host) is answered kInternal.
  void forward(uint32_t target_worker, Request request, Responder responder) const;
  // While `fd` is watched, the worker wakes (from its epoll sleep) when it becomes readable and
  // counts it as work, so the services' poll() runs promptly; poll() must drain it (the
  // watch is level-triggered). unwatch_fd before closing the fd.
  Status watch_fd(int fd) const;
  void unwatch_fd(int fd) const;
  // The worker's clock (farmem::now_ns(), virtual in tests) and the node's configuration.
  uint64_t now_ns() const;
  const ServerConfig& config() const { return node->config; }
};

class ServiceWorker {
 public:
  virtual ~ServiceWorker() = default;
  virtual void handle(Request& request, Responder responder) = 0;
  virtual void on_session_end(uint64_t session) {}
  virtual void poll(uint64_t now_ns) {}
  // The earliest time (now_ns() clock) poll() wants to run even if nothing else happens, or 0
  // for none. A sleeping worker wakes for it (with millisecond resolution).
  virtual uint64_t wake_at_ns() const { return 0; }
};

class Service {
 public:
  virtual ~Service() = default;
  virtual std::string_view name() const = 0;
  // The service's RPC opcodes; 0 and 0 for a service without RPCs (procedures only).
  virtual uint16_t first_opcode() const = 0;
  virtual uint16_t last_opcode() const = 0;
  // The procedures kCall operations may run (memnode/procedure.h), added to the node's table
  // when the server is created; ids must not collide with another service's.
  virtual std::vector<Procedure> procedures() const { return {}; }
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
