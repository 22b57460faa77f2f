#include "farmem/storage/sync_trace.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "farmem/common/clock.h"
#include "farmem/storage/file.h"

namespace farmem::storage {
namespace {

constexpr uint32_t kTraceMagic = 0x52545346;  // "FSTR"
constexpr uint32_t kMaxNameBytes = 255;

// docs/formats/storage.md "Sync trace".
struct EntryHeader {
  uint32_t magic;
  uint32_t name_bytes;
  uint64_t steady_ns;
  uint64_t cut_bytes;
  uint64_t size_bytes;
  uint32_t ranges;
  uint32_t reserved;
};
static_assert(sizeof(EntryHeader) == 40);
static_assert(offsetof(EntryHeader, steady_ns) == 8);
static_assert(offsetof(EntryHeader, cut_bytes) == 16);
static_assert(offsetof(EntryHeader, size_bytes) == 24);
static_assert(offsetof(EntryHeader, ranges) == 32);

struct RangeHeader {
  uint64_t offset;
  uint64_t bytes;
};
static_assert(sizeof(RangeHeader) == 16);

template <typename T>
void put(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// Reads a T at *at of `data`; false when fewer bytes are left.
template <typename T>
bool take(std::string_view data, size_t* at, T* v) {
  if (data.size() - *at < sizeof(T)) return false;
  std::memcpy(v, data.data() + *at, sizeof(T));
  *at += sizeof(T);
  return true;
}

// One entry at *at; kOutOfRange when the data ends inside it, kInternal when it is not one.
Status parse_entry(std::string_view data, size_t* at, SyncTraceEntry* e) {
  const size_t start = *at;
  EntryHeader h{};
  if (!take(data, at, &h)) return OutOfRange("torn");
  if (h.magic != kTraceMagic || h.name_bytes == 0 || h.name_bytes > kMaxNameBytes) {
    return Internal(fmt::format("sync trace: no entry at offset {}", start));
  }
  if (data.size() - *at < h.name_bytes) return OutOfRange("torn");
  e->steady_ns = h.steady_ns;
  e->file.assign(data.data() + *at, h.name_bytes);
  *at += h.name_bytes;
  e->cut_bytes = h.cut_bytes;
  e->size_bytes = h.size_bytes;
  for (uint32_t i = 0; i < h.ranges; ++i) {
    RangeHeader r{};
    if (!take(data, at, &r)) return OutOfRange("torn");
    if (data.size() - *at < r.bytes) return OutOfRange("torn");
    e->ranges.push_back({r.offset, std::string(data.data() + *at, r.bytes)});
    *at += r.bytes;
  }
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<SyncTraceWriter>> SyncTraceWriter::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("open", path, errno);
  return std::unique_ptr<SyncTraceWriter>(new SyncTraceWriter(path, fd));
}

SyncTraceWriter::~SyncTraceWriter() { ::close(fd_); }

Status SyncTraceWriter::append(std::string_view file, uint64_t cut_bytes, uint64_t size_bytes,
                               const std::vector<RangeView>& ranges) {
  if (file.empty() || file.size() > kMaxNameBytes) return InvalidArgument("sync trace: bad name");
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  EntryHeader h{kTraceMagic,
                static_cast<uint32_t>(file.size()),
                steady_now_ns(),
                cut_bytes,
                size_bytes,
                static_cast<uint32_t>(ranges.size()),
                0};
  put(&out, h);
  out.append(file);
  for (const auto& r : ranges) {
    put(&out, RangeHeader{r.offset, r.bytes.size()});
    out.append(r.bytes);
  }
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::write(fd_, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("write", path_, errno);
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

Result<std::vector<SyncTraceEntry>> read_sync_trace(const std::string& path) {
  FARMEM_ASSIGN_OR_RETURN(auto file, posix_disk().open(path));
  FARMEM_ASSIGN_OR_RETURN(const uint64_t bytes, file->size());
  std::string data(bytes, '\0');
  FARMEM_ASSIGN_OR_RETURN(const size_t got, file->read_at(0, data.data(), data.size()));
  data.resize(got);
  std::vector<SyncTraceEntry> entries;
  size_t at = 0;
  while (at < data.size()) {
    SyncTraceEntry e;
    const Status st = parse_entry(data, &at, &e);
    if (st.code() == StatusCode::kOutOfRange) break;  // the writer died inside its last entry
    FARMEM_TRY(st);
    entries.push_back(std::move(e));
  }
  return entries;
}

Status apply_sync_trace_entry(const std::string& dir, const SyncTraceEntry& e) {
  if (e.file.find('/') != std::string::npos || e.file == "." || e.file == "..") {
    return InvalidArgument("sync trace: bad file name " + e.file);
  }
  FARMEM_ASSIGN_OR_RETURN(auto file, posix_disk().open(dir + "/" + e.file));
  FARMEM_ASSIGN_OR_RETURN(const uint64_t size, file->size());
  if (e.cut_bytes < size) FARMEM_TRY(file->truncate(e.cut_bytes));
  for (const auto& r : e.ranges) FARMEM_TRY(file->write_at(r.offset, r.bytes));
  return file->truncate(e.size_bytes);
}

}  // namespace farmem::storage
