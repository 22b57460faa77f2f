// farmem_agent_host: one host process of the agent tests. Reads [address, address + bytes)
// page by page through the agent, `passes` times, and prints "checksum N" (FNV-1a of the bytes
// of the last pass) and "done", or "error <status>" and exits 1.
// With --servers it instead runs a paged region of `bytes` in agent mode (4-page budget) and
// writes every page over and over, printing "pass N" after each pass (at most `passes`), so a
// test can kill the agent under it and check the exit status (paged::kFaultExitStatus).
//
//   farmem_agent_host --agent 127.0.0.1:PORT --address PACKED --bytes N [--page 65536]
//                     [--passes 1] [--tls sm,tcp]
// With --servers and --file, it maps the memory nodes' preload file NAME as a shared paged
// region in agent mode, reads it whole, prints "checksum N", and with --hold stays until killed.
//
//   farmem_agent_host --agent 127.0.0.1:PORT --servers 127.0.0.1:PORT --bytes N --passes P
//   farmem_agent_host --agent 127.0.0.1:PORT --servers 127.0.0.1:PORT --file NAME [--hold]
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "farmem/agent/client.h"
#include "farmem/agent/page_source.h"
#include "farmem/client/cluster.h"
#include "farmem/paged/page_manager.h"

namespace {

uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

int fail(const farmem::Status& s) {
  std::printf("error %s\n", s.to_string().c_str());
  return 1;
}

struct PagedArgs {
  std::string servers, tls, file;
  uint64_t bytes = 0;
  uint32_t passes = 1;
  bool hold = false;
};

int run_paged(const PagedArgs& a, farmem::client::Cluster& agent) {
  const std::string& servers = a.servers;
  const std::string& tls = a.tls;
  auto config = farmem::client::ClusterConfig::from_server_list(servers);
  if (!config.ok()) return fail(config.status());
  config->options.tls = tls;
  config->options.op_timeout_ms = agent.config().options.op_timeout_ms;
  auto nodes = farmem::client::Cluster::connect(*config);
  if (!nodes.ok()) return fail(nodes.status());
  farmem::paged::PageManagerOptions mo;
  mo.local_bytes = 4 * farmem::paged::kDefaultPageBytes;
  auto manager = farmem::paged::PageManager::create(**nodes, mo);
  if (!manager.ok()) return fail(manager.status());
  farmem::paged::RegionOptions ro;
  ro.source = farmem::agent::make_agent_source(agent);
  if (!a.file.empty()) {
    auto region = (*manager)->allocate_from_file(a.file, ro);
    if (!region.ok()) return fail(region.status());
    const auto* p = static_cast<const uint8_t*>((*region)->data());
    const uint64_t h = fnv1a(p, (*region)->size(), 0xcbf29ce484222325ull);
    std::printf("checksum %llu\n", static_cast<unsigned long long>(h));
    std::fflush(stdout);
    while (a.hold) pause();
    return 0;
  }
  const uint64_t bytes = a.bytes;
  auto region = (*manager)->allocate(bytes, ro);
  if (!region.ok()) return fail(region.status());
  auto* p = static_cast<volatile uint8_t*>((*region)->data());
  for (uint32_t pass = 1; pass <= a.passes; ++pass) {
    for (uint64_t off = 0; off < bytes; off += farmem::paged::kDefaultPageBytes) {
      p[off] = static_cast<uint8_t>(p[off] + 1);
    }
    std::printf("pass %u\n", pass);
    std::fflush(stdout);
  }
  std::printf("done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"agent test host"};
  std::string agent, tls, servers, file;
  bool hold = false;
  uint64_t address = 0, bytes = 0;
  uint32_t page = 65536, passes = 1;
  app.add_option("--agent", agent)->required();
  app.add_option("--address", address);
  app.add_option("--servers", servers);
  app.add_option("--file", file);
  app.add_flag("--hold", hold);
  app.add_option("--bytes", bytes);
  app.add_option("--page", page);
  app.add_option("--passes", passes);
  app.add_option("--tls", tls);
  uint32_t op_timeout_ms = 5000;
  app.add_option("--op-timeout-ms", op_timeout_ms);
  CLI11_PARSE(app, argc, argv);
  auto config = farmem::client::ClusterConfig::from_server_list(agent);
  if (!config.ok()) return fail(config.status());
  config->options.tls = tls;
  config->options.op_timeout_ms = op_timeout_ms;
  auto cluster = farmem::client::Cluster::connect(*config);
  if (!cluster.ok()) return fail(cluster.status());
  if (!servers.empty()) {
    return run_paged(PagedArgs{servers, tls, file, bytes, passes, hold}, **cluster);
  }
  auto client = farmem::agent::AgentClient::create(**cluster);
  if (!client.ok()) return fail(client.status());
  std::vector<uint8_t> buf(page);
  uint64_t h = 0;
  const auto base = farmem::GlobalAddress::unpack(address);
  for (uint32_t pass = 0; pass < passes; ++pass) {
    h = 0xcbf29ce484222325ull;
    for (uint64_t off = 0; off < bytes; off += page) {
      farmem::Status s =
          (*client)->thread_client().run((*client)->read(base + off, buf.data(), page));
      if (!s.ok()) return fail(s);
      h = fnv1a(buf.data(), page, h);
    }
  }
  std::printf("checksum %llu\ndone\n", static_cast<unsigned long long>(h));
  std::fflush(stdout);
  client->reset();
  cluster->reset();
  return 0;
}
