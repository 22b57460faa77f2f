// LocalNode: a farmem-server child process started for one command run (the embedded default
// cluster) and stopped with SIGTERM when the object dies (or with SIGKILL 5 s later). The child
// inherits the environment, so UCX_TLS and UCX_NET_DEVICES apply to it as to the client, and
// dies with this process (PR_SET_PDEATHSIG).
// Thread safety: one owner; start() blocks until the node listens (20 s at most).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "farmem/common/result.h"

namespace farmem::bench {

class LocalNode {
 public:
  // idle_spin_us < 0: the node's default. preload_dir: the node's --preload-dir ("" = none).
  // durability: "" (volatile) or the node's --durability, with a data directory inside the
  // node's temporary directory (removed with it).
  static Result<std::unique_ptr<LocalNode>> start(uint64_t capacity_bytes, uint32_t workers,
                                                  int64_t idle_spin_us = -1,
                                                  const std::string& preload_dir = "",
                                                  const std::string& durability = "");
  ~LocalNode();
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  LocalNode() = default;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string dir_;
};

// Path of the farmem-server binary: $FARMEM_SERVER, else next to this executable, else PATH.
std::string server_binary();

}  // namespace farmem::bench
