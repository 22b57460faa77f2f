// Context: the process-wide UCX context (ucp_context_h).
//
// One per process per role. Features: RMA, 64-bit atomics, active messages and wake-up.
// Workers created from it may live on different threads (mt_workers_shared). The transport is
// chosen by UCX's own environment (UCX_TLS, UCX_NET_DEVICES) unless ContextOptions::tls is set.
// Thread safety: create/destroy on one thread; handle() may be read from any thread.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>

#include "farmem/common/result.h"

namespace farmem::fabric {

struct ContextOptions {
  // Overrides UCX_TLS for this context when non-empty (e.g. "tcp", "posix,sysv,cma,self").
  std::string tls;
  // Overrides UCX_NET_DEVICES when non-empty (e.g. "veth0", "mlx5_0:1").
  std::string net_devices;
  // UCX keepalive interval used to detect dead peers, unless UCX_KEEPALIVE_INTERVAL is set.
  uint32_t keepalive_interval_ms = 1000;
};

class Context {
 public:
  static Result<std::unique_ptr<Context>> create(const ContextOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ucp_context_h handle() const { return context_; }

 private:
  explicit Context(ucp_context_h c) : context_(c) {}
  ucp_context_h context_;
};

}  // namespace farmem::fabric
