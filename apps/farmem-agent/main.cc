// farmem-agent: the offload agent (agent/agent.h). Host processes send it page reads and
// writes; it aggregates, caches and forwards them to the memory nodes.
//
//   farmem-agent --servers 127.0.0.1:7000,127.0.0.1:7001 [--port 7100] [--port-file F]
//                [--cache-bytes 256MiB] [--entry-bytes 1MiB] [--static-bytes 1GiB]
//                [--no-aggregation] [--sync-writeback] [--no-static] [--no-dynamic]
//                [--no-adaptive] [--prefetch-workers 1] [--cost-weight 0.5]
//
// --servers lists the memory nodes (or --config, a cluster TOML file as `farmem` reads).
// The agent listens like a memory node (127.0.0.1 unless --listen), with node id --node-id
// (default 60000) and a small exported region. SIGTERM/SIGINT stop it (exit 0); bad flags or
// unreachable memory nodes exit 2 with a message.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "farmem/agent/agent.h"
#include "farmem/client/cluster_config.h"
#include "farmem/common/guarded_main.h"
#include "farmem/common/log.h"
#include "farmem/common/units.h"
#include "farmem/memnode/serve.h"
#include "farmem/memnode/server.h"

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "farmem-agent: %s\n", msg.c_str());
  return 2;
}

struct Flags {
  std::string servers, cluster_config, listen = "127.0.0.1", port_file, tls, node_net_devices;
  uint32_t port = 0, node_id = 60000, workers = 1;
  std::string cache_bytes, entry_bytes, static_bytes, page_bytes;
  bool no_aggregation = false, sync_writeback = false, no_static = false, no_dynamic = false,
       no_adaptive = false;
  std::optional<uint32_t> prefetch_workers, op_timeout_ms, model_window, idle_spin_us;
  std::optional<double> cost_weight;
};

farmem::Status parse_size(const std::string& text, const char* flag, uint64_t* out) {
  if (text.empty()) return farmem::OkStatus();
  auto b = farmem::parse_bytes(text);
  if (!b.ok()) return farmem::InvalidArgument(fmt::format("{}: {}", flag, b.status().message()));
  *out = *b;
  return farmem::OkStatus();
}

farmem::Status to_options(const Flags& f, farmem::agent::AgentOptions* o) {
  FARMEM_TRY(parse_size(f.cache_bytes, "--cache-bytes", &o->cache_bytes));
  FARMEM_TRY(parse_size(f.entry_bytes, "--entry-bytes", &o->entry_bytes));
  FARMEM_TRY(parse_size(f.static_bytes, "--static-bytes", &o->static_bytes));
  FARMEM_TRY(parse_size(f.page_bytes, "--page-bytes", &o->page_bytes));
  o->aggregation = !f.no_aggregation;
  o->async_writeback = !f.sync_writeback;
  o->static_cache = !f.no_static;
  o->dynamic_cache = !f.no_dynamic;
  o->adaptive = !f.no_adaptive;
  if (f.prefetch_workers) o->prefetch_workers = *f.prefetch_workers;
  if (f.op_timeout_ms) o->op_timeout_ms = *f.op_timeout_ms;
  if (f.model_window) o->model_window = *f.model_window;
  if (f.cost_weight) o->cost_weight = *f.cost_weight;
  return o->validate();
}

