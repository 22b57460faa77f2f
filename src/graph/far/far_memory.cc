#include "farmem/graph/far_memory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace farmem::graph {

namespace {

class RegionBuffer : public Buffer {
 public:
  RegionBuffer(GraphMemory* owner, paged::Manager* manager, paged::Region* region, uint64_t bytes)
      : owner_(owner), manager_(manager), region_(region), bytes_(bytes) {
    owner_->note_allocated(bytes_);
  }
  ~RegionBuffer() override {
    (void)manager_->free(region_);
    owner_->note_freed(bytes_);
  }
  void* data() override { return region_->data(); }
  uint64_t bytes() const override { return bytes_; }

 private:
  GraphMemory* owner_;
  paged::Manager* manager_;
  paged::Region* region_;
  uint64_t bytes_;
};

// Reads `path` into the region (through this process; faults and write-backs as it goes).
Status copy_file(const std::string& path, uint8_t* dst, uint64_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  uint64_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd, dst + done, std::min<uint64_t>(bytes - done, 8ull << 20),
                              static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Internal(fmt::format("{}: read failed at byte {}", path, done));
    }
    done += n;
  }
  ::close(fd);
  return OkStatus();
}

class FarMemory : public GraphMemory {
 public:
  FarMemory(paged::Manager& manager, FarOptions o) : manager_(manager), o_(std::move(o)) {}
  ~FarMemory() override {
    if (file_ != nullptr) (void)manager_.free(file_);
  }
  std::string_view backend() const override { return "far"; }
  const Graph& graph() const override { return graph_; }

  Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes, std::string_view what,
                                           Access access) override {
    paged::RegionOptions ro;
    ro.page_bytes = o_.page_bytes;
    ro.name = std::string(what);
    switch (access) {
      case Access::kRandom:
        ro.advice = o_.random_array_advice;
        break;
      case Access::kSequential:
        ro.advice = o_.sequential_array_advice;
        break;
      case Access::kScratch:
        ro.advice = paged::Advice::kSequential;
        break;
    }
    ro.source = o_.buffer_source;
    auto r = manager_.allocate(std::max<uint64_t>(bytes, 1), ro);
    if (!r.ok()) return r.status();
    return std::unique_ptr<Buffer>(new RegionBuffer(this, &manager_, *r, bytes));
  }

  MemoryCounters counters() const override {
    const paged::ManagerStats s = manager_.stats();
    return {s.total.faults, s.total.bytes_fetched, s.total.bytes_written_back};
  }

  Status open(const std::string& path, FarLoad* load) {
    auto h = read_fmg_header(path);
    if (!h.ok()) return h.status();
    paged::RegionOptions ro;
    ro.page_bytes = o_.graph_page_bytes != 0 ? o_.graph_page_bytes : o_.page_bytes;
    ro.huge_pages = o_.graph_huge_pages;
    ro.readahead_pages = static_cast<uint32_t>(
        std::clamp<uint64_t>(o_.graph_readahead_bytes / ro.page_bytes, 1, ro.readahead_pages));
    ro.name = "graph " + path;
    ro.source = o_.graph_source;
    std::string why = "no preload name";
    if (!o_.preload_name.empty()) {
      auto r = manager_.allocate_from_file(o_.preload_name, ro);
      if (r.ok() && (*r)->size() < h->file_bytes) {
        why = fmt::format("the preloaded file is {} bytes, {} has {}", (*r)->size(), path,
                          h->file_bytes);
        (void)manager_.free(*r);
      } else if (r.ok()) {
        file_ = *r;
        load->how = "preloaded";
      } else {
        why = r.status().to_string();
      }
    }
    if (file_ == nullptr) {
      auto r = manager_.allocate(h->file_bytes, ro);
      if (!r.ok()) return r.status();
      file_ = *r;
      if (Status s = copy_file(path, static_cast<uint8_t*>(file_->data()), h->file_bytes);
          !s.ok()) {
        return s;
      }
      load->how = "copied";
      load->why_copied = why;
    }
    FmgHeader remote;
    std::memcpy(&remote, file_->data(), sizeof(remote));
    if (Status s = validate_fmg_header(remote, file_->size()); !s.ok()) {
      return Status(s.code(), fmt::format("far copy of {}: {}", path, s.message()));
    }
    graph_ = view_of_fmg(remote, static_cast<const uint8_t*>(file_->data()));
    for (FmgSection sec : {FmgSection::kOffsets, FmgSection::kNeighbours}) {
      const FmgSectionEntry& e = remote.sections[static_cast<uint32_t>(sec)];
      const paged::Advice a = sec == FmgSection::kOffsets ? o_.offsets_advice : o_.graph_advice;
      if (a == paged::Advice::kRandom) continue;
      if (Status s = file_->advise(e.offset, e.bytes, a); !s.ok()) return s;
    }
    return o_.validate ? check_fmg_sections(graph_, path) : OkStatus();
  }

 private:
  paged::Manager& manager_;
  FarOptions o_;
  paged::Region* file_ = nullptr;
  Graph graph_;
};

}  // namespace

Result<std::unique_ptr<GraphMemory>> open_far(paged::Manager& manager, const std::string& path,
                                              const FarOptions& options, FarLoad* load) {
  FarLoad ignored;
  auto m = std::make_unique<FarMemory>(manager, options);
  if (Status s = m->open(path, load != nullptr ? load : &ignored); !s.ok()) return s;
  return std::unique_ptr<GraphMemory>(std::move(m));
}

}  // namespace farmem::graph
