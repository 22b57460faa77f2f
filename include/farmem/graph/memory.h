// GraphMemory: where a graph's CSR sections and an algorithm's vertex arrays live.
//
// A backend opens a .fmg file and exposes its sections as ordinary pointers (graph()), and
// allocates zero-filled buffers for vertex arrays and frontiers (allocate()). Algorithms only
// ever touch memory through these pointers, so the same code runs on DRAM (local), a file
// mapping (mmap) or paged far-memory regions (far).
//
//  * local: the file is read into DRAM; buffers are DRAM. Both are anonymous mappings asked onto
//    transparent huge pages (MADV_HUGEPAGE), which Debian's THP "madvise" mode needs.
//  * mmap: the file is mapped read-only (MAP_SHARED); buffers are MAP_SHARED mappings of
//    unlinked temporary files in MmapOptions::temp_dir, so that under a memory cgroup without
//    swap the kernel can write them back and drop them like the graph's pages. `advice` is
//    applied to every mapping (random: MADV_RANDOM, no readahead). counters(): the process's
//    major faults and /proc/self/io read_bytes / write_bytes (cumulative; callers subtract).
//
// Thread safety: graph() and the returned pointers are used by any thread; allocate() and
// counters() by one thread at a time (the algorithm's driver).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "farmem/common/result.h"
#include "farmem/graph/format.h"
#include "farmem/graph/graph.h"

namespace farmem::graph {

// How an algorithm will touch a buffer (a hint: the far backend keeps kRandom and then
// kSequential arrays resident while its pin room lasts and reads ahead in kSequential and
// kScratch ones; local and mmap ignore it).
enum class Access : uint8_t {
  kRandom,      // indexed by vertex id in edge order (depths, labels, contributions, flags)
  kSequential,  // state swept in order, round after round (PageRank's rank vectors)
  kScratch,     // swept in order and short-lived or mostly unused (frontier id lists)
};

// A zero-filled buffer owned by a backend; freed when destroyed.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual uint64_t bytes() const = 0;
};

// Counters of the paging a backend did, cumulative (zeros where the backend has none).
struct MemoryCounters {
  uint64_t faults = 0;
  uint64_t bytes_fetched = 0;
  uint64_t bytes_written_back = 0;
};

class GraphMemory {
 public:
  virtual ~GraphMemory() = default;
  virtual std::string_view backend() const = 0;
  virtual const Graph& graph() const = 0;
  // The same graph for sparse rounds over at most sparse_limit() frontier vertices: the far
  // backend maps it a second time on small pages when its graph() region has large ones (a
  // round touching a few hundred lists then fetches a few hundred small pages, not as many
  // 2 MiB ones). Elsewhere graph() itself, limit 0.
  virtual const Graph& sparse_graph() const { return graph(); }
  virtual uint64_t sparse_limit() const { return 0; }
  // A hint before a sparse round reads the lists of ids[0..n) in the view `g`: the far backend
  // fetches their pages in batches (paged::Region::prefetch of ranges) instead of one fault
  // at a time. Called from the calling thread only; errors are left to the faults.
  virtual void will_read(const Graph& g, const uint32_t* ids, uint64_t n) {}
  virtual Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes, std::string_view what,
                                                   Access access) = 0;
  virtual MemoryCounters counters() const { return {}; }
  // Unmaps the graph's resident pages from this process where that is possible (mmap:
  // MADV_DONTNEED), so that dropping the page cache then really empties it; a no-op elsewhere.
  virtual void drop_resident() {}
  // Whether the graph is read a page at a time (mmap, far), so that an algorithm reading its
  // lists in address order fetches each page once; not for local DRAM, where sorting costs.
  virtual bool reads_by_page() const { return true; }
  // Bytes of the graph's sections (payload, without padding).
  uint64_t graph_bytes() const;
  // Peak bytes of live buffers since the last reset_peak().
  uint64_t peak_buffer_bytes() const { return peak_buffer_bytes_; }
  void reset_peak() { peak_buffer_bytes_ = live_buffer_bytes_; }

  // Backends (and their buffers) record allocations and frees for peak_buffer_bytes().
  void note_allocated(uint64_t bytes);
  void note_freed(uint64_t bytes) { live_buffer_bytes_ -= bytes; }

 private:
  uint64_t live_buffer_bytes_ = 0, peak_buffer_bytes_ = 0;
};

// A typed array over a Buffer (count elements of T, zero-filled at allocation).
template <typename T>
class Array {
 public:
  Array() = default;
  explicit Array(std::unique_ptr<Buffer> buffer)
      : buffer_(std::move(buffer)),
        data_(static_cast<T*>(buffer_->data())),
        size_(buffer_->bytes() / sizeof(T)) {}
  T* data() const { return data_; }
  uint64_t size() const { return size_; }
  T& operator[](uint64_t i) const { return data_[i]; }
  bool empty() const { return buffer_ == nullptr; }

 private:
  std::unique_ptr<Buffer> buffer_;
  T* data_ = nullptr;
  uint64_t size_ = 0;
};

template <typename T>
Result<Array<T>> allocate_array(GraphMemory& memory, uint64_t count, std::string_view what,
                                Access access = Access::kRandom) {
  auto b = memory.allocate(count * sizeof(T) > 0 ? count * sizeof(T) : sizeof(T), what, access);
  FARMEM_TRY(b);
  return Array<T>(std::move(*b));
}

// The graph view of a .fmg file whose bytes (header included) start at `base`.
Graph view_of_fmg(const FmgHeader& h, const uint8_t* base);
// The offsets must start at 0, never decrease and end at E, and neighbour ids must be < V, or
// an algorithm would index out of bounds: O(V + E), kInvalidArgument naming the first fault.
// local and mmap check at open; far on request (FarOptions::validate).
Status check_fmg_sections(const Graph& g, const std::string& path);

// The local backend: reads `path` into DRAM.
Result<std::unique_ptr<GraphMemory>> open_local(const std::string& path);

struct MmapOptions {
  std::string advice = "default";  // default | random
  std::string temp_dir = "/tmp";   // the vertex arrays' files (a disk file system, not tmpfs)
};
Result<std::unique_ptr<GraphMemory>> open_mmap(const std::string& path, const MmapOptions& o);

}  // namespace farmem::graph
