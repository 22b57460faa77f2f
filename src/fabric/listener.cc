#include "farmem/fabric/listener.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>

#include <cstring>

#include "farmem/fabric/status_map.h"

namespace farmem::fabric {

Result<std::unique_ptr<Listener>> Listener::listen(Worker& worker, const std::string& host,
                                                   uint16_t port, OnConnect on_connect) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (host.empty() || host == "0.0.0.0" || host == "*") {
    addr.sin_addr.s_addr = INADDR_ANY;
  } else if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
      return InvalidArgument(fmt::format("cannot resolve listen address '{}'", host));
    }
    addr.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
    freeaddrinfo(res);
  }
  std::unique_ptr<Listener> l(new Listener());
  l->on_connect_ = std::move(on_connect);
  ucp_listener_params_t p{};
  p.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  p.sockaddr.addrlen = sizeof(addr);
  p.conn_handler.cb = &Listener::on_request;
  p.conn_handler.arg = l.get();
  ucs_status_t st = ucp_listener_create(worker.handle(), &p, &l->listener_);
  if (st != UCS_OK) {
    return from_ucs(st, fmt::format("listen on {}:{}", host, port));
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = ucp_listener_query(l->listener_, &attr);
  if (st != UCS_OK) return from_ucs(st, "ucp_listener_query");
  l->port_ = ntohs(reinterpret_cast<sockaddr_in*>(&attr.sockaddr)->sin_port);
  return l;
}

Listener::~Listener() {
  if (listener_ != nullptr) ucp_listener_destroy(listener_);
}

void Listener::on_request(ucp_conn_request_h request, void* arg) {
  static_cast<Listener*>(arg)->on_connect_(request);
}

}  // namespace farmem::fabric
