// Test harness: real farmem-server processes and the transports the suite runs over.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/common/virtual_clock.h"
#include "farmem/runtime/task.h"

namespace farmem::testing {

// A UCX transport configuration. Client-server connection set-up needs tcp for wire-up, so
// the shared-memory case is "sm,tcp": UCX puts data lanes on shared memory.
struct Transport {
  std::string name;
  std::string tls;
};
std::vector<Transport> all_transports();
inline void PrintTo(const Transport& t, std::ostream* os) {
  *os << t.name << " (UCX_TLS=" << t.tls << ")";
}
std::string transport_name(const ::testing::TestParamInfo<Transport>& info);

struct ServerOptions {
  std::string tls;
  uint16_t node_id = 0;
  uint64_t capacity_bytes = 256ull << 20;
  std::string netns;  // run inside this network namespace (ip netns exec)
  std::string listen = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
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
  // What the server wrote to its standard error (its log).
  std::string log() const;

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string host_;
  std::string dir_;
};

// A child process whose standard output goes to a file the test reads (failure matrix
// clients). Killed (SIGKILL) when destroyed if still running.
class ChildProcess {
 public:
  static std::unique_ptr<ChildProcess> start(const std::vector<std::string>& args,
                                             const std::vector<std::string>& env = {});
  ~ChildProcess();
  pid_t pid() const { return pid_; }
  void signal(int sig);
  // Everything written so far.
  std::string output() const;
  // Waits (polling, up to `limit_ms` of real time: a hang guard, not a measurement) until the
  // output has a line starting with `prefix`; returns that line, or "" on timeout or exit.
  std::string wait_for_line(const std::string& prefix, int limit_ms);
  // The highest N of "acked N" lines so far (0 if none).
  uint64_t acked() const;
  // Waits up to limit_ms for the exit; returns the waitpid status, or -1 if still running.
  int wait_exit(int limit_ms);
  bool running();

 private:
  pid_t pid_ = -1;
  int exit_status_ = -1;
  std::string out_path_;
};

client::ClusterConfig config_for(const std::vector<const ServerProcess*>& servers,
                                 const std::string& tls, uint32_t op_timeout_ms = 5000);

// A test that cannot run here says why and skips; in CI (FARMEM_CI set, as `make test` does)
// nothing may skip, so it fails with the same reason instead.
bool in_ci();
#define FARMEM_SKIP_OR_FAIL(reason)                                  \
  do {                                                               \
    if (::farmem::testing::in_ci()) {                                \
      FAIL() << "cannot run in CI (FARMEM_CI is set): " << (reason); \
    } else {                                                         \
      GTEST_SKIP() << (reason);                                      \
    }                                                                \
  } while (0)

// Makes sure the kernel's huge page pool has at least `pages` free pages, raising
// vm.nr_hugepages if needed (root); the destructor takes back what it added. ok() is false,
// with why(), when it cannot (no permission, no memory for the pages). The pool is the machine's:
// a test that takes one has "Huge" in its name, so that ctest runs it alone (tests/CMakeLists.txt).
class HugePagePool {
 public:
  explicit HugePagePool(uint64_t pages);
  ~HugePagePool();
  HugePagePool(const HugePagePool&) = delete;
  HugePagePool& operator=(const HugePagePool&) = delete;
  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }

 private:
  uint64_t added_ = 0;
  std::string why_;
};

// Deletes network namespaces (fmns<pid>) and veth links (fmh<pid>) left by test processes
// that died without cleaning up (their pid is gone). Returns how many it removed.
int remove_stale_namespaces();

namespace detail {
template <typename T>
runtime::Task<void> store_result(runtime::Task<T> task, std::optional<T>* out) {
  T r = co_await std::move(task);
  out->emplace(std::move(r));
}
}  // namespace detail

// Runs `task` on c's scheduler, advancing the (installed, manual) virtual clock by step_ns
// after every round, for at most max_rounds rounds (a hang guard). Empty if it did not finish.
template <typename T>
std::optional<T> drive(client::ThreadClient* c, runtime::Task<T> task, VirtualClock* clock,
                       uint64_t step_ns, int max_rounds) {
  std::optional<T> out;
  if (!c->scheduler().spawn(detail::store_result(std::move(task), &out)).ok()) return out;
  for (int i = 0; i < max_rounds && !out.has_value(); ++i) {
    c->scheduler().poll_once();
    clock->advance(step_ns);
  }
  return out;
}

// Runs a command, returns its exit code; output appended to *out when given.
int run_command(const std::string& cmd, std::string* out = nullptr);

}  // namespace farmem::testing
