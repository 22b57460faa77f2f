// ClusterConfig: which memory nodes a compute process uses and how its client behaves.
//
//   [[memnode]]
//   address = "127.0.0.1:7000"     # host:port of the node's worker 0 (one table per node)
//
//   [client]                        # every key optional
//   op_timeout_ms = 5000            # deadline of every one-sided operation and RPC
//   connect_timeout_ms = 5000       # deadline of connection + handshake
//   max_coroutines = 4096           # per thread
//   max_inflight = 16384            # operations in flight per thread
//   throttle = "off"                # off | fixed | adaptive (work-request throttling)
//   throttle_cap = 16               # cap for "fixed"
//   backoff = true                  # conflict-avoidance backoff in CAS retry loops
//   chunk_bytes = "1MiB"            # chunk taken from a node to carve small objects
//   direct_access = true            # on shared memory, one-sided ops are CPU loads, stores and
//                                   # atomics on UCX's mapping of the node's region (ucp_rkey_ptr)
//                                   # instead of UCX calls; false always posts through UCX
//   one_sided = "auto"              # auto | ucx | served: how one-sided operations travel; auto
//                                   # = served by the node (one RPC per batch) where UCX has no
//                                   # native one-sided transport to it (TCP), else UCX
//   served_in_flight = 8            # served kMemOps messages in flight per node and thread; the
//                                   # operations of a round share one (client/served_lane.h)
//   cluster_key_file = ""           # file with the cluster key (else FARMEM_CLUSTER_KEY)
//   tls = ""                        # overrides UCX_TLS for this client when set
//   net_devices = ""                # overrides UCX_NET_DEVICES for this client when set
//   down_nodes = ""                 # "host:port=ID,...": listed memory nodes known to be down
//                                   # (dead): not connected; they keep their id (so named roots
//                                   # and placements stay where they were) and every operation
//                                   # addressed to them fails at once with kUnavailable
//
// Unknown keys are errors. Thread safety: a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/common/units.h"
#include "farmem/runtime/throttle.h"

namespace farmem::client {

enum class OneSidedPath : uint8_t { kAuto, kUcx, kServed };

// A listed memory node known to be down, with the node id it had.
struct DownNode {
  HostPort address;
  uint16_t node_id = 0;
};

struct ClientOptions {
  uint32_t op_timeout_ms = 5000;
  uint32_t connect_timeout_ms = 5000;
  uint32_t max_coroutines = 4096;
  uint32_t max_inflight = 16384;
  runtime::ThrottleMode throttle = runtime::ThrottleMode::kOff;
  uint32_t throttle_cap = 16;
  bool backoff = true;
  uint64_t chunk_bytes = 1ull << 20;
  bool direct_access = true;
  OneSidedPath one_sided = OneSidedPath::kAuto;
  uint32_t served_in_flight = 8;
  std::string cluster_key_file;
  std::string cluster_key;  // loaded by ClusterConfig::load_cluster_key(), never logged
  std::string tls;
  std::string net_devices;
  std::vector<DownNode> down_nodes;  // each also listed in ClusterConfig::memnodes
};

Result<OneSidedPath> parse_one_sided(std::string_view text);
// "host:port=ID[,host:port=ID...]" ("" = none).
Result<std::vector<DownNode>> parse_down_nodes(std::string_view text);

struct ClusterConfig {
  std::vector<HostPort> memnodes;
  ClientOptions options;

  Status validate() const;
  // Fills options.cluster_key from cluster_key_file, else FARMEM_CLUSTER_KEY (if set).
  Status load_cluster_key();
  static Result<ClusterConfig> from_toml_file(const std::string& path);
  static Result<ClusterConfig> from_toml_string(const std::string& text);
  // "host:port,host:port"
  static Result<ClusterConfig> from_server_list(const std::string& list);
};

}  // namespace farmem::client
