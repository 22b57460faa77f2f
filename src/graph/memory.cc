#include "farmem/graph/memory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

namespace farmem::graph {

uint64_t GraphMemory::graph_bytes() const {
  const Graph& g = graph();
  return (g.vertices + 1) * sizeof(uint64_t) + g.edges * sizeof(uint32_t) +
         (g.weights != nullptr ? g.edges * sizeof(float) : 0);
}

void GraphMemory::note_allocated(uint64_t bytes) {
  live_buffer_bytes_ += bytes;
  peak_buffer_bytes_ = std::max(peak_buffer_bytes_, live_buffer_bytes_);
}

Graph view_of_fmg(const FmgHeader& h, const uint8_t* base) {
  auto at = [&](FmgSection s) { return base + h.sections[static_cast<uint32_t>(s)].offset; };
  Graph g;
  g.vertices = h.vertices;
  g.edges = h.edges;
  g.symmetric = (h.flags & kFmgSymmetric) != 0;
  g.offsets = reinterpret_cast<const uint64_t*>(at(FmgSection::kOffsets));
  g.neighbours = reinterpret_cast<const uint32_t*>(at(FmgSection::kNeighbours));
  g.weights =
      (h.flags & kFmgWeighted) ? reinterpret_cast<const float*>(at(FmgSection::kWeights)) : nullptr;
  return g;
}

Status check_fmg_sections(const Graph& g, const std::string& path) {
  if (g.offsets[0] != 0 || g.offsets[g.vertices] != g.edges) {
    return InvalidArgument(fmt::format("{}: offsets do not run from 0 to the edge count", path));
  }
  for (uint64_t v = 0; v < g.vertices; ++v) {
    if (g.offsets[v + 1] < g.offsets[v]) {
      return InvalidArgument(fmt::format("{}: offsets decrease at vertex {}", path, v));
    }
  }
  for (uint64_t i = 0; i < g.edges; ++i) {
    if (g.neighbours[i] >= g.vertices) {
      return InvalidArgument(
          fmt::format("{}: neighbour {} at edge {} is not a vertex", path, g.neighbours[i], i));
    }
  }
  return OkStatus();
}

namespace {

// Anonymous memory, zero-filled by the kernel and asked onto transparent huge pages
// (MADV_HUGEPAGE: with THP in "madvise" mode, as Debian ships it, nothing else gets them), so
// the random reads over vertex arrays and neighbour lists miss the TLB far less.
class DramBlock {
 public:
  static Result<DramBlock> map(uint64_t bytes) {
    bytes = std::max<uint64_t>(bytes, 1);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return ResourceExhausted(fmt::format("cannot map {} bytes: {}", bytes, std::strerror(errno)));
    }
    (void)::madvise(p, bytes, MADV_HUGEPAGE);  // a hint; without THP the pages stay small
    return DramBlock(static_cast<uint8_t*>(p), bytes);
  }
  DramBlock() = default;
  DramBlock(DramBlock&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(o.bytes_) {}
  DramBlock& operator=(DramBlock&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DramBlock() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  uint8_t* data() const { return data_; }

 private:
  DramBlock(uint8_t* data, uint64_t bytes) : data_(data), bytes_(bytes) {}
  uint8_t* data_ = nullptr;
  uint64_t bytes_ = 0;
};

class DramBuffer : public Buffer {
 public:
  DramBuffer(GraphMemory* owner, DramBlock block, uint64_t bytes)
      : owner_(owner), block_(std::move(block)), bytes_(bytes) {
    owner_->note_allocated(bytes_);
  }
  ~DramBuffer() override { owner_->note_freed(bytes_); }
  void* data() override { return block_.data(); }
  uint64_t bytes() const override { return bytes_; }

 private:
  GraphMemory* owner_;
  DramBlock block_;
  uint64_t bytes_;
};

class LocalMemory : public GraphMemory {
 public:
  std::string_view backend() const override { return "local"; }
  bool reads_by_page() const override { return false; }
  const Graph& graph() const override { return graph_; }
  Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes, std::string_view, Access) override {
    auto block = DramBlock::map(bytes);
    FARMEM_TRY(block);
    return std::unique_ptr<Buffer>(new DramBuffer(this, std::move(*block), bytes));
  }

  Status load(const std::string& path) {
    auto h = read_fmg_header(path);
    FARMEM_TRY(h);
    auto block = DramBlock::map(h->file_bytes);
    FARMEM_TRY(block);
    file_ = std::move(*block);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NotFound(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
    uint8_t* p = file_.data();
    uint64_t done = 0;
    while (done < h->file_bytes) {
      const ssize_t n = ::pread(fd, p + done, std::min<uint64_t>(h->file_bytes - done, 1ull << 30),
                                static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd);
        return Internal(fmt::format("{}: read failed at byte {}", path, done));
      }
      done += n;
    }
    ::close(fd);
    graph_ = view_of_fmg(*h, p);
    return check_fmg_sections(graph_, path);
  }

 private:
  DramBlock file_;  // page-aligned, so the offsets section is too
  Graph graph_;
};

int advice_of(const std::string& advice) { return advice == "random" ? MADV_RANDOM : MADV_NORMAL; }

class MappedBuffer : public Buffer {
 public:
  MappedBuffer(GraphMemory* owner, void* p, uint64_t bytes) : owner_(owner), p_(p), bytes_(bytes) {
    owner_->note_allocated(bytes_);
  }
  ~MappedBuffer() override {
    ::munmap(p_, bytes_);
    owner_->note_freed(bytes_);
  }
  void* data() override { return p_; }
  uint64_t bytes() const override { return bytes_; }

