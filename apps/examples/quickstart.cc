// quickstart: allocate far memory, write, read, compare-and-swap, publish a named root.
//
//   farmem-server --port 7000 &
//   build/farmem-quickstart 127.0.0.1:7000
#include <cstdio>
#include <cstring>

#include "farmem/client/cluster.h"

using farmem::GlobalAddress;
using farmem::Status;
using farmem::client::ThreadClient;
using farmem::runtime::Task;

// Everything a coroutine needs comes in as parameters (no capturing lambdas).
Task<Status> demo(ThreadClient* c) {
  auto addr = co_await c->allocate(64);  // 64 bytes on some memory node
  if (!addr.ok()) co_return addr.status();

  const char greeting[] = "hello, far memory";
  Status s = co_await c->write(*addr, greeting, sizeof(greeting));
  if (!s.ok()) co_return s;

  char back[sizeof(greeting)] = {};
  s = co_await c->read(*addr, back, sizeof(back));
  if (!s.ok()) co_return s;
  std::printf("read back: %s\n", back);

  GlobalAddress word = *addr + 32;  // an 8-byte aligned word in the same block
  uint64_t zero = 0, seen = 0;
  s = co_await c->write(word, &zero, 8);
  if (!s.ok()) co_return s;
  s = co_await c->cas(word, /*expected=*/0, /*desired=*/42, &seen);
  if (!s.ok()) co_return s;
  std::printf("cas: found %llu, swapped=%s\n", static_cast<unsigned long long>(seen),
              seen == 0 ? "yes" : "no");

  s = co_await c->publish_root("quickstart/greeting", *addr, /*replace=*/true);
  co_return s;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s host:port[,host:port...]\n", argv[0]);
    return 2;
  }
  auto config = farmem::client::ClusterConfig::from_server_list(argv[1]);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().to_string().c_str());
    return 2;
  }
  auto cluster = farmem::client::Cluster::connect(*config);  // handshake with every node
  if (!cluster.ok()) {
    std::fprintf(stderr, "%s\n", cluster.status().to_string().c_str());
    return 1;
  }
  ThreadClient* c = *(*cluster)->thread_client();  // this thread's worker and endpoints
  Status s = c->run(demo(c));                      // drive the coroutine to completion
  std::printf("%s\n", s.to_string().c_str());
  return s.ok() ? 0 : 1;
}
