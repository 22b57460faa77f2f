// farmem-server: runs one memory node with its services (the key-value service, kv/service.h).
//
//   farmem-server --config memnode.toml
//   farmem-server --port 7000 --capacity 1GiB --node-id 0 [--listen 10.0.0.11]
//   farmem-server --data-dir /var/lib/farmem/0 [--durability process|power]   (durable node)
//
// The config file's [memnode] table configures the node, its [kv] table the kv service.
// Flags override the config file. The node listens on 127.0.0.1 unless --listen (or the
// config's `listen`) says otherwise. The cluster key comes from --cluster-key-file or
// FARMEM_CLUSTER_KEY, never from the command line. SIGTERM/SIGINT stop it cleanly (exit 0).
// --port-file writes the bound port once the node is ready (used by `farmem` and the tests).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "farmem/common/guarded_main.h"
#include "farmem/common/log.h"
#include "farmem/common/units.h"
#include "farmem/ds/service.h"
#include "farmem/far/service.h"
#include "farmem/kv/service.h"
#include "farmem/memnode/serve.h"
#include "farmem/memnode/server.h"
#include "farmem/paged/service.h"

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "farmem-server: %s\n", msg.c_str());
  return 2;
}

struct Flags {
  std::string config_path, capacity, listen, port_file, tls, net_devices, cluster_key_file;
  std::string preload_dir, data_dir, durability, checkpoint_log, sync_trace, region_file;
  std::optional<uint32_t> node_id, port, workers, idle_spin_us, max_sessions, door_timeout_ms;
  std::optional<uint32_t> kv_record_grace_ms;
  bool simulate_power_loss = false;
};

// Applies the flags given on the command line over the config (file or defaults).
farmem::Status apply(const Flags& f, farmem::memnode::ServerConfig* c) {
  if (f.node_id) c->node_id = static_cast<uint16_t>(*f.node_id);
  if (f.port) c->port = static_cast<uint16_t>(*f.port);
  if (f.workers) c->workers = *f.workers;
  if (f.idle_spin_us) c->idle_spin_us = *f.idle_spin_us;
  if (f.max_sessions) c->max_sessions = *f.max_sessions;
  if (f.door_timeout_ms) c->door_timeout_ms = *f.door_timeout_ms;
  if (!f.listen.empty()) c->listen = f.listen;
  if (!f.tls.empty()) c->tls = f.tls;
  if (!f.net_devices.empty()) c->net_devices = f.net_devices;
  if (!f.cluster_key_file.empty()) c->cluster_key_file = f.cluster_key_file;
  if (!f.preload_dir.empty()) c->preload_dir = f.preload_dir;
  if (!f.data_dir.empty() || !f.durability.empty()) {
    FARMEM_TRY(c->set_data_dir(f.data_dir.empty() ? c->data_dir : f.data_dir, f.durability));
  }
  if (f.simulate_power_loss) {
    if (c->data_dir.empty())
      return farmem::InvalidArgument("--simulate-power-loss needs --data-dir");
    c->simulate_power_loss = true;
  }
  if (!f.sync_trace.empty()) {
    if (!c->simulate_power_loss)
      return farmem::InvalidArgument("--sync-trace needs --simulate-power-loss");
    c->sync_trace = f.sync_trace;
  }
  if (!f.region_file.empty()) c->region_file = f.region_file;
  if (!f.checkpoint_log.empty()) {
    auto b = farmem::parse_bytes(f.checkpoint_log);
    if (!b.ok()) {
      return farmem::InvalidArgument("--checkpoint-log: " + std::string(b.status().message()));
    }
    c->checkpoint_log_bytes = *b;
  }
  if (!f.capacity.empty()) {
    auto b = farmem::parse_bytes(f.capacity);
    if (!b.ok()) return farmem::InvalidArgument("--capacity: " + std::string(b.status().message()));
    c->capacity_bytes = *b;
  }
  return c->validate();
}

