// Cluster: a compute process's connection to a set of memory nodes.
//
// connect() creates the UCX context, connects the calling thread to every memory node through
// its door (NodeSession: cluster key, versioned handshake, node id, exported region, remote
// key) and checks that node ids are unique. thread_client() gives each thread its own ThreadClient
// (own worker and endpoints), created and connected on first use from that thread.
//
// Named roots live on the node chosen by hashing the name (XXH3) over the sorted node ids, so
// every client that lists the same nodes finds the same root.
//
// Nodes known to be down (ClientOptions::down_nodes, "host:port=ID") are not connected: they
// stay in nodes() and in the sorted ids with the id given (roots and placements do not move),
// and every operation addressed to them fails at once with kUnavailable (down_status()).
// Thread safety: thread_client(), release_thread_client() and the const accessors are callable
// from any thread; destroy the Cluster after the threads that used it are done with it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "farmem/client/cluster_config.h"
#include "farmem/client/thread_client.h"
#include "farmem/common/result.h"
#include "farmem/fabric/context.h"

namespace farmem::client {

struct NodeInfo {
  uint16_t node_id = 0;
  HostPort address;
  uint64_t region_bytes = 0;
  uint16_t worker_count = 0;  // 0 until the first thread connected
  bool durable = false;       // keeps its data across restarts (set with worker_count)
  bool down = false;          // named in ClientOptions::down_nodes: never connected
};

class Cluster {
 public:
  static Result<std::unique_ptr<Cluster>> connect(const ClusterConfig& config);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // The calling thread's client, connecting it on first use.
  Result<ThreadClient*> thread_client();
  // Destroys the calling thread's client on this thread (closes its endpoints, detaches its
  // worker from the thread's scheduler). Threads that outlive their use of the cluster call it;
  // the Cluster destructor destroys the remaining clients, so it must run only once no other
  // thread is using the cluster.
  void release_thread_client();
  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  // Whether `node` keeps its data across restarts (known once a thread connected to it).
  bool durable(uint16_t node) const {
    for (const NodeInfo& n : nodes_) {
      if (n.node_id == node) return n.durable;
    }
    return false;
  }
  const ClusterConfig& config() const { return config_; }
  fabric::Context& context() { return *context_; }
  // Node that stores the root `name`.
  uint16_t root_node(std::string_view name) const;
  // Whether `node` is named down (ClientOptions::down_nodes).
  bool is_down(uint16_t node) const { return node < down_.size() && down_[node]; }
  // The kUnavailable status of operations addressed to a down node.
  Status down_status(uint16_t node) const;
  // Milliseconds connect() took (context, endpoints, handshakes).
  double connect_ms() const { return connect_ms_; }
  // Transports UCX chose for the first thread's endpoints, e.g. "posix/memory,cma/memory".
  std::string transports() const { return transports_; }

 private:
  explicit Cluster(const ClusterConfig& config) : config_(config) {}

  ClusterConfig config_;
  std::unique_ptr<fabric::Context> context_;
  std::vector<NodeInfo> nodes_;  // in config order
  std::vector<uint16_t> sorted_ids_;
  std::vector<bool> down_;  // by node id
  std::mutex mu_;
  std::map<std::thread::id, std::unique_ptr<ThreadClient>> clients_;
  uint32_t next_index_ = 0;
  double connect_ms_ = 0;
  std::string transports_;
};

}  // namespace farmem::client
