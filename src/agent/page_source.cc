#include "farmem/agent/page_source.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "farmem/agent/client.h"
#include "farmem/runtime/when_all.h"

namespace farmem::agent {
namespace {

class AgentPageSource : public paged::PageSource {
 public:
  AgentPageSource(client::Cluster& agent, const AgentSourceOptions& options)
      : agent_(agent), options_(options) {}
  std::string_view name() const override { return "agent"; }

  runtime::Task<Status> fetch(const paged::RemoteLayout& layout,
                              std::span<const paged::PageIo> pages, uint64_t deadline_ns) override {
    AgentClient* c = nullptr;
    FARMEM_CO_TRY(client(&c));
    std::vector<runtime::Task<Status>> parts;
    for (const paged::PageIo& io : pages) {
      const GlobalAddress at = layout.page_address(io.page);
      auto* buf = static_cast<uint8_t*>(io.buf);
      for (uint64_t off = 0; off < layout.page_bytes; off += wire::kMaxReadBytes) {
        const auto n =
            static_cast<uint32_t>(std::min<uint64_t>(wire::kMaxReadBytes, layout.page_bytes - off));
        parts.push_back(c->read(at + off, buf + off, n, read_flags()));
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
    FARMEM_CO_TRY(client(&c));
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
    FARMEM_CO_TRY(co_await invalidate(layout));
    if (!options_.pin_static || layout.shared) co_return OkStatus();
    co_return co_await pin_whole(layout);
  }
  runtime::Task<Status> region_closed(const paged::RemoteLayout& layout) override {
    co_return co_await invalidate(layout);
  }

  runtime::Task<Status> advise(const paged::RemoteLayout& layout, uint64_t first_page,
                               uint64_t page_count, paged::Advice advice) override {
    if (advice != paged::Advice::kStatic || page_count == 0 || !options_.pin_advised) {
      co_return OkStatus();
    }
    AgentClient* c = nullptr;
    FARMEM_CO_TRY(client(&c));
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

  // Pins every stripe of the region in the agent's static cache; a refusal (budget, static
  // caching off) leaves the region uncached (counted, one warning), other errors fail.
  runtime::Task<Status> pin_whole(const paged::RemoteLayout& layout) {
    AgentClient* c = nullptr;
    FARMEM_CO_TRY(client(&c));
    Status st;
    for (size_t s = 0; s < layout.stripes.size() && st.ok(); ++s) {
      const uint64_t bytes = layout.stripe_bytes(s);
      if (bytes != 0) st = co_await c->pin_static(layout.stripes[s], bytes);
    }
    publish(*c);
    const StatusCode code = st.code();
    if (code == StatusCode::kResourceExhausted || code == StatusCode::kPermissionDenied ||
        code == StatusCode::kInvalidArgument) {
      if (refusals_.fetch_add(1) == 0) {
        fmt::print(stderr,
                   "farmem agent source: the agent refused a static pin ({}); regions it "
                   "refuses are served uncached\n",
                   st.to_string());
      }
      co_return OkStatus();
    }
    co_return st;
  }

  uint64_t refusals() const { return refusals_.load(); }
  uint32_t read_flags() const { return options_.dynamic_cache ? 0 : wire::kReadNoDynamic; }

  runtime::Task<Status> invalidate(const paged::RemoteLayout& layout) {
    if (layout.shared) co_return OkStatus();
    AgentClient* c = nullptr;
    FARMEM_CO_TRY(client(&c));
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
      FARMEM_TRY(c);
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
      FARMEM_TRY(s);
    }
    return OkStatus();
  }

  client::Cluster& agent_;
  const AgentSourceOptions options_;
  std::unique_ptr<AgentClient> client_;  // pager thread only
  std::atomic<uint64_t> bytes_{0}, messages_{0}, refusals_{0};
};

}  // namespace

std::shared_ptr<paged::PageSource> make_agent_source(client::Cluster& agent,
                                                     const AgentSourceOptions& options) {
  return std::make_shared<AgentPageSource>(agent, options);
}

uint64_t pin_refusals(const paged::PageSource& source) {
  const auto* a = dynamic_cast<const AgentPageSource*>(&source);
  return a != nullptr ? a->refusals() : 0;
}

}  // namespace farmem::agent
