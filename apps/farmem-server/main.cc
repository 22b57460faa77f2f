// farmem-server: runs one memory node.
//
//   farmem-server --config memnode.toml
//   farmem-server --port 7000 --capacity 1GiB --node-id 0
//
// Flags override the config file. SIGTERM/SIGINT stop it cleanly. --port-file writes the bound
// port of worker 0 once the node is ready (used by `farmem` to embed a local node).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "farmem/common/log.h"
#include "farmem/common/units.h"
#include "farmem/memnode/server.h"

namespace {

farmem::memnode::Server* g_server = nullptr;

void on_signal(int) {
  if (g_server != nullptr) g_server->stop();
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "farmem-server: %s\n", msg.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  farmem::log::init_from_env();
  CLI::App app{"farmem memory node"};
  std::string config_path, capacity, listen, port_file;
  int node_id = -1, port = -1, workers = -1, idle_spin_us = -1;
  app.add_option("--config,-c", config_path, "TOML config file ([memnode] table)");
  app.add_option("--node-id", node_id, "node id, unique in the cluster (0..65535)");
  app.add_option("--listen", listen, "listen address (default 0.0.0.0)");
  app.add_option("--port,-p", port, "listen port of worker 0 (0 = any free port)");
  app.add_option("--capacity", capacity, "exported bytes, e.g. 1GiB");
  app.add_option("--workers", workers, "progress threads (1..16)");
  app.add_option("--idle-spin-us", idle_spin_us, "busy-poll time before sleeping");
  app.add_option("--port-file", port_file, "write the bound port here when ready");
  std::string tls, net_devices;
  app.add_option("--tls", tls, "UCX transports for this node (overrides UCX_TLS)");
  app.add_option("--net-devices", net_devices, "UCX network devices (overrides UCX_NET_DEVICES)");
  CLI11_PARSE(app, argc, argv);

  farmem::memnode::ServerConfig config;
  if (!config_path.empty()) {
    auto c = farmem::memnode::ServerConfig::from_toml_file(config_path);
    if (!c.ok()) return fail(c.status().to_string());
    config = *c;
  }
  if (node_id >= 0) {
    if (node_id > 65535) return fail("--node-id must be 0..65535");
    config.node_id = static_cast<uint16_t>(node_id);
  }
  if (!listen.empty()) config.listen = listen;
  if (!tls.empty()) config.tls = tls;
  if (!net_devices.empty()) config.net_devices = net_devices;
  if (port >= 0) {
    if (port > 65535) return fail("--port must be 0..65535");
    config.port = static_cast<uint16_t>(port);
  }
  if (workers >= 0) config.workers = static_cast<uint32_t>(workers);
  if (idle_spin_us >= 0) config.idle_spin_us = static_cast<uint32_t>(idle_spin_us);
  if (!capacity.empty()) {
    auto b = farmem::parse_bytes(capacity);
    if (!b.ok()) return fail("--capacity: " + std::string(b.status().message()));
    config.capacity_bytes = *b;
  }
  if (auto s = config.validate(); !s.ok()) return fail(s.to_string());

  auto server = farmem::memnode::Server::create(config);
  if (!server.ok()) return fail(server.status().to_string());
  g_server = server->get();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto ports = (*server)->ports();
  std::string port_list;
  for (auto p : ports) port_list += (port_list.empty() ? "" : ",") + std::to_string(p);
  std::printf("farmem-server: node %u listening on %s port(s) %s, capacity %llu bytes, %u worker(s)\n",
              config.node_id, config.listen.c_str(), port_list.c_str(),
              static_cast<unsigned long long>(config.capacity_bytes), config.workers);
  std::fflush(stdout);
  if (!port_file.empty()) {
    std::string tmp = port_file + ".tmp";
    {
      std::ofstream f(tmp);
      f << ports[0] << "\n";
    }
    std::rename(tmp.c_str(), port_file.c_str());
  }
  farmem::Status st = (*server)->run();
  g_server = nullptr;
  server->reset();
  std::printf("farmem-server: node %u stopped\n", config.node_id);
  return st.ok() ? 0 : fail(st.to_string());
}
