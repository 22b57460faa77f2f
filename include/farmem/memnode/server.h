// Server: a memory node. Exports one UCX-allocated region for one-sided access and serves the
// control RPCs (hello, allocate/free, named roots, stats, echo) on `workers` progress threads.
//
// Each worker thread owns a UCX worker and a listener (worker i on port + i). Its progress
// loop busy-polls while there is traffic (transports such as TCP need the memory node to
// progress for one-sided operations to complete) and, after idle_spin_us without events, arms
// the worker and sleeps on its event fd, so an idle node uses no CPU.
// Allocator and root table are shared by the workers under one mutex (control path only).
//
// Thread safety: create() and run() on one thread; stop() from any thread or a signal handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/fabric/context.h"
#include "farmem/fabric/wire.h"
#include "farmem/fabric/memory_region.h"
#include "farmem/memnode/buddy_allocator.h"
#include "farmem/memnode/config.h"
#include "farmem/memnode/root_table.h"

namespace farmem::memnode {

// The region header layout and size live in the wire format (fabric/wire.h).
using wire::kRegionHeaderBytes;
using wire::kRegionMagic;
using wire::RegionHeader;

class ServerWorker;

class Server {
 public:
  static Result<std::unique_ptr<Server>> create(const ServerConfig& config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until stop(). Worker 0 runs on the calling thread.
  Status run();
  // Async-signal-safe.
  void stop();
  std::vector<uint16_t> ports() const;
  const ServerConfig& config() const { return config_; }

 private:
  friend class ServerWorker;
  explicit Server(const ServerConfig& config);

  // Shared state used by the workers.
  std::mutex mu_;
  BuddyAllocator allocator_;
  RootTable roots_;
  std::atomic<uint64_t> rpcs_served_{0};
  std::atomic<uint64_t> connections_{0};
  std::atomic<bool> stopping_{false};
  uint64_t start_ns_ = 0;
  ServerConfig config_;
  std::unique_ptr<fabric::Context> context_;
  std::unique_ptr<fabric::MemoryRegion> region_;
  std::vector<std::unique_ptr<ServerWorker>> workers_;
  int stop_fd_ = -1;
};

}  // namespace farmem::memnode
