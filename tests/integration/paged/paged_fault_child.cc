// A child process for the paged failure tests: allocates a region larger than its budget,
// fills it (word i = i + 1), prints "ready", then passes over it (every pass faults and evicts).
//   farmem_paged_fault_child HOST:PORT[,HOST:PORT...] [UCX_TLS [OP_TIMEOUT_MS [PASSES [hold]]]]
// PASSES 0 (the default): reads in a loop until a fault cannot be served, which must end it with
// paged::kFaultExitStatus. PASSES N > 0: pass p (1..N) checks every 512th word holds i + p and
// writes i + p + 1 to it, printing "pass p"; then prints "checksum H" (FNV-1a over the region's
// words as values) and exits 0, or with "hold" prints "holding" and waits until killed.
// Wrong data ends it with status 6 after "wrong data at word N".
// FARMEM_CHILD_ADVICE=sequential gives the region sequential advice (read-ahead groups mapped
// by installer threads) instead of random.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "farmem/client/cluster.h"
#include "farmem/paged/page_manager.h"

namespace {

bool wrong(uint64_t i) {
  std::printf("wrong data at word %llu\n", static_cast<unsigned long long>(i));
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s HOST:PORT[,...] [tls [op_timeout_ms [passes [hold]]]]\n",
                 argv[0]);
    return 2;
  }
  auto config = farmem::client::ClusterConfig::from_server_list(argv[1]);
  if (!config.ok()) return 2;
  config->options.op_timeout_ms = 2000;
  if (argc > 2) config->options.tls = argv[2];
  if (argc > 3) config->options.op_timeout_ms = static_cast<uint32_t>(std::stoul(argv[3]));
  const uint64_t passes = argc > 4 ? std::stoull(argv[4]) : 0;
  const bool hold = argc > 5 && std::string(argv[5]) == "hold";
  auto cluster = farmem::client::Cluster::connect(*config);
  if (!cluster.ok()) {
    std::fprintf(stderr, "connect: %s\n", cluster.status().to_string().c_str());
    return 3;
  }
  farmem::paged::PageManagerOptions mo;
  mo.local_bytes = 256 << 10;
  auto manager = farmem::paged::PageManager::create(**cluster, mo);
  if (!manager.ok()) return 4;
  farmem::paged::RegionOptions ro;
  ro.name = "child-region";
  if (const char* a = std::getenv("FARMEM_CHILD_ADVICE"); a != nullptr) {
    if (std::string(a) != "sequential") return 2;
    ro.advice = farmem::paged::Advice::kSequential;
  }
  auto region = (*manager)->allocate(2 << 20, ro);
  if (!region.ok()) return 5;
  auto* w = static_cast<volatile uint64_t*>((*region)->data());
  const uint64_t n = (*region)->size() / 8;
  for (uint64_t i = 0; i < n; ++i) w[i] = i + 1;
  std::printf("ready\n");
  std::fflush(stdout);
  if (passes == 0) {
    for (;;) {
      for (uint64_t i = 0; i < n; i += 512) {
        if (w[i] != i + 1 && wrong(i)) return 6;
      }
    }
  }
  for (uint64_t p = 1; p <= passes; ++p) {
    for (uint64_t i = 0; i < n; i += 512) {
      if (w[i] != i + p && wrong(i)) return 6;
      w[i] = i + p + 1;
    }
    std::printf("pass %llu\n", static_cast<unsigned long long>(p));
    std::fflush(stdout);
  }
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < n; ++i) h = (h ^ w[i]) * 0x100000001b3ull;
  std::printf("checksum %llu\n", static_cast<unsigned long long>(h));
  std::fflush(stdout);
  if (hold) {
    std::printf("holding\n");
    std::fflush(stdout);
    for (;;) pause();
  }
  return 0;
}
