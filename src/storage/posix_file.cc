// posix_disk(): File and Disk over POSIX file descriptors.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "farmem/storage/file.h"

namespace farmem::storage {
namespace {

class PosixFile final : public File {
 public:
  PosixFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  Status write_at(uint64_t offset, std::string_view bytes) override {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                                 static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return io_error("write", path_, errno);
      done += static_cast<size_t>(n);
    }
    return OkStatus();
  }

  Result<size_t> read_at(uint64_t offset, char* out, size_t n) override {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return io_error("read", path_, errno);
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  Status sync() override {
    return ::fdatasync(fd_) == 0 ? OkStatus() : io_error("sync", path_, errno);
  }

  Result<uint64_t> size() override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return io_error("stat", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  Status truncate(uint64_t bytes) override {
    return ::ftruncate(fd_, static_cast<off_t>(bytes)) == 0 ? OkStatus()
                                                            : io_error("truncate", path_, errno);
  }

  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
};

class PosixDisk final : public Disk {
 public:
  Result<std::unique_ptr<File>> open(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return io_error("open", path, errno);
    return std::unique_ptr<File>(std::make_unique<PosixFile>(path, fd));
  }
};

}  // namespace

Status io_error(std::string_view what, const std::string& path, int err) {
  const std::string msg = std::string(what) + " " + path + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return ResourceExhausted(msg);
  return Internal(msg);
}

Disk& posix_disk() {
  static PosixDisk disk;
  return disk;
}

}  // namespace farmem::storage
