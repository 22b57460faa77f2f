#include "farmem/graph/far_memory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace farmem::graph {

namespace {

constexpr uint64_t kMaxGraphReadahead = paged::PageSource::kMaxPagesPerCall;  // pages

class RegionBuffer : public Buffer {
 public:
  RegionBuffer(GraphMemory* owner, paged::PageManager* manager, paged::Region* region,
               uint64_t bytes)
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
  paged::PageManager* manager_;
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
  FarMemory(paged::PageManager& manager, FarOptions o) : manager_(manager), o_(std::move(o)) {}
  ~FarMemory() override {
    if (sparse_file_ != nullptr) (void)manager_.free(sparse_file_);
    if (file_ != nullptr) (void)manager_.free(file_);
  }
  std::string_view backend() const override { return "far"; }
  const Graph& graph() const override { return graph_; }
  const Graph& sparse_graph() const override {
    return sparse_file_ != nullptr ? sparse_graph_ : graph_;
  }
  uint64_t sparse_limit() const override { return sparse_limit_; }
  // Only for the sparse view (small pages, few lists): the huge view's sweeps read ahead.
  void will_read(const Graph& g, const uint32_t* ids, uint64_t n) override {
    if (sparse_file_ == nullptr || g.neighbours != sparse_graph_.neighbours) return;
    const auto* base = static_cast<const uint8_t*>(sparse_file_->data());
    const auto* nbr = reinterpret_cast<const uint8_t*>(g.neighbours);
    std::vector<paged::Region::Range> ranges;
    ranges.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t v = ids[i];
      if (g.degree(v) == 0) continue;
      ranges.push_back({static_cast<uint64_t>(nbr - base) + g.offsets[v] * sizeof(uint32_t),
                        g.degree(v) * sizeof(uint32_t)});
    }
    (void)sparse_file_->prefetch(ranges);  // a hint: a page it could not fetch faults later
  }

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
    FARMEM_TRY(r);
    return std::unique_ptr<Buffer>(new RegionBuffer(this, &manager_, *r, bytes));
  }

  MemoryCounters counters() const override {
    const paged::ManagerStats s = manager_.stats();
    return {s.total.faults, s.total.bytes_fetched, s.total.bytes_written_back};
  }

  Status open(const std::string& path, FarLoad* load) {
    auto h = read_fmg_header(path);
    FARMEM_TRY(h);
    paged::RegionOptions ro;
    ro.page_bytes = o_.graph_page_bytes != 0 ? o_.graph_page_bytes : o_.page_bytes;
    ro.huge_pages = o_.graph_huge_pages;
    ro.readahead_pages = static_cast<uint32_t>(
        std::clamp<uint64_t>(o_.graph_readahead_bytes / ro.page_bytes, 1, kMaxGraphReadahead));
    ro.name = "graph " + path;
    ro.source = o_.graph_source;
    auto file = load_region(path, h->file_bytes, ro, load);
    FARMEM_TRY(file);
    file_ = *file;
    auto g = view(path, file_);
    FARMEM_TRY(g);
    graph_ = *g;
    for (FmgSection sec : {FmgSection::kOffsets, FmgSection::kNeighbours}) {
      const FmgSectionEntry& e = section(sec);
      const paged::Advice a = sec == FmgSection::kOffsets ? o_.offsets_advice : o_.graph_advice;
      if (a == paged::Advice::kRandom) continue;
      if (Status s = file_->advise(e.offset, e.bytes, a); !s.ok()) return s;
    }
    if (o_.validate) FARMEM_TRY(check_fmg_sections(graph_, path));
    if (ro.page_bytes <= o_.page_bytes || !o_.sparse_view) return OkStatus();
    // The sparse view: the file again on small pages, random advice (no read-ahead).
    paged::RegionOptions small;
    small.page_bytes = o_.page_bytes;
    small.name = "graph (sparse rounds) " + path;
    small.source = o_.graph_source;
    FarLoad second_load;
    auto second = load_region(path, h->file_bytes, small, &second_load);
    if (!second.ok() && second.status().code() == StatusCode::kResourceExhausted) {
      load->sparse_view = "none (" + second.status().to_string() + ")";  // an optimisation only
      return OkStatus();
    }
    FARMEM_TRY(second);
    sparse_file_ = *second;
    auto sg = view(path, sparse_file_);
    FARMEM_TRY(sg);
    sparse_graph_ = *sg;
    // A round over n lists touches at most n pages of either view; the small view wins while n
    // small pages cost less than the large pages the same lists touch (copying small pages
    // costs the kernel about 3x more per byte: paged::RegionOptions::huge_pages).
    sparse_limit_ = section(FmgSection::kNeighbours).bytes / (3 * o_.page_bytes);
    load->sparse_view = fmt::format("a second copy on {}-byte pages ({}), up to {} vertices",
                                    o_.page_bytes, second_load.how, sparse_limit_);
    return OkStatus();
  }

 private:
  // The file in a region: preloaded by the memory nodes when they can, else copied in.
  Result<paged::Region*> load_region(const std::string& path, uint64_t file_bytes,
                                     const paged::RegionOptions& ro, FarLoad* load) {
    std::string why = "no preload name";
    if (!o_.preload_name.empty()) {
      auto r = manager_.allocate_from_file(o_.preload_name, ro);
      if (r.ok() && (*r)->size() >= file_bytes) {
        load->how = "preloaded";
        return *r;
      }
      if (r.ok()) {
        why = fmt::format("the preloaded file is {} bytes, {} has {}", (*r)->size(), path,
                          file_bytes);
        (void)manager_.free(*r);
      } else {
        why = r.status().to_string();
      }
    }
    auto r = manager_.allocate(file_bytes, ro);
    FARMEM_TRY(r);
    if (Status s = copy_file(path, static_cast<uint8_t*>((*r)->data()), file_bytes); !s.ok()) {
      (void)manager_.free(*r);
      return s;
    }
    load->how = "copied";
    load->why_copied = why;
    return *r;
  }

  // The graph as the region's copy of the file describes it (header checked).
  Result<Graph> view(const std::string& path, paged::Region* region) {
    std::memcpy(&header_, region->data(), sizeof(header_));
    if (Status s = validate_fmg_header(header_, region->size()); !s.ok()) {
      return Status(s.code(), fmt::format("far copy of {}: {}", path, s.message()));
    }
    return view_of_fmg(header_, static_cast<const uint8_t*>(region->data()));
  }
  const FmgSectionEntry& section(FmgSection s) const {
    return header_.sections[static_cast<uint32_t>(s)];
  }

  paged::PageManager& manager_;
  FarOptions o_;
  paged::Region* file_ = nullptr;
  paged::Region* sparse_file_ = nullptr;  // the sparse view's region (null: none)
  FmgHeader header_{};
  Graph graph_;
  Graph sparse_graph_;
  uint64_t sparse_limit_ = 0;
};

}  // namespace

Result<std::unique_ptr<GraphMemory>> open_far(paged::PageManager& manager, const std::string& path,
                                              const FarOptions& options, FarLoad* load) {
  FarLoad ignored;
  auto m = std::make_unique<FarMemory>(manager, options);
  if (Status s = m->open(path, load != nullptr ? load : &ignored); !s.ok()) return s;
  return std::unique_ptr<GraphMemory>(std::move(m));
}

}  // namespace farmem::graph
