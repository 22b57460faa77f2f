// MemoryCgroup: a memory cgroup of a given limit that this process joins for a measurement (the
// paged baseline of `farmem bench far frontend --backend mmap`: file pages the process maps are
// charged to it, so the kernel keeps at most `limit` bytes of them resident).
//
// cgroup v2 (memory.max) when the unified hierarchy has the memory controller; else cgroup v1
// (memory.limit_in_bytes), a child of the process's own memory cgroup. Needs root (or a
// delegated cgroup). join() moves the whole process (every thread); leave() moves it back; the
// destructor leaves and removes the cgroup.
// Thread safety: one thread (the benchmark's main thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "farmem/common/result.h"

namespace farmem::bench {

class MemoryCgroup {
 public:
  // A new cgroup named `name` limited to limit_bytes, or why not (kUnavailable: no memory
  // controller mounted; kPermissionDenied: not allowed to create or configure it).
  static Result<std::unique_ptr<MemoryCgroup>> create(const std::string& name,
                                                      uint64_t limit_bytes);
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  Status join();
  Status leave();
  // "v1" or "v2", and the cgroup's directory.
  const std::string& version() const { return version_; }
  const std::string& path() const { return path_; }
  // Bytes charged to the cgroup now (0 if unreadable).
  uint64_t usage_bytes() const;

 private:
  MemoryCgroup() = default;
  std::string version_, path_, parent_;
  bool joined_ = false;
};

}  // namespace farmem::bench
