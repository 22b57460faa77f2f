// Listener: a UCX listener on host:port that hands connection requests to a callback.
// Port 0 picks a free port; port() reports the one bound.
// Thread safety: owned by the worker's thread; the callback runs inside Worker::progress().
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "farmem/common/result.h"
#include "farmem/fabric/worker.h"

namespace farmem::fabric {

class Listener {
 public:
  using OnConnect = std::function<void(ucp_conn_request_h)>;
  static Result<std::unique_ptr<Listener>> listen(Worker& worker, const std::string& host,
                                                  uint16_t port, OnConnect on_connect);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  uint16_t port() const { return port_; }

 private:
  Listener() = default;
  static void on_request(ucp_conn_request_h request, void* arg);
  ucp_listener_h listener_ = nullptr;
  uint16_t port_ = 0;
  OnConnect on_connect_;
};

}  // namespace farmem::fabric
