#include "farmem/bench/baseline/memory_cgroup.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace farmem::bench {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) return PermissionDenied(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  f << text;
  f.flush();
  if (!f) return PermissionDenied(fmt::format("cannot write {} to {}", text, path));
  return OkStatus();
}

// The process's cgroup path in the hierarchy whose /proc/self/cgroup line matches `controller`
// ("" = the unified hierarchy, line "0::/path").
std::string own_cgroup(const std::string& controller) {
  std::istringstream in(read_text("/proc/self/cgroup"));
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrls = line.substr(a + 1, b - a - 1);
    const bool match =
        controller.empty()
            ? (line.substr(0, a) == "0" && ctrls.empty())
            : (("," + ctrls + ",").find("," + controller + ",") != std::string::npos);
    if (match) return line.substr(b + 1);
  }
  return "";
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

Result<std::unique_ptr<MemoryCgroup>> MemoryCgroup::create(const std::string& name,
                                                           uint64_t limit_bytes) {
  std::unique_ptr<MemoryCgroup> g(new MemoryCgroup());
  const std::string v2_root =
      exists("/sys/fs/cgroup/cgroup.controllers") ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
  const std::string v2_ctrls = read_text(v2_root + "/cgroup.controllers");
  std::string limit_file;
  if (v2_ctrls.find("memory") != std::string::npos) {
    g->version_ = "v2";
    g->parent_ = v2_root + own_cgroup("");
    // A child gets the memory controller only if its parent hands it down.
    (void)write_text(g->parent_ + "/cgroup.subtree_control", "+memory");
    limit_file = "memory.max";
  } else if (exists("/sys/fs/cgroup/memory/memory.limit_in_bytes")) {
    g->version_ = "v1";
    g->parent_ = "/sys/fs/cgroup/memory" + own_cgroup("memory");
    limit_file = "memory.limit_in_bytes";
  } else {
    return Unavailable("no memory cgroup controller (neither cgroup v2 memory nor v1 memory)");
  }
  while (!g->parent_.empty() && g->parent_.back() == '/') g->parent_.pop_back();
  g->path_ = g->parent_ + "/" + name;
  if (::mkdir(g->path_.c_str(), 0755) != 0 && errno != EEXIST) {
    return PermissionDenied(
        fmt::format("cannot create cgroup {}: {}", g->path_, std::strerror(errno)));
  }
  Status s = write_text(g->path_ + "/" + limit_file, std::to_string(limit_bytes));
  if (!s.ok()) {
    ::rmdir(g->path_.c_str());
    return s;
  }
  return g;
}

MemoryCgroup::~MemoryCgroup() {
  (void)leave();
  ::rmdir(path_.c_str());  // its remaining charges move to the parent
}

Status MemoryCgroup::join() {
  Status s = write_text(path_ + "/cgroup.procs", std::to_string(::getpid()));
  if (s.ok()) joined_ = true;
  return s;
}

Status MemoryCgroup::leave() {
  if (!joined_) return OkStatus();
  Status s = write_text(parent_ + "/cgroup.procs", std::to_string(::getpid()));
  if (s.ok()) joined_ = false;
  return s;
}

uint64_t MemoryCgroup::usage_bytes() const {
  const std::string text =
      read_text(path_ + (version_ == "v2" ? "/memory.current" : "/memory.usage_in_bytes"));
  return text.empty() ? 0 : std::stoull(text);
}

}  // namespace farmem::bench
