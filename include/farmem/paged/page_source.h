// PageSource: how a paged region gets its pages from far memory and puts them back.
//
// A region's pages live on memory nodes at the addresses its RemoteLayout gives (page i on
// stripe i % N, at stripes[i % N] + (i / N) * page_bytes). The PageManager's pager thread calls a
// PageSource to fetch pages into local buffers (staging buffers it then installs in the
// region) and to write pages back (from the region's own, write-protected, frames).
//
// The direct source (make_direct_source) uses the pager thread's ThreadClient: one Batch of
// one-sided operations per memory node per call. The agent helper's source sends the same
// requests to farmem-agent instead. Both report their traffic per path.
//
// Contract for implementations:
//  - Every method runs on the PageManager's pager thread, whose Scheduler is installed there
//    (runtime::Scheduler::current()); Cluster::thread_client() on that thread gives the
//    pager's ThreadClient. Several fetch/write_back coroutines may be in flight at once.
//  - fetch fills every PageIo::buf (page_bytes each) or returns an error; write_back returns
//    OK only once every page is stored where a later fetch (by any process sharing the
//    remote memory) reads it. No operation outlives its deadline_ns (absolute, now_ns()).
//  - A buffer stays valid until the call's Task completes; a source never keeps it.
//  - At most kMaxPagesPerCall pages per call.
// Thread safety: methods on the pager thread only; traffic() from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/client/global_address.h"
#include "farmem/common/status.h"
#include "farmem/runtime/task.h"

namespace farmem::client {
class ThreadClient;
}

namespace farmem::paged {

// Where a region's pages live on the memory nodes.
struct RemoteLayout {
  uint64_t region_id = 0;   // unique in the process
  uint64_t page_bytes = 0;  // power of two, >= 4 KiB
  uint64_t page_count = 0;
  // One allocation per memory node (in the cluster's node order); page i is on stripe i % N.
  std::vector<GlobalAddress> stripes;
  // For a file-preloaded region: the file's name in the nodes' preload_dir ("" otherwise), and
  // whether its remote copy is shared with other processes (read-mostly).
  std::string file;
  bool shared = false;

  GlobalAddress page_address(uint64_t page) const {
    const uint64_t n = stripes.size();
    return stripes[page % n] + (page / n) * page_bytes;
  }
  uint16_t page_node(uint64_t page) const { return stripes[page % stripes.size()].node(); }
  // Bytes of stripe s (pages s, s + N, ...).
  uint64_t stripe_bytes(size_t s) const {
    const uint64_t n = stripes.size();
    return (page_count / n + (s < page_count % n ? 1 : 0)) * page_bytes;
  }
};

// One page of one call: its index in the region and the local buffer (page_bytes).
struct PageIo {
  uint64_t page = 0;
  void* buf = nullptr;
};

// Bytes and messages on one path, e.g. "host->memnode", "host->agent", "agent->memnode".
struct PathTraffic {
  std::string path;
  uint64_t bytes = 0;
  uint64_t messages = 0;
};

// How a range of a region will be used (Region::advise).
enum class Advice : uint8_t {
  kRandom,      // no read-ahead (the default)
  kSequential,  // fetch ahead of faults
  kStatic,      // keep resident (pinned, within half the budget); the agent may cache it whole
};
std::string_view advice_name(Advice a);

class PageSource {
 public:
  static constexpr size_t kMaxPagesPerCall = 64;
  virtual ~PageSource() = default;
  virtual std::string_view name() const = 0;  // "direct", "agent", ...
  virtual runtime::Task<Status> fetch(const RemoteLayout& layout, std::span<const PageIo> pages,
                                      uint64_t deadline_ns) = 0;
  virtual runtime::Task<Status> write_back(const RemoteLayout& layout,
                                           std::span<const PageIo> pages, uint64_t deadline_ns) = 0;
  // Hints (default: nothing to do). A region was created / is about to be released; a range
  // of pages was advised.
  virtual runtime::Task<Status> region_opened(const RemoteLayout& layout);
  virtual runtime::Task<Status> region_closed(const RemoteLayout& layout);
  virtual runtime::Task<Status> advise(const RemoteLayout& layout, uint64_t first_page,
                                       uint64_t page_count, Advice advice);
  // Optional zero-copy: a pointer through which `page` can be read in place now (for example a
  // memory node's region mapped into this process), or null to have it fetched. The pager
  // installs the page straight from it (UFFDIO_COPY) before it runs anything else. Counted as
  // traffic by the source.
  virtual const void* page_in_place(const RemoteLayout& layout, uint64_t page) { return nullptr; }
  // Called on the pager thread when it ends (after every region is freed), once per source
  // the PageManager used: a source that made ThreadClients on the pager thread (for example of
  // its own cluster) releases them here, while the pager's scheduler still exists.
  virtual void pager_exiting() {}
  // Appends this source's counters (one entry per path it uses).
  virtual void traffic(std::vector<PathTraffic>* out) const = 0;
};

// The pager thread's ThreadClient when called on a PageManager's pager thread, else null (for
// sources: the direct source uses it; others may use their own clusters).
client::ThreadClient* pager_client();

// The direct source: one-sided reads and writes from the pager thread's ThreadClient, one
// Batch per memory node per call (path "host->memnode").
std::shared_ptr<PageSource> make_direct_source();

}  // namespace farmem::paged
