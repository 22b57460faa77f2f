// File and Disk: the few file operations the log and checkpoints need, behind an interface so
// that tests can put a storage layer that loses what was not synced (SimulatedDisk) where the
// real file system (posix_disk()) is.
//
// A write is not stable until sync() returns: a process crash keeps it (it is in the kernel's
// page cache), a power loss may not. Errors name the file; ENOSPC/EDQUOT are kResourceExhausted.
// Thread safety: a File is used by one thread at a time; posix_disk() from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "farmem/common/result.h"

namespace farmem::storage {

class File {
 public:
  virtual ~File() = default;
  // Writes all of `bytes` at `offset` (growing the file as needed).
  virtual Status write_at(uint64_t offset, std::string_view bytes) = 0;
  // Reads up to n bytes at `offset` into out; fewer only at the end of the file.
  virtual Result<size_t> read_at(uint64_t offset, char* out, size_t n) = 0;
  // Makes every write before it stable (fdatasync).
  virtual Status sync() = 0;
  virtual Result<uint64_t> size() = 0;
  // Cuts (or extends with zeros) the file to `bytes`; stable after the next sync().
  virtual Status truncate(uint64_t bytes) = 0;
  virtual const std::string& path() const = 0;
};

class Disk {
 public:
  virtual ~Disk() = default;
  // Opens `path` for reading and writing, creating it empty when missing.
  virtual Result<std::unique_ptr<File>> open(const std::string& path) = 0;
};

// The real file system (pwrite, pread, fdatasync).
Disk& posix_disk();

// An I/O error on `path` as a Status: ENOSPC and EDQUOT become kResourceExhausted ("... : no
// space left on device"), anything else kInternal; the message names what was done and where.
Status io_error(std::string_view what, const std::string& path, int err);

}  // namespace farmem::storage
