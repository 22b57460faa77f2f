// DataDir: a memory node's data directory, held for the node's life.
//
// open() creates the directory when it is missing, stamps an empty one with the format version
// (FORMAT: "farmem-data-dir <version>\n", written to a temporary file, synced and renamed into
// place), and takes an exclusive lock on its LOCK file (flock), which holds the holder's pid. A
// directory of an older version this one reads (kOldestReadableVersion: its logs hold only
// records this version replays) is stamped with the current one as it is opened.
// Refused, with one clear line: a directory whose lock another live process holds (kBusy, naming
// that pid; the kernel drops the lock when its holder dies, kill -9 included), one written by
// another format version (kVersionMismatch), a non-empty directory without a FORMAT file
// (kInvalidArgument), a full file system (kResourceExhausted) and other I/O errors (kInternal),
// each naming the directory.
//
// Setup only: open() blocks on the file system. Not thread-safe; move-only. Destroying the
// DataDir releases the lock (the LOCK file stays).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "farmem/common/result.h"

namespace farmem::storage {

class DataDir {
 public:
  // 2: logs may hold ranges records (several ranges in one record, docs/formats/storage.md).
  static constexpr uint32_t kFormatVersion = 2;
  static constexpr uint32_t kOldestReadableVersion = 1;
  static constexpr std::string_view kLockFile = "LOCK";
  static constexpr std::string_view kFormatFile = "FORMAT";

  static Result<DataDir> open(const std::string& path);

  DataDir(DataDir&& other) noexcept;
  DataDir& operator=(DataDir&& other) noexcept;
  DataDir(const DataDir&) = delete;
  DataDir& operator=(const DataDir&) = delete;
  ~DataDir();

  const std::string& path() const { return path_; }
  // The path of `name` inside the directory.
  std::string file(std::string_view name) const;
  // True when this open() stamped the directory (it held no data before).
  bool fresh() const { return fresh_; }

 private:
  DataDir(std::string path, int lock_fd, bool fresh);

  std::string path_;
  int lock_fd_ = -1;
  bool fresh_ = false;
};

}  // namespace farmem::storage
