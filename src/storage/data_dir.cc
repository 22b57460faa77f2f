#include "farmem/storage/data_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <utility>

#include "farmem/storage/file.h"

namespace farmem::storage {
namespace {

constexpr std::string_view kFormatMagic = "farmem-data-dir";

std::string join(const std::string& dir, std::string_view name) {
  return dir + "/" + std::string(name);
}

// The whole (small) file at `path`; an empty string for an empty file.
Result<std::string> read_small(const std::string& path) {
  FARMEM_ASSIGN_OR_RETURN(auto file, posix_disk().open(path));
  std::string text(256, '\0');
  FARMEM_ASSIGN_OR_RETURN(const size_t n, file->read_at(0, text.data(), text.size()));
  text.resize(n);
  return text;
}

// Makes `path` hold exactly `text`, synced when `sync` is set.
Status rewrite(const std::string& path, std::string_view text, bool sync) {
  FARMEM_ASSIGN_OR_RETURN(auto file, posix_disk().open(path));
  FARMEM_TRY(file->truncate(0));
  FARMEM_TRY(file->write_at(0, text));
  return sync ? file->sync() : OkStatus();
}

Status sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("open", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? OkStatus() : io_error("sync", dir, err);
}

// Takes LOCK's exclusive flock and writes our pid into it; *fd is the open LOCK file.
Status take_lock(const std::string& dir, int* fd) {
  const std::string path = join(dir, DataDir::kLockFile);
  *fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (*fd < 0) return io_error("open", path, errno);
  if (::flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) return io_error("lock", path, err);
    auto holder = read_small(path);
    std::string pid = holder.ok() ? *holder : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return Busy("data directory " + dir + " is in use by another memory node" +
                (pid.empty() ? std::string() : " (pid " + pid + ")"));
  }
  return rewrite(path, std::to_string(::getpid()) + "\n", false);
}

Status stamp_format(const std::string& dir);

// Checks FORMAT's magic and version; an older version this one reads is stamped anew.
Status check_format(const std::string& dir) {
  const std::string path = join(dir, DataDir::kFormatFile);
  FARMEM_ASSIGN_OR_RETURN(std::string text, read_small(path));
  const std::string prefix = std::string(kFormatMagic) + " ";
  if (text.rfind(prefix, 0) != 0 || text.back() != '\n') {
    return InvalidArgument(path + " is not a farmem format file");
  }
  const std::string version = text.substr(prefix.size(), text.size() - prefix.size() - 1);
  for (uint32_t v = DataDir::kOldestReadableVersion; v < DataDir::kFormatVersion; ++v) {
    if (version == std::to_string(v)) return stamp_format(dir);
  }
  if (version != std::to_string(DataDir::kFormatVersion)) {
    return VersionMismatch("data directory " + dir + " was written by format version " + version +
                           "; this farmem reads version " +
                           std::to_string(DataDir::kFormatVersion));
  }
  return OkStatus();
}

// Stamps an empty directory: FORMAT.tmp written and synced, renamed to FORMAT, directory synced.
Status stamp_format(const std::string& dir) {
  const std::string path = join(dir, DataDir::kFormatFile);
  const std::string tmp = path + ".tmp";
  // (fmt, not operator+: g++ 12's -Wstringop-overflow misfires on the latter under LTO.)
  FARMEM_TRY(rewrite(tmp, fmt::format("{} {}\n", kFormatMagic, DataDir::kFormatVersion), true));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return io_error("rename", tmp, errno);
  return sync_dir(dir);
}

// True when the directory holds nothing but LOCK (and a FORMAT.tmp an earlier stamp left).
Result<bool> holds_no_data(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name != DataDir::kLockFile && name != std::string(DataDir::kFormatFile) + ".tmp") {
      return false;
    }
  }
  if (ec) return io_error("list", dir, ec.value());
  return true;
}

}  // namespace

Result<DataDir> DataDir::open(const std::string& path) {
  if (path.empty()) return InvalidArgument("the data directory's path is empty");
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return io_error("create directory", path, ec.value());
  int fd = -1;
  Status s = take_lock(path, &fd);
  DataDir dir(path, fd, false);  // releases the lock on every error below
  FARMEM_TRY(s);
  if (std::filesystem::exists(dir.file(kFormatFile), ec)) {
    FARMEM_TRY(check_format(path));
    return dir;
  }
  FARMEM_ASSIGN_OR_RETURN(const bool empty, holds_no_data(path));
  if (!empty) {
    return InvalidArgument(path + " holds files but no " + std::string(kFormatFile) +
                           ": not a farmem data directory");
  }
  FARMEM_TRY(stamp_format(path));
  dir.fresh_ = true;
  return dir;
}

DataDir::DataDir(std::string path, int lock_fd, bool fresh)
    : path_(std::move(path)), lock_fd_(lock_fd), fresh_(fresh) {}

DataDir::DataDir(DataDir&& other) noexcept
    : path_(std::move(other.path_)),
      lock_fd_(std::exchange(other.lock_fd_, -1)),
      fresh_(other.fresh_) {}

DataDir& DataDir::operator=(DataDir&& other) noexcept {
  if (this != &other) {
    if (lock_fd_ >= 0) ::close(lock_fd_);
    path_ = std::move(other.path_);
    lock_fd_ = std::exchange(other.lock_fd_, -1);
    fresh_ = other.fresh_;
  }
  return *this;
}

DataDir::~DataDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // closing the only descriptor drops the flock
}

std::string DataDir::file(std::string_view name) const { return join(path_, name); }

}  // namespace farmem::storage
