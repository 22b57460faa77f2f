// Server: a memory node. Exports one UCX-allocated region for one-sided access, admits clients
// through its door (a TCP port of its own, fabric/door.h), and serves RPCs of its registered
// services (the core service always; others through the service door, service.h) on `workers`
// progress threads.
//
// Each client thread gets a session: a UCX endpoint pair plus the door connection, which
// carries heartbeats and whose end ends the session. Memory a session allocates for itself
// comes back when the session ends, however it ends; memory of named objects stays until the
// object is destroyed (heap.h, object_table.h).
//
// Each worker's loop busy-polls while there is traffic and, after idle_spin_us without
// events, sleeps on its event fd, so an idle node uses no CPU. stop() (SIGTERM) stops the door,
// answers what is queued, says goodbye to every session and returns from run().
//
// Thread safety: create() and run() on one thread; stop() from any thread or a signal handler.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/fabric/context.h"
#include "farmem/fabric/memory_region.h"
#include "farmem/fabric/wire.h"
#include "farmem/memnode/config.h"
#include "farmem/memnode/node_state.h"
#include "farmem/memnode/service.h"
#include "farmem/storage/data_dir.h"
#include "farmem/storage/journal.h"

namespace farmem::memnode {

// The region header layout and size live in the wire format (fabric/wire.h).
using wire::kRegionHeaderBytes;
using wire::kRegionMagic;
using wire::RegionHeader;

class ServerWorker;
class Door;
class NodeJournal;

class Server {
 public:
  // `services` are registered after the core service (their opcodes must not overlap).
  static Result<std::unique_ptr<Server>> create(
      const ServerConfig& config, std::vector<std::shared_ptr<Service>> services = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until stop(). Worker 0 runs on the calling thread.
  Status run();
  // Async-signal-safe.
  void stop();
  // The door's port (the one clients connect to).
  uint16_t port() const;
  const ServerConfig& config() const { return node_->config; }

 private:
  Server() = default;
  // Opens the data directory and recovers the region and the tables from it.
  Status recover();

  std::unique_ptr<fabric::Context> context_;
  std::unique_ptr<fabric::MemoryRegion> region_;
  std::unique_ptr<NodeState> node_;
  std::unique_ptr<storage::DataDir> data_dir_;  // durable nodes only, as are the two below
  std::unique_ptr<NodeJournal> node_journal_;
  std::unique_ptr<storage::Journal> journal_;
  ServiceRegistry services_;
  std::vector<std::unique_ptr<ServerWorker>> workers_;
  std::unique_ptr<Door> door_;
  int stop_fd_ = -1;
};

// Refuses a capacity this machine cannot back now (compared with MemAvailable).
Status check_capacity(uint64_t capacity_bytes);
// The UCX network device to use for a listen address: "lo" for loopback, the interface that
// holds the address, or "" (all devices) for 0.0.0.0 or an address not found locally.
std::string net_device_for(const std::string& listen);

}  // namespace farmem::memnode
