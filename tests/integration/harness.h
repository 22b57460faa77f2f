// Test harness: real farmem-server processes and the transports the suite runs over.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "farmem/client/cluster.h"

namespace farmem::testing {

// A UCX transport configuration. Client-server connection set-up needs tcp for wire-up, so
// the shared-memory case is "sm,tcp": UCX puts data lanes on shared memory.
struct Transport {
  std::string name;
  std::string tls;
};
std::vector<Transport> all_transports();
inline void PrintTo(const Transport& t, std::ostream* os) { *os << t.name << " (UCX_TLS=" << t.tls << ")"; }
std::string transport_name(const ::testing::TestParamInfo<Transport>& info);

struct ServerOptions {
  std::string tls;
  uint16_t node_id = 0;
  uint64_t capacity_bytes = 256ull << 20;
  std::string netns;          // run inside this network namespace (ip netns exec)
  std::string listen = "127.0.0.1";
  std::string net_devices;
  std::vector<std::string> extra_args;
};

// A farmem-server child process, stopped (SIGCONT + SIGTERM, then SIGKILL) when destroyed.
class ServerProcess {
 public:
  static std::unique_ptr<ServerProcess> start(const ServerOptions& options);
  ~ServerProcess();
  uint16_t port() const { return port_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  void signal(int sig);
  // SIGTERM and wait; returns the exit status as from waitpid.
  int stop();

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string host_;
  std::string dir_;
};

client::ClusterConfig config_for(const std::vector<const ServerProcess*>& servers,
                                 const std::string& tls, uint32_t op_timeout_ms = 5000);

// Runs a command, returns its exit code; output appended to *out when given.
int run_command(const std::string& cmd, std::string* out = nullptr);

}  // namespace farmem::testing
