#include "farmem/bench/harness/local_node.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

namespace farmem::bench {

std::string server_binary() {
  if (const char* env = std::getenv("FARMEM_SERVER")) return env;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto sibling = self.parent_path() / "farmem-server";
    if (std::filesystem::exists(sibling)) return sibling.string();
  }
  return "farmem-server";
}

Result<std::unique_ptr<LocalNode>> LocalNode::start(uint64_t capacity_bytes, uint32_t workers,
                                                    int64_t idle_spin_us,
                                                    const std::string& preload_dir,
                                                    const std::string& durability) {
  std::unique_ptr<LocalNode> n(new LocalNode());
  char tmpl[] = "/tmp/farmem-local-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Internal("mkdtemp failed");
  n->dir_ = tmpl;
  std::string port_file = n->dir_ + "/port";
  std::string bin = server_binary();
  std::string cap = std::to_string(capacity_bytes);
  std::string wk = std::to_string(workers);
  std::string spin = std::to_string(idle_spin_us);
  std::vector<const char*> args = {
      bin.c_str(), "--port",    "0",        "--listen",    "127.0.0.1",      "--capacity",
      cap.c_str(), "--workers", wk.c_str(), "--port-file", port_file.c_str()};
  if (idle_spin_us >= 0) {
    args.push_back("--idle-spin-us");
    args.push_back(spin.c_str());
  }
  if (!preload_dir.empty()) {
    args.push_back("--preload-dir");
    args.push_back(preload_dir.c_str());
  }
  const std::string data_dir = n->dir_ + "/data";
  if (!durability.empty()) {
    args.insert(args.end(), {"--data-dir", data_dir.c_str(), "--durability", durability.c_str()});
  }
  args.push_back(nullptr);
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  pid_t pid = fork();
  if (pid < 0) return Internal("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // a killed farmem does not leave its node behind
    if (FILE* devnull = std::fopen("/dev/null", "w")) dup2(fileno(devnull), STDOUT_FILENO);
    execvp(bin.c_str(), argv.data());
    std::fprintf(stderr, "farmem: cannot run %s\n", bin.c_str());
    _exit(127);
  }
  n->pid_ = pid;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      n->pid_ = -1;
      return Unavailable(fmt::format("local memory node ({}) exited during start-up", bin));
    }
    std::ifstream f(port_file);
    unsigned port = 0;
    if (f >> port && port > 0) {
      n->port_ = static_cast<uint16_t>(port);
      return n;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return TimedOut("local memory node did not become ready within 20 s");
}

LocalNode::~LocalNode() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    for (int i = 0; i < 500; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

}  // namespace farmem::bench
