// ServerConfig: what a memory node needs to start, read from TOML (README "Configuration").
//
//   [memnode]
//   node_id = 0            # unique in the cluster, 0..65535
//   listen = "0.0.0.0"     # address to listen on
//   port = 7000            # worker i listens on port + i; 0 picks free ports
//   capacity = "1GiB"      # exported bytes (64KiB .. 256TiB)
//   workers = 1            # progress threads, 1..16
//   idle_spin_us = 200     # busy-poll this long after the last event before sleeping
//   tls = ""               # overrides UCX_TLS for this node
//   net_devices = ""       # overrides UCX_NET_DEVICES for this node
//
// Unknown keys are errors (a typo must not silently fall back to a default).
// Thread safety: a plain value.
#pragma once

#include <cstdint>
#include <string>

#include "farmem/common/result.h"

namespace farmem::memnode {

struct ServerConfig {
  uint16_t node_id = 0;
  std::string listen = "0.0.0.0";
  uint16_t port = 7000;
  uint64_t capacity_bytes = 1ull << 30;
  uint32_t workers = 1;
  uint32_t idle_spin_us = 200;
  // Transport override for this node (empty: UCX_TLS from the environment).
  std::string tls;
  // Network device override for this node (empty: UCX_NET_DEVICES from the environment).
  std::string net_devices;

  Status validate() const;
  static Result<ServerConfig> from_toml_file(const std::string& path);
  static Result<ServerConfig> from_toml_string(const std::string& text);
};

}  // namespace farmem::memnode