// Declares the command line's options, each bound to a field of *f.
void add_options(CLI::App& app, Flags& f) {
  app.add_option("--config,-c", f.config_path, "TOML config file ([memnode] table)");
  app.add_option("--node-id", f.node_id, "node id, unique in the cluster (0..65535)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--listen", f.listen, "address of the door (default 127.0.0.1; 0.0.0.0 = all)");
  app.add_option("--port,-p", f.port, "the door's TCP port (0 = any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--capacity", f.capacity, "exported bytes, e.g. 1GiB");
  app.add_option("--workers", f.workers, "progress threads (1..16)")->check(CLI::Range(1, 16));
  app.add_option("--idle-spin-us", f.idle_spin_us, "busy-poll time before sleeping (0..10000000)")
      ->check(CLI::Range(0, 10'000'000));
  app.add_option("--max-sessions", f.max_sessions, "client sessions at once (1..65536)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--door-timeout-ms", f.door_timeout_ms, "hello deadline (10..60000)")
      ->check(CLI::Range(10, 60'000));
  app.add_option("--cluster-key-file", f.cluster_key_file,
                 "file holding the cluster key clients must present (or FARMEM_CLUSTER_KEY)");
  app.add_option("--port-file", f.port_file, "write the bound port here when ready");
  app.add_option("--tls", f.tls, "UCX transports for this node (overrides UCX_TLS)");
  app.add_option("--net-devices", f.net_devices,
                 "UCX network devices (default: the device of --listen)");
  app.add_option("--preload-dir", f.preload_dir,
                 "absolute directory paged regions may preload files from (default: refused)");
  app.add_option("--data-dir", f.data_dir,
                 "keep the node's data in this directory across restarts (default: volatile)");
  app.add_option("--durability", f.durability,
                 "with --data-dir: process (outlives kill -9) or power (synced first; default)");
  app.add_option("--checkpoint-log", f.checkpoint_log,
                 "checkpoint once the log holds this much, e.g. 256MiB (default)");
  app.add_flag("--simulate-power-loss", f.simulate_power_loss,
               "tests: the data directory takes writes only at sync, so kill -9 loses what a "
               "power loss could");
  app.add_option("--sync-trace", f.sync_trace,
                 "tests, with --simulate-power-loss: record every sync in this file");
  app.add_option("--region-file", f.region_file,
                 "measurement only: export a MAP_SHARED mapping of this file registered with UCX "
                 "instead of memory UCX allocates (no direct loads over shared memory)");
  app.add_option("--kv-record-grace-ms", f.kv_record_grace_ms,
                 "kv: reuse a dead record's memory after this long (0..3600000)")
      ->check(CLI::Range(0, 3'600'000));
}

int run(int argc, char** argv) {
  farmem::log::init_from_env();
  CLI::App app{"farmem memory node"};
  Flags f;
  add_options(app, f);
  CLI11_PARSE(app, argc, argv);

  farmem::memnode::ServerConfig config;
  farmem::kv::KvServiceOptions kv_options;
  if (!f.config_path.empty()) {
    auto c = farmem::memnode::ServerConfig::from_toml_file(f.config_path, {"kv"});
    if (!c.ok()) return fail(c.status().to_string());
    config = *c;
    auto kv = farmem::kv::KvServiceOptions::from_toml_file(f.config_path);
    if (!kv.ok()) return fail(kv.status().to_string());
    kv_options = *kv;
  }
  if (f.kv_record_grace_ms) kv_options.record_grace_ms = *f.kv_record_grace_ms;
  if (auto s = apply(f, &config); !s.ok()) return fail(s.to_string());
  if (auto s = config.load_cluster_key(); !s.ok()) return fail(s.to_string());
  if (!f.port_file.empty()) {
    auto dir = std::filesystem::path(f.port_file).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir)) {
      return fail(fmt::format("--port-file: directory {} does not exist", dir.string()));
    }
  }

  std::vector<std::shared_ptr<farmem::memnode::Service>> services;
  services.push_back(farmem::kv::make_kv_service(std::move(kv_options)));
  services.push_back(farmem::far::make_far_service());      // far containers' remote compute
  services.push_back(farmem::paged::make_paged_service());  // paged regions' file preload
  services.push_back(farmem::ds::make_ds_service());        // the structures' served procedures
  auto server = farmem::memnode::Server::create(config, std::move(services));
  if (!server.ok()) return fail(server.status().to_string());
  farmem::Status st =
      farmem::memnode::serve_until_signalled(server->get(), f.port_file, [&](uint16_t port) {
        std::printf(
            "farmem-server: node %u listening on %s:%u, capacity %llu bytes, %u worker(s)%s\n",
            config.node_id, config.listen.c_str(), port,
            static_cast<unsigned long long>(config.capacity_bytes), config.workers,
            config.cluster_key.empty() ? "" : ", cluster key required");
      });
  server->reset();
  std::printf("farmem-server: node %u stopped\n", config.node_id);
  return st.ok() ? 0 : fail(st.to_string());
}

}  // namespace

int main(int argc, char** argv) {
  return farmem::guarded_main("farmem-server", [&] { return run(argc, argv); });
}
