#include "farmem/agent/page_source.h"

#include <atomic>
#include <mutex>

#include "farmem/agent/client.h"
#include "farmem/runtime/when_all.h"

namespace farmem::agent {
namespace {

class AgentPageSource : public paged::PageSource {
 public:
  explicit AgentPageSource(client::Cluster& agent) : agent_(agent) {}
  std::string_view name() const override { return "agent"; }

  runtime::Task<Status> fetch(const paged::RemoteLayout& layout,
                              std::span<const paged::PageIo> pages, uint64_t deadline_ns) override {
    AgentClient* c = nullptr;
    FARMEM_CO_RETURN_IF_ERROR(client(&c));
    std::vector<runtime::Task<Status>> parts;
    for (const paged::PageIo& io : pages) {
      const GlobalAddress at = layout.page_address(io.page);
      auto* buf = static_cast<uint8_t*>(io.buf);
      for (uint64_t off = 0; off < layout.page_bytes; off += wire::kMaxReadBytes) {
        const auto n =
            static_cast<uint32_t>(std::min<uint64_t>(wire::kMaxReadBytes, layout.page_bytes - off));
        parts.push_back(c->read(at + off, buf + off, n));
      }
    }
    Status s = first_error(co_await runtime::when_all(std::move(parts)));
    publish(*c);
    co_return s;
  }

  runtime::Task<Status> write_back(const paged::RemoteLayout& layout,
                                   std::span<const paged::PageIo> pages,
                                   uint64_t deadline_ns) override {
    AgentClient* c = nullptr;
    FARMEM_CO_RETURN_IF_ERROR(client(&c));
    std::vector<runtime::Task<Status>> parts;
    for (const paged::PageIo& io : pages) {
      parts.push_back(c->write(layout.page_address(io.page), io.buf, layout.page_bytes));
    }
    Status s = first_error(co_await runtime::when_all(std::move(parts)));
    publish(*c);
    co_return s;
  }

  // A private region's remote memory is fresh when opened and reused by others once closed: the
  // agent must not keep copies of it from before or after. A shared file copy stays (other
  // processes read it through the same entries).
  runtime::Task<Status> region_opened(const paged::RemoteLayout& layout) override {
    co_return co_await invalidate(layout);
  }
  runtime::Task<Status> region_closed(const paged::RemoteLayout& layout) override {
    co_return co_await invalidate(layout);
  }

  runtime::Task<Status> advise(const paged::RemoteLayout& layout, uint64_t first_page,
                               uint64_t page_count, paged::Advice advice) override {
    if (advice != paged::Advice::kStatic || page_count == 0) co_return OkStatus();
    AgentClient* c = nullptr;
    FARMEM_CO_RETURN_IF_ERROR(client(&c));
    // Each stripe's pages of the range are contiguous on its node.
    const uint64_t n = layout.stripes.size();
    const uint64_t last = first_page + page_count - 1;
    for (uint64_t s = 0; s < n && s < page_count; ++s) {
      const uint64_t lo = first_page + s;  // first page of the range on stripe (lo % n)
      const uint64_t hi = last - ((last - lo) % n);
      const uint64_t bytes = ((hi - lo) / n + 1) * layout.page_bytes;
      Status st = co_await c->pin_static(layout.page_address(lo), bytes);
      if (!st.ok()) {
        publish(*c);
        co_return st;
      }
    }
    publish(*c);
    co_return OkStatus();
  }

  runtime::Task<Status> invalidate(const paged::RemoteLayout& layout) {
    if (layout.shared) co_return OkStatus();
    AgentClient* c = nullptr;
    FARMEM_CO_RETURN_IF_ERROR(client(&c));
    for (size_t s = 0; s < layout.stripes.size(); ++s) {
      const uint64_t bytes = layout.stripe_bytes(s);
      if (bytes == 0) continue;
      Status st = co_await c->invalidate(layout.stripes[s], bytes);
      if (!st.ok()) {
        publish(*c);
        co_return st;
      }
    }
    publish(*c);
    co_return OkStatus();
  }

  // The pager thread ends: its AgentClient and the ThreadClient of the agent cluster go with it.
  void pager_exiting() override {
    if (client_ == nullptr) return;
    client_.reset();
    agent_.release_thread_client();
  }

  void traffic(std::vector<paged::PathTraffic>* out) const override {
    out->push_back(paged::PathTraffic{"host->agent", bytes_.load(), messages_.load()});
  }

 private:
  // The pager thread's AgentClient, made on first use there.
  Status client(AgentClient** out) {
    if (client_ == nullptr) {
      auto c = AgentClient::create(agent_);
      if (!c.ok()) return c.status();
      client_ = std::move(*c);
    }
    *out = client_.get();
    return OkStatus();
  }
  void publish(const AgentClient& c) {
    bytes_ = c.traffic().bytes_in + c.traffic().bytes_out;
    messages_ = c.traffic().messages;
  }
  static Status first_error(const std::vector<Status>& results) {
    for (const Status& s : results) {
      if (!s.ok()) return s;
    }
    return OkStatus();
  }

  client::Cluster& agent_;
  std::unique_ptr<AgentClient> client_;  // pager thread only
  std::atomic<uint64_t> bytes_{0}, messages_{0};
};

}  // namespace

std::shared_ptr<paged::PageSource> make_agent_source(client::Cluster& agent) {
  return std::make_shared<AgentPageSource>(agent);
}

}  // namespace farmem::agent
