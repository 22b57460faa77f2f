// NodeSession: one client thread's session with one memory node.
//
// open() goes through the node's door (fabric/door.h): TCP connect, DoorHello with the cluster
// key and this thread's UCX worker address, DoorWelcome with the session id, the node's region
// and remote key and its worker's address; then it creates the UCX endpoint to that worker and
// attaches the region. The door connection stays open for the session's life:
//
//  - check(now) drains it without blocking and sends a heartbeat ping every heartbeat
//    interval. The node closing it (it died: kPeerFailed; it said goodbye: kUnavailable) or not
//    answering a ping for silence_ns (it is stopped or cut off: kPeerFailed) fails the endpoint,
//    so every operation in flight and every later one on that node gets the error at once.
//  - closing it (the destructor) ends the session on the node, which releases the memory the
//    session owned.
// Silence is judged only after draining, so a client thread that did not poll for a while
// (stopped, busy) never mistakes its own pause for the node's.
//
// Thread safety: the owning client thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "farmem/common/result.h"
#include "farmem/common/units.h"
#include "farmem/fabric/endpoint.h"
#include "farmem/fabric/worker.h"

namespace farmem::client {

struct SessionOptions {
  std::string cluster_key;
  uint64_t connect_timeout_ns = 5'000'000'000ull;
  uint64_t heartbeat_ns = 250'000'000ull;  // ping period
  uint64_t silence_ns = 5'000'000'000ull;  // a ping unanswered this long fails the node
  uint16_t worker_hint = 0;                // which node worker to ask for
  uint64_t client_tag = 0;
};

class NodeSession {
 public:
  static Result<std::unique_ptr<NodeSession>> open(fabric::Worker& worker, const HostPort& where,
                                                   const SessionOptions& options);
  ~NodeSession();
  NodeSession(const NodeSession&) = delete;
  NodeSession& operator=(const NodeSession&) = delete;

  fabric::Endpoint* endpoint() const { return ep_.get(); }
  uint64_t id() const { return id_; }
  uint16_t node_id() const { return node_id_; }
  uint16_t worker_count() const { return worker_count_; }
  // Whether the node keeps its data across restarts (its welcome's durability is not volatile).
  bool durable() const { return durable_; }
  const std::string& where() const { return where_; }
  // Cheap when not due (one comparison); see the contract above.
  void check(uint64_t now_ns) {
    if (now_ns >= next_check_ns_) check_now(now_ns);
  }

 private:
  NodeSession() = default;
  void check_now(uint64_t now_ns);
  void lost(Status why);

  int fd_ = -1;
  uint64_t id_ = 0;
  uint16_t node_id_ = 0;
  uint16_t worker_count_ = 0;
  bool durable_ = false;
  std::string where_;
  std::unique_ptr<fabric::Endpoint> ep_;
  SessionOptions options_;
  uint64_t next_check_ns_ = 0;
  uint64_t next_ping_ns_ = 0;
  uint64_t ping_sent_ns_ = 0;  // when the oldest unanswered ping left; 0 = none outstanding
  uint64_t last_ping_ns_ = 0;  // when the newest ping left
  uint32_t ping_seq_ = 0;
  uint8_t rx_[8] = {};
  size_t rx_bytes_ = 0;
};

}  // namespace farmem::client
