#include "harness.h"

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
#include <iterator>
#include <sstream>
#include <thread>

namespace farmem::testing {

std::vector<Transport> all_transports() { return {{"shm", "sm,tcp"}, {"tcp", "tcp"}}; }

std::string transport_name(const ::testing::TestParamInfo<Transport>& info) {
  return info.param.name;
}

std::unique_ptr<ServerProcess> ServerProcess::start(const ServerOptions& o) {
  auto s = std::make_unique<ServerProcess>();
  char tmpl[] = "/tmp/farmem-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return nullptr;
  s->dir_ = tmpl;
  s->host_ = o.listen;
  std::string port_file = s->dir_ + "/port";
  std::vector<std::string> args;
  if (!o.netns.empty()) args = {"ip", "netns", "exec", o.netns};
  args.insert(args.end(), {FARMEM_SERVER_BIN, "--port", std::to_string(o.port), "--listen",
                           o.listen, "--capacity", std::to_string(o.capacity_bytes), "--node-id",
                           std::to_string(o.node_id), "--port-file", port_file});
  if (!o.tls.empty()) args.insert(args.end(), {"--tls", o.tls});
  if (!o.net_devices.empty()) args.insert(args.end(), {"--net-devices", o.net_devices});
  args.insert(args.end(), o.extra_args.begin(), o.extra_args.end());
  pid_t pid = fork();
  if (pid < 0) return nullptr;
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // Die with the test process, and keep no handle on its (ctest's) output pipes: a crashed
    // test must not leave a server holding them open.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!o.tls.empty()) setenv("UCX_TLS", o.tls.c_str(), 1);
    FILE* devnull = std::fopen("/dev/null", "w");
    if (devnull) dup2(fileno(devnull), STDOUT_FILENO);
    FILE* log = std::fopen((s->dir_ + "/stderr.log").c_str(), "w");
    if (log) dup2(fileno(log), STDERR_FILENO);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  s->pid_ = pid;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      s->pid_ = -1;
      ADD_FAILURE() << "farmem-server exited during start-up, status " << status;
      return nullptr;
    }
    std::ifstream f(port_file);
    unsigned port = 0;
    if (f >> port && port > 0) {
      s->port_ = static_cast<uint16_t>(port);
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "farmem-server did not become ready";
  return nullptr;
}

void ServerProcess::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

int ServerProcess::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 500; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

std::string ServerProcess::log() const {
  std::ifstream f(dir_ + "/stderr.log");
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

ServerProcess::~ServerProcess() {
  stop();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

client::ClusterConfig config_for(const std::vector<const ServerProcess*>& servers,
                                 const std::string& tls, uint32_t op_timeout_ms) {
  client::ClusterConfig c;
  for (const ServerProcess* s : servers) {
    auto hp = parse_host_port(s->address());
    c.memnodes.push_back(*hp);
  }
  c.options.tls = tls;
  c.options.op_timeout_ms = op_timeout_ms;
  c.options.connect_timeout_ms = 5000;
  return c;
}

std::unique_ptr<ChildProcess> ChildProcess::start(const std::vector<std::string>& args,
                                                  const std::vector<std::string>& env) {
  auto c = std::make_unique<ChildProcess>();
  char tmpl[] = "/tmp/farmem-child-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return nullptr;
  close(fd);
  c->out_path_ = tmpl;
  pid_t pid = fork();
  if (pid < 0) return nullptr;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    FILE* out = std::fopen(tmpl, "w");
    if (out) {
      dup2(fileno(out), STDOUT_FILENO);
      dup2(fileno(out), STDERR_FILENO);
    }
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  c->pid_ = pid;
  return c;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (!out_path_.empty()) std::remove(out_path_.c_str());
}

void ChildProcess::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

std::string ChildProcess::output() const {
  std::ifstream f(out_path_);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string ChildProcess::wait_for_line(const std::string& prefix, int limit_ms) {
  for (int waited = 0; waited <= limit_ms; waited += 5) {
    std::istringstream lines(output());
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) == 0) return line;
    }
    if (!running()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "";
}

uint64_t ChildProcess::acked() const {
  std::istringstream lines(output());
  std::string line;
  uint64_t best = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("acked ", 0) == 0) best = std::max<uint64_t>(best, std::stoull(line.substr(6)));
  }
  return best;
}

bool ChildProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = status;
    pid_ = -1;
    return false;
  }
  return true;
}

int ChildProcess::wait_exit(int limit_ms) {
  for (int waited = 0; waited <= limit_ms; waited += 5) {
    if (!running()) return exit_status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

bool in_ci() {
  const char* v = std::getenv("FARMEM_CI");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

namespace {

constexpr const char* kNrHugePages = "/proc/sys/vm/nr_hugepages";

uint64_t meminfo_count(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size()));
  }
  return 0;
}

uint64_t read_nr_hugepages() {
  std::ifstream in(kNrHugePages);
  uint64_t n = 0;
  in >> n;
  return n;
}

bool write_nr_hugepages(uint64_t n) {
  std::ofstream out(kNrHugePages);
  out << n << '\n';
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

HugePagePool::HugePagePool(uint64_t pages) {
  const uint64_t free = meminfo_count("HugePages_Free:");
  if (free >= pages) return;
  const uint64_t total = read_nr_hugepages();
  if (!write_nr_hugepages(total + pages - free)) {
    why_ = fmt::format("cannot raise {} to {} (needs root)", kNrHugePages, total + pages - free);
    return;
  }
  added_ = read_nr_hugepages() - total;
  if (meminfo_count("HugePages_Free:") < pages) {
    why_ = fmt::format("the kernel gave {} of {} huge pages asked for in {}", added_, pages - free,
                       kNrHugePages);
  }
}

HugePagePool::~HugePagePool() {
  if (added_ > 0) (void)write_nr_hugepages(read_nr_hugepages() - added_);
}

int remove_stale_namespaces() {
  std::string out;
  if (run_command("ip netns list", &out) != 0) return 0;
  std::istringstream lines(out);
  std::string line;
  int removed = 0;
  while (std::getline(lines, line)) {
    std::string name = line.substr(0, line.find(' '));
    if (name.rfind("fmns", 0) != 0) continue;
    const std::string pid = name.substr(4);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(std::stoi(pid), 0) == 0 || errno == EPERM) continue;  // its test still runs
    run_command("ip netns del " + name);
    run_command("ip link del fmh" + pid);
    ++removed;
  }
  return removed;
}

int run_command(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) {
    if (out) out->append(buf, n);
  }
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace farmem::testing
