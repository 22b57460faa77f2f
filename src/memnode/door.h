// Door: the memory node's front door, a TCP listener of its own in front of UCX
// (docs/formats/door.md).
//
// One thread accepts connections and reads each client's DoorHello with a deadline
// (door_timeout_ms) and hard size bounds; it checks magic, version, lengths, reserved fields
// and the cluster key, and the session cap; then it hands the connection to a worker
// (hint modulo workers), which opens the session. Anything else is closed at once: junk,
// half-open connections, slow writers, wrong keys (with a refusal message and one log line per
// kind of refusal), too many sessions. At most kMaxPending handshakes are read at once; more
// wait in the kernel's backlog. SO_REUSEADDR lets a restarted node bind its port at once.
//
// Thread safety: open() on the starting thread; run() on the door's own thread until the
// node's stop fd fires; port() from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/fabric/door.h"
#include "farmem/memnode/node_state.h"
#include "server_worker.h"

namespace farmem::memnode {

class Door {
 public:
  static constexpr size_t kMaxPending = 128;
  static constexpr int kBacklog = 1024;

  static Result<std::unique_ptr<Door>> open(NodeState& node, std::vector<ServerWorker*> workers,
                                            int stop_fd);
  ~Door();
  Door(const Door&) = delete;
  Door& operator=(const Door&) = delete;
  uint16_t port() const { return port_; }
  void run();

 private:
  struct Pending {
    int fd = -1;
    std::string peer;
    uint64_t deadline_ns = 0;
    std::string buffer;  // bytes read so far
    size_t want = sizeof(wire::DoorHello);
    wire::DoorHello hello{};
  };
  // Refusal kinds, each logged once (then only counted).
  enum class Refusal { kJunk, kVersion, kKey, kFull, kTimeout, kClosed, kCount };

  Door(NodeState& node, std::vector<ServerWorker*> workers)
      : node_(node), workers_(std::move(workers)) {}
  void accept_all();
  void on_readable(int fd);
  void expire(uint64_t now);
  // Closes a pending connection, after sending a refusal when `send_message`.
  void refuse(int fd, Refusal kind, const Status& why, bool send_message);
  void admit(Pending& p);
  void drop(int fd);
  int wait_ms(uint64_t now) const;

  NodeState& node_;
  std::vector<ServerWorker*> workers_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  uint16_t port_ = 0;
  bool accepting_ = true;
  std::unordered_map<int, Pending> pending_;
  std::array<bool, static_cast<size_t>(Refusal::kCount)> logged_{};
};

}  // namespace farmem::memnode