 private:
  GraphMemory* owner_;
  void* p_;
  uint64_t bytes_;
};

// The process's major faults (getrusage) and storage bytes read and written (/proc/self/io:
// page-fault reads count; write-back by the kernel's flusher threads does not).
MemoryCounters process_paging_counters() {
  MemoryCounters c;
  struct rusage ru;
  if (::getrusage(RUSAGE_SELF, &ru) == 0) c.faults = static_cast<uint64_t>(ru.ru_majflt);
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t value;
  while (io >> key >> value) {
    if (key == "read_bytes:") c.bytes_fetched = value;
    if (key == "write_bytes:") c.bytes_written_back = value;
  }
  return c;
}

class MmapMemory : public GraphMemory {
 public:
  MemoryCounters counters() const override { return process_paging_counters(); }
  explicit MmapMemory(MmapOptions o) : o_(std::move(o)) {}
  ~MmapMemory() override {
    if (base_ != nullptr) ::munmap(base_, bytes_);
  }
  std::string_view backend() const override { return "mmap"; }
  void drop_resident() override { ::madvise(base_, bytes_, MADV_DONTNEED); }
  const Graph& graph() const override { return graph_; }

  Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes, std::string_view what, Access) override {
    std::string name = o_.temp_dir + "/farmem-graph-XXXXXX";
    const int fd = ::mkstemp(name.data());
    if (fd < 0) {
      return Internal(fmt::format("cannot create a file in {} for {}: {}", o_.temp_dir, what,
                                  std::strerror(errno)));
    }
    ::unlink(name.c_str());
    const uint64_t len = std::max<uint64_t>(bytes, 1);
    void* p = MAP_FAILED;
    if (::ftruncate(fd, static_cast<off_t>(len)) == 0) {
      p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) {
      return Internal(fmt::format("cannot map {} bytes for {}: {}", len, what, std::strerror(err)));
    }
    ::madvise(p, len, advice_of(o_.advice));
    return std::unique_ptr<Buffer>(new MappedBuffer(this, p, len));
  }

  Status open(const std::string& path) {
    auto h = read_fmg_header(path);
    FARMEM_TRY(h);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NotFound(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
    void* p = ::mmap(nullptr, h->file_bytes, PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) {
      return Internal(fmt::format("cannot map {}: {}", path, std::strerror(err)));
    }
    base_ = p;
    bytes_ = h->file_bytes;
    ::madvise(p, bytes_, advice_of(o_.advice));
    graph_ = view_of_fmg(*h, static_cast<const uint8_t*>(p));
    return check_fmg_sections(graph_, path);
  }

 private:
  MmapOptions o_;
  void* base_ = nullptr;
  uint64_t bytes_ = 0;
  Graph graph_;
};

}  // namespace

Result<std::unique_ptr<GraphMemory>> open_local(const std::string& path) {
  auto m = std::make_unique<LocalMemory>();
  if (Status s = m->load(path); !s.ok()) return s;
  return std::unique_ptr<GraphMemory>(std::move(m));
}

Result<std::unique_ptr<GraphMemory>> open_mmap(const std::string& path, const MmapOptions& o) {
  if (o.advice != "default" && o.advice != "random") {
    return InvalidArgument(fmt::format("--advice '{}': expected default or random", o.advice));
  }
  auto m = std::make_unique<MmapMemory>(o);
  if (Status s = m->open(path); !s.ok()) return s;
  return std::unique_ptr<GraphMemory>(std::move(m));
}

}  // namespace farmem::graph
