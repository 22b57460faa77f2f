// ServerConfig: what a memory node needs to start, read from TOML (README "Configuration").
//
//   [memnode]
//   node_id = 0            # unique in the cluster, 0..65535
//   listen = "127.0.0.1"   # address of the door; "0.0.0.0" for every interface
//   port = 7000            # the door's TCP port; 0 picks a free one
//   capacity = "1GiB"      # exported bytes (64KiB .. 256TiB, and what the machine can back)
//   workers = 1            # progress threads, 1..16
//   idle_spin_us = 200     # busy-poll this long after the last event before sleeping
//   max_sessions = 1024    # client sessions (one per client thread), 1..65536
//   door_timeout_ms = 2000 # a connecting client must complete its hello within this
//   cluster_key_file = ""  # file holding the cluster key clients must present (optional)
//   tls = ""               # overrides UCX_TLS for this node
//   net_devices = ""       # overrides UCX_NET_DEVICES; by default the device of `listen`
//   preload_dir = ""       # absolute directory the paged service may load files from
//                          # (paged regions' allocate_from_file); empty = preload refused
//   data_dir = ""          # keeps the node's data across restarts (storage/journal.h); empty =
//                          # volatile, as DRAM is
//   durability = "power"   # with data_dir: "process" (outlives kill -9) or "power" (synced
//                          # before acknowledged; the default)
//   checkpoint_log = "256MiB"  # a checkpoint empties the log once it holds this much
//
// Unknown keys are errors (a typo must not silently fall back to a default), and so are unknown
// sections, except those named in `services`: the tables of the node's services (e.g. [kv]),
// which their own libraries parse. The cluster key
// comes from cluster_key_file or the FARMEM_CLUSTER_KEY environment variable, never from the
// command line (load_cluster_key).
// Thread safety: a plain value.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "farmem/common/result.h"
#include "farmem/storage/durability.h"

namespace farmem::memnode {

struct ServerConfig {
  uint16_t node_id = 0;
  std::string listen = "127.0.0.1";
  uint16_t port = 7000;
  uint64_t capacity_bytes = 1ull << 30;
  uint32_t workers = 1;
  uint32_t idle_spin_us = 200;
  uint32_t max_sessions = 1024;
  uint32_t door_timeout_ms = 2000;
  std::string cluster_key_file;
  std::string cluster_key;  // loaded by load_cluster_key(); empty = no key required
  // Transport override for this node (empty: UCX_TLS from the environment).
  std::string tls;
  // Network device override for this node (empty: UCX_NET_DEVICES from the environment).
  std::string net_devices;
  // The only directory file preloads (the paged service) may read from; empty = refused.
  std::string preload_dir;
  // The data directory of a durable node; empty: volatile.
  std::string data_dir;
  // kVolatile without data_dir; with it kPower unless "process" is asked for.
  storage::Durability durability = storage::Durability::kVolatile;
  uint64_t checkpoint_log_bytes = 256ull << 20;
  // Tests: the data directory's files take writes only at sync (storage/sync_only_disk.h), so a
  // kill -9 loses what a power loss could. Not in TOML.
  bool simulate_power_loss = false;
  // Tests, with simulate_power_loss: every sync is also recorded in this file
  // (storage/sync_trace.h), to rebuild the directory at each sync boundary. Not in TOML.
  std::string sync_trace;
  // Measurement only: the region is a MAP_SHARED mapping of this file registered with UCX
  // (fabric::MemoryRegion::map_file) instead of memory UCX allocates, to measure what a
  // file-backed region costs each transport (docs/ARCHITECTURE.md "Durability and the fast
  // path"). Not a durability mode (nothing is recovered from it); volatile nodes only. Not in TOML.
  std::string region_file;

  // Sets data_dir and, unless `durability` names one, the default level (power).
  Status set_data_dir(const std::string& dir, const std::string& durability = "");
  Status validate() const;
  // Fills cluster_key from cluster_key_file, else from FARMEM_CLUSTER_KEY (trailing newline
  // removed). A named file that cannot be read, or an empty key, is an error.
  Status load_cluster_key();
  static Result<ServerConfig> from_toml_file(const std::string& path,
                                             const std::set<std::string>& services = {});
  static Result<ServerConfig> from_toml_string(const std::string& text,
                                               const std::set<std::string>& services = {});
};

}  // namespace farmem::memnode
