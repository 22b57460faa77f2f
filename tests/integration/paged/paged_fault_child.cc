// A child process for the paged failure test: allocates a region larger than its budget,
// fills it, prints "ready", then reads it in a loop (every pass faults) until a fault cannot
// be served, which must end it with paged::kFaultExitStatus.
//   farmem_paged_fault_child HOST:PORT[,HOST:PORT...] [UCX_TLS]
#include <cstdio>
#include <cstdlib>

#include "farmem/client/cluster.h"
#include "farmem/paged/manager.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s HOST:PORT[,...] [tls]\n", argv[0]);
    return 2;
  }
  auto config = farmem::client::ClusterConfig::from_server_list(argv[1]);
  if (!config.ok()) return 2;
  config->options.op_timeout_ms = 2000;
  if (argc > 2) config->options.tls = argv[2];
  auto cluster = farmem::client::Cluster::connect(*config);
  if (!cluster.ok()) {
    std::fprintf(stderr, "connect: %s\n", cluster.status().to_string().c_str());
    return 3;
  }
  farmem::paged::ManagerOptions mo;
  mo.local_bytes = 256 << 10;
  auto manager = farmem::paged::Manager::create(**cluster, mo);
  if (!manager.ok()) return 4;
  farmem::paged::RegionOptions ro;
  ro.name = "child-region";
  auto region = (*manager)->allocate(2 << 20, ro);
  if (!region.ok()) return 5;
  auto* w = static_cast<volatile uint64_t*>((*region)->data());
  const uint64_t n = (*region)->size() / 8;
  for (uint64_t i = 0; i < n; ++i) w[i] = i + 1;
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) {
    for (uint64_t i = 0; i < n; i += 512) {
      if (w[i] != i + 1) {
        std::printf("wrong data at word %llu\n", static_cast<unsigned long long>(i));
        std::fflush(stdout);
        return 6;
      }
    }
  }
}
