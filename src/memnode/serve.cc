#include "farmem/memnode/serve.h"

#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <fstream>

namespace farmem::memnode {

namespace {

std::atomic<Server*> g_server{nullptr};

void on_signal(int) {
  Server* s = g_server.load();
  if (s != nullptr) s->stop();  // stop() is async-signal-safe (a write to an eventfd)
}

}  // namespace

Status write_port_file(const std::string& path, uint16_t port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!(f << port << "\n") || !f.flush()) {
      return InvalidArgument(fmt::format("cannot write the port file {}", path));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return InvalidArgument(fmt::format("cannot write the port file {}", path));
  }
  return OkStatus();
}

Status serve_until_signalled(Server* server, const std::string& port_file,
                             const std::function<void(uint16_t port)>& ready) {
  g_server.store(server);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const uint16_t port = server->port();
  ready(port);
  std::fflush(stdout);
  Status st = port_file.empty() ? OkStatus() : write_port_file(port_file, port);
  if (st.ok()) st = server->run();
  g_server.store(nullptr);
  return st;
}

}  // namespace farmem::memnode
