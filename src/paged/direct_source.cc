// The direct PageSource: one-sided reads and writes from the pager thread's ThreadClient.
#include <atomic>
#include <memory>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/paged/page_source.h"

namespace farmem::paged {

std::string_view advice_name(Advice a) {
  switch (a) {
    case Advice::kRandom:
      return "random";
    case Advice::kSequential:
      return "sequential";
    case Advice::kStatic:
      return "static";
  }
  return "?";
}

runtime::Task<Status> PageSource::region_opened(const RemoteLayout&) { co_return OkStatus(); }
runtime::Task<Status> PageSource::region_closed(const RemoteLayout&) { co_return OkStatus(); }
runtime::Task<Status> PageSource::advise(const RemoteLayout&, uint64_t, uint64_t, Advice) {
  co_return OkStatus();
}

namespace {

class DirectSource final : public PageSource {
 public:
  std::string_view name() const override { return "direct"; }
  runtime::Task<Status> fetch(const RemoteLayout& layout, std::span<const PageIo> pages,
                              uint64_t deadline_ns) override {
    return transfer(&layout, pages, deadline_ns, false);
  }
  runtime::Task<Status> write_back(const RemoteLayout& layout, std::span<const PageIo> pages,
                                   uint64_t deadline_ns) override {
    return transfer(&layout, pages, deadline_ns, true);
  }
  void traffic(std::vector<PathTraffic>* out) const override {
    out->push_back(PathTraffic{"host->memnode", bytes_.load(std::memory_order_relaxed),
                               messages_.load(std::memory_order_relaxed)});
  }

 private:
  // One Batch per memory node, all posted before any is awaited.
  runtime::Task<Status> transfer(const RemoteLayout* layout, std::span<const PageIo> pages,
                                 uint64_t deadline_ns, bool write) {
    client::ThreadClient* c = pager_client();
    if (c == nullptr) co_return Internal("paged: direct source used off the pager thread");
    if (pages.size() > kMaxPagesPerCall) co_return InvalidArgument("paged: too many pages");
    const size_t n = layout->stripes.size();
    std::vector<std::unique_ptr<client::Batch>> batches(n);
    Status first;
    for (const PageIo& p : pages) {
      const size_t s = p.page % n;
      if (!batches[s]) batches[s] = std::make_unique<client::Batch>(*c, deadline_ns);
      const GlobalAddress a = layout->page_address(p.page);
      Status st = write ? batches[s]->write(a, p.buf, layout->page_bytes)
                        : batches[s]->read(a, p.buf, layout->page_bytes);
      if (!st.ok() && first.ok()) first = st;
    }
    for (auto& b : batches) {
      if (!b) continue;
      Status st = co_await b->wait();
      if (!st.ok() && first.ok()) first = st;
      messages_.fetch_add(b->size(), std::memory_order_relaxed);
    }
    if (first.ok()) bytes_.fetch_add(pages.size() * layout->page_bytes, std::memory_order_relaxed);
    co_return first;
  }

  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> messages_{0};
};

}  // namespace

std::shared_ptr<PageSource> make_direct_source() { return std::make_shared<DirectSource>(); }

}  // namespace farmem::paged
