// The paged service: file preload into the node's region (docs/formats/paged.md).
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "farmem/fabric/wire.h"
#include "farmem/paged/service.h"
#include "farmem/paged/wire.h"

namespace farmem::paged {

namespace w = wire;

namespace {

// Closes a file descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

Status check_name(std::string_view name) {
  if (name.empty()) return InvalidArgument("preload: empty file name");
  if (name.size() > w::kMaxNameBytes) return InvalidArgument("preload: file name too long");
  if (name.find('\0') != std::string_view::npos) {
    return InvalidArgument("preload: NUL in the file name");
  }
  if (name[0] == '/') return PermissionDenied("preload refused: absolute path");
  size_t start = 0;
  while (start <= name.size()) {
    const size_t end = std::min(name.find('/', start), name.size());
    if (name.substr(start, end - start) == "..") {
      return PermissionDenied("preload refused: '..' in the path");
    }
    start = end + 1;
  }
  return OkStatus();
}

uint64_t mtime_ns(const struct stat& st) {
  return static_cast<uint64_t>(st.st_mtim.tv_sec) * 1'000'000'000ull +
         static_cast<uint64_t>(st.st_mtim.tv_nsec);
}

Result<struct stat> stat_fd(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Internal(std::string("preload: fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return PermissionDenied("preload refused: not a regular file");
  return st;
}

Status stat_file(const std::string& dir, std::string_view name, std::string* out) {
  auto fd = open_preload_file(dir, name);
  FARMEM_TRY(fd);
  Fd guard{*fd};
  auto st = stat_fd(*fd);
  FARMEM_TRY(st);
  w::StatReply reply{static_cast<uint64_t>(st->st_size), mtime_ns(*st)};
  out->assign(reinterpret_cast<const char*>(&reply), sizeof reply);
  return OkStatus();
}

Status load(const std::string& dir, uint8_t* region, uint64_t region_bytes, const w::LoadRequest& q,
            std::string_view name, std::string* out) {
  if (q.page_stride == 0 || q.page_count == 0 || !power_of_two(q.page_bytes) ||
      q.page_bytes < w::kMinPageBytes || uint64_t{q.page_count} * q.page_bytes > w::kMaxLoadBytes) {
    return InvalidArgument("preload: bad page geometry");
  }
  const uint64_t bytes = uint64_t{q.page_count} * q.page_bytes;
  if (q.dst_offset < ::farmem::wire::kRegionHeaderBytes || q.dst_offset > region_bytes ||
      bytes > region_bytes - q.dst_offset) {
    return OutOfRange("preload: destination outside the node's region");
  }
  if (q.first_page > (uint64_t{1} << 40)) return OutOfRange("preload: first_page too large");
  auto fd = open_preload_file(dir, name);
  FARMEM_TRY(fd);
  Fd guard{*fd};
  auto st = stat_fd(*fd);
  FARMEM_TRY(st);
  const uint64_t file_bytes = static_cast<uint64_t>(st->st_size);
  if (file_bytes != q.expect_file_bytes || mtime_ns(*st) != q.expect_mtime_ns) {
    return Aborted("preload: the file changed since it was looked up");
  }
  uint64_t read_total = 0;
  for (uint32_t k = 0; k < q.page_count; ++k) {
    uint8_t* dst = region + q.dst_offset + uint64_t{k} * q.page_bytes;
    const uint64_t src = (q.first_page + uint64_t{k} * q.page_stride) * q.page_bytes;
    uint64_t done = 0;
    while (src + done < file_bytes && done < q.page_bytes) {
      const ssize_t n = pread(*fd, dst + done, q.page_bytes - done, static_cast<off_t>(src + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Internal(std::string("preload: read: ") + std::strerror(errno));
      if (n == 0) break;  // shrunk meanwhile: the rest reads as zero
      done += static_cast<uint64_t>(n);
    }
    std::memset(dst + done, 0, q.page_bytes - done);
    read_total += done;
  }
  w::LoadReply reply{read_total};
  out->assign(reinterpret_cast<const char*>(&reply), sizeof reply);
  return OkStatus();
}

class PagedWorker : public memnode::ServiceWorker {
 public:
  explicit PagedWorker(const memnode::WorkerContext& c) : node_(*c.node) {}
  void handle(memnode::Request& r, memnode::Responder responder) override {
    std::string out;
    Status s = handle_paged_request(node_.config.preload_dir, node_.region_base, node_.region_bytes,
                                    r.header.opcode, r.payload.data(), r.payload.size(), &out);
    responder.finish(s, out);
  }

 private:
  memnode::NodeState& node_;
};

class PagedService : public memnode::Service {
 public:
  std::string_view name() const override { return "paged"; }
  uint16_t first_opcode() const override { return w::kFirstOpcode; }
  uint16_t last_opcode() const override { return w::kLastOpcode; }
  std::unique_ptr<memnode::ServiceWorker> start_worker(const memnode::WorkerContext& c) override {
    return std::make_unique<PagedWorker>(c);
  }
};

}  // namespace

std::shared_ptr<memnode::Service> make_paged_service() { return std::make_shared<PagedService>(); }

Result<int> open_preload_file(const std::string& dir, std::string_view name) {
  if (dir.empty()) return PermissionDenied("preload refused: this node has no preload_dir");
  FARMEM_TRY(check_name(name));
  Fd dfd{open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
  if (dfd.fd < 0) return Unavailable("preload: cannot open preload_dir " + dir);
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;  // a FIFO must not block the open
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const std::string path(name);
  const long fd = syscall(SYS_openat2, dfd.fd, path.c_str(), &how, sizeof how);
  if (fd < 0) {
    if (errno == EXDEV || errno == ELOOP) {
      return PermissionDenied("preload refused: the path leaves preload_dir");
    }
    if (errno == ENOENT) return NotFound("preload: no such file in preload_dir: " + path);
    return PermissionDenied(std::string("preload: cannot open ") + path + ": " +
                            std::strerror(errno));
  }
  return static_cast<int>(fd);
}

Status handle_paged_request(const std::string& preload_dir, uint8_t* region, uint64_t region_bytes,
                            uint16_t opcode, const uint8_t* payload, size_t bytes,
                            std::string* out) {
  switch (static_cast<w::Op>(opcode)) {
    case w::Op::kStat: {
      w::StatRequest q;
      if (bytes < sizeof q) return InvalidArgument("preload: short stat request");
      std::memcpy(&q, payload, sizeof q);
      if (q.reserved != 0 || q.name_bytes != bytes - sizeof q) {
        return InvalidArgument("preload: malformed stat request");
      }
      return stat_file(
          preload_dir,
          std::string_view(reinterpret_cast<const char*>(payload + sizeof q), q.name_bytes), out);
    }
    case w::Op::kLoad: {
      w::LoadRequest q;
      if (bytes < sizeof q) return InvalidArgument("preload: short load request");
      std::memcpy(&q, payload, sizeof q);
      if (q.name_bytes != bytes - sizeof q) return InvalidArgument("preload: malformed load");
      return load(preload_dir, region, region_bytes, q,
                  std::string_view(reinterpret_cast<const char*>(payload + sizeof q), q.name_bytes),
                  out);
    }
  }
  return InvalidArgument("paged: unknown opcode");
}

}  // namespace farmem::paged