int run(int argc, char** argv) {
  farmem::log::init_from_env();
  CLI::App app{"farmem offload agent"};
  Flags f;
  app.add_option("--servers", f.servers, "memory nodes, host:port,host:port");
  app.add_option("--config", f.cluster_config, "cluster TOML file listing the memory nodes");
  app.add_option("--listen", f.listen, "address of the agent's door (default 127.0.0.1)");
  app.add_option("--port,-p", f.port, "the door's TCP port (0 = any)")->check(CLI::Range(0, 65535));
  app.add_option("--port-file", f.port_file, "write the bound port here when ready");
  app.add_option("--node-id", f.node_id, "the agent's id as hosts see it")
      ->check(CLI::Range(0, 65535));
  app.add_option("--workers", f.workers, "progress threads serving hosts (1..16)")
      ->check(CLI::Range(1, 16));
  app.add_option("--tls", f.tls, "UCX transports (overrides UCX_TLS)");
  app.add_option("--node-net-devices", f.node_net_devices,
                 "UCX network devices towards the memory nodes (the hosts' side follows --listen)");
  app.add_option("--idle-spin-us", f.idle_spin_us, "host-facing workers' busy-poll before sleeping")
      ->check(CLI::Range(0, 10'000'000));
  app.add_option("--cache-bytes", f.cache_bytes, "dynamic cache budget (default 256MiB)");
  app.add_option("--entry-bytes", f.entry_bytes, "cache entry size (default 1MiB)");
  app.add_option("--static-bytes", f.static_bytes, "static cache budget (default 1GiB)");
  app.add_option("--page-bytes", f.page_bytes, "page id unit of the access ring (default 64KiB)");
  app.add_flag("--no-aggregation", f.no_aggregation, "one memory-node Batch per request");
  app.add_flag("--sync-writeback", f.sync_writeback, "ack writes once at the memory node");
  app.add_flag("--no-static", f.no_static, "refuse static pinning");
  app.add_flag("--no-dynamic", f.no_dynamic, "no dynamic caching");
  app.add_flag("--no-adaptive", f.no_adaptive, "never switch dynamic caching off");
  app.add_option("--prefetch-workers", f.prefetch_workers, "staging threads (1..8)");
  app.add_option("--op-timeout-ms", f.op_timeout_ms, "deadline of memory-node operations");
  app.add_option("--model-window", f.model_window, "lookups per adaptive decision (>= 16)");
  app.add_option("--cost-weight", f.cost_weight, "adaptive model: weight of staged bytes");
  CLI11_PARSE(app, argc, argv);

  farmem::agent::AgentOptions options;
  if (auto s = to_options(f, &options); !s.ok()) return fail(s.to_string());
  farmem::Result<farmem::client::ClusterConfig> nodes =
      !f.cluster_config.empty() ? farmem::client::ClusterConfig::from_toml_file(f.cluster_config)
                                : farmem::client::ClusterConfig::from_server_list(f.servers);
  if (!nodes.ok()) return fail("memory nodes: " + nodes.status().to_string());
  if (!f.tls.empty()) nodes->options.tls = f.tls;
  if (!f.node_net_devices.empty()) nodes->options.net_devices = f.node_net_devices;
  nodes->options.op_timeout_ms = options.op_timeout_ms;
  if (auto s = nodes->load_cluster_key(); !s.ok()) return fail(s.to_string());

  farmem::memnode::ServerConfig config;
  config.node_id = static_cast<uint16_t>(f.node_id);
  config.port = static_cast<uint16_t>(f.port);
  config.listen = f.listen;
  config.workers = f.workers;
  if (f.idle_spin_us) config.idle_spin_us = *f.idle_spin_us;
  config.capacity_bytes = 4ull << 20;  // hosts use RPCs only; the region is a formality
  if (!f.tls.empty()) config.tls = f.tls;
  config.cluster_key = nodes->options.cluster_key;
  if (auto s = config.validate(); !s.ok()) return fail(s.to_string());

  auto agent = farmem::agent::Agent::create(options, *nodes);
  if (!agent.ok()) return fail("cannot start: " + agent.status().to_string());
  auto server = farmem::memnode::Server::create(config, {(*agent)->service()});
  if (!server.ok()) return fail(server.status().to_string());
  farmem::Status st =
      farmem::memnode::serve_until_signalled(server->get(), f.port_file, [&](uint16_t port) {
        std::printf(
            "farmem-agent: listening on %s:%u for %zu memory node(s); aggregation %s, "
            "write-back %s, static cache %s, dynamic cache %s (entry %llu bytes, budget %llu)\n",
            f.listen.c_str(), port, nodes->memnodes.size(), options.aggregation ? "on" : "off",
            options.async_writeback ? "async" : "sync", options.static_cache ? "on" : "off",
            options.dynamic_cache ? (options.adaptive ? "adaptive" : "on") : "off",
            static_cast<unsigned long long>(options.entry_bytes),
            static_cast<unsigned long long>(options.cache_bytes));
      });
  server->reset();
  agent->reset();
  std::printf("farmem-agent: stopped\n");
  return st.ok() ? 0 : fail(st.to_string());
}

}  // namespace

int main(int argc, char** argv) {
  return farmem::guarded_main("farmem-agent", [&] { return run(argc, argv); });
}
