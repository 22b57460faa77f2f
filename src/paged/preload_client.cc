// The file-preload client: memory nodes load a file's pages into memory allocated for a
// region (paged/wire.h, docs/formats/paged.md "Sharing").
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/paged/wire.h"
#include "pager.h"

namespace farmem::paged {

namespace {

struct FileInfo {
  uint64_t bytes = 0;
  uint64_t mtime_ns = 0;
};

runtime::Task<Result<FileInfo>> stat_on(client::ThreadClient* c, uint16_t node, std::string file) {
  std::string req(sizeof(wire::StatRequest), '\0');
  wire::StatRequest q{static_cast<uint32_t>(file.size()), 0};
  std::memcpy(req.data(), &q, sizeof q);
  req += file;
  wire::StatReply reply{};
  uint32_t got = 0;
  Status st = co_await c->rpc(node, static_cast<uint16_t>(wire::Op::kStat), req.data(), req.size(),
                              &reply, sizeof reply, &got);
  FARMEM_CO_TRY(st);
  if (got != sizeof reply) co_return ProtocolError("preload: short stat reply");
  co_return FileInfo{reply.file_bytes, reply.mtime_ns};
}

// Loads stripe s of the layout (pages s, s + N, ...) into `dst` on its node, in chunks.
runtime::Task<Status> load_stripe(client::ThreadClient* c, const RemoteLayout* layout, size_t s,
                                  GlobalAddress dst, std::string file, FileInfo info) {
  const uint64_t n = layout->stripes.size();
  const uint64_t pages = layout->stripe_bytes(s) / layout->page_bytes;
  const uint64_t per_request = std::max<uint64_t>(1, wire::kMaxLoadBytes / layout->page_bytes);
  for (uint64_t k = 0; k < pages; k += per_request) {
    wire::LoadRequest q{};
    q.dst_offset = dst.offset() + k * layout->page_bytes;
    q.first_page = s + k * n;
    q.expect_file_bytes = info.bytes;
    q.expect_mtime_ns = info.mtime_ns;
    q.page_stride = static_cast<uint32_t>(n);
    q.page_count = static_cast<uint32_t>(std::min(per_request, pages - k));
    q.page_bytes = static_cast<uint32_t>(layout->page_bytes);
    q.name_bytes = static_cast<uint32_t>(file.size());
    std::string req(sizeof q, '\0');
    std::memcpy(req.data(), &q, sizeof q);
    req += file;
    wire::LoadReply reply{};
    uint32_t got = 0;
    Status st = co_await c->rpc(dst.node(), static_cast<uint16_t>(wire::Op::kLoad), req.data(),
                                req.size(), &reply, sizeof reply, &got);
    FARMEM_CO_TRY(st);
    if (got != sizeof reply) co_return ProtocolError("preload: short load reply");
  }
  co_return OkStatus();
}

// FNV-1a, for the shared copy's object name (stable across processes).
uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001b3ull;
  }
  return h;
}

// The shared copy of stripe s: a named object on its node holding the stripe's memory, and a
// root "<object name>:<object id>" with its address, published once the stripe is loaded.
// The first process creates (ephemeral while loading, persisted once published); the others
// open it and wait for the root.
runtime::Task<Result<GlobalAddress>> shared_stripe(PageManager::Impl* m, const RemoteLayout* layout,
                                                   size_t s, std::string key, std::string file,
                                                   FileInfo info) {
  client::ThreadClient* c = m->client;
  const uint16_t node = layout->stripes[s].node();
  const std::string name = fmt::format("paged:{}:{}", key, s);
  const uint64_t give_up = now_ns() + 4 * m->op_timeout_ns;
  for (;;) {
    auto created = co_await c->object_create(node, name, true);
    if (created.ok()) {
      const uint64_t id = *created;
      auto a = co_await c->allocate_on(node, layout->stripe_bytes(s), 4096, id);
      Status st = a.status();  // no co_await inside ?: (g++ 12 miscompiles its temporaries)
      if (st.ok()) st = co_await load_stripe(c, layout, s, *a, file, info);
      if (st.ok()) st = co_await c->publish_root(fmt::format("{}:{}", name, id), *a, true);
      if (st.ok()) st = co_await c->object_persist(node, id);
      if (!st.ok()) {
        (void)co_await c->object_destroy(node, id);
        co_return st;
      }
      co_return *a;
    }
    if (created.status().code() != StatusCode::kAlreadyExists) co_return created.status();
    auto opened = co_await c->object_open(node, name);
    if (opened.ok()) {
      auto root = co_await c->lookup_root(fmt::format("{}:{}", name, *opened));
      if (root.ok()) co_return *root;
      if (root.status().code() != StatusCode::kNotFound) co_return root.status();
    } else if (opened.status().code() != StatusCode::kNotFound) {
      co_return opened.status();
    }
    // Another process is loading it (or its creator just died): wait and look again.
    if (now_ns() > give_up) {
      co_return TimedOut(fmt::format("preload: the shared copy of {} did not become ready", file));
    }
    co_await m->scheduler->sleep_for_ns(2'000'000);
  }
}

}  // namespace

runtime::Task<Status> preload_file(PageManager::Impl* m, const std::string& file, bool share,
                                   RemoteLayout* layout, uint64_t* file_bytes) {
  client::ThreadClient* c = m->client;
  const auto& nodes = m->cluster->nodes();
  // Every node reads its own copy of the file: they must agree on the size.
  std::vector<FileInfo> infos;
  for (const auto& node : nodes) {
    auto info = co_await stat_on(c, node.node_id, file);
    FARMEM_CO_TRY(info);
    infos.push_back(*info);
    if (info->bytes != infos[0].bytes) {
      co_return InvalidArgument(
          fmt::format("preload: memory nodes hold different sizes of {}", file));
    }
  }
  if (infos[0].bytes == 0) co_return InvalidArgument(fmt::format("preload: {} is empty", file));
  *file_bytes = infos[0].bytes;
  layout->page_count = (infos[0].bytes + layout->page_bytes - 1) / layout->page_bytes;
  layout->file = file;
  layout->shared = share;
  const size_t n = std::min<uint64_t>(nodes.size(), layout->page_count);
  std::string key;
  if (share) {
    key = fmt::format("{}/{}/{}/{}", layout->page_bytes, n, infos[0].bytes, file);
    for (size_t s = 0; s < n; ++s) key.append(fmt::format("/{}", infos[s].mtime_ns));
    key = fmt::format("{:016x}", fnv1a(key));
  }
  for (size_t s = 0; s < n; ++s) layout->stripes.push_back(GlobalAddress(nodes[s].node_id, 0));
  for (size_t s = 0; s < n; ++s) {
    if (share) {
      auto a = co_await shared_stripe(m, layout, s, key, file, infos[s]);
      FARMEM_CO_TRY(a);
      layout->stripes[s] = *a;
      continue;
    }
    auto a = co_await c->allocate_on(nodes[s].node_id, layout->stripe_bytes(s), 4096);
    Status st = a.status();  // no co_await inside ?: (g++ 12 miscompiles its temporaries)
    if (st.ok()) st = co_await load_stripe(c, layout, s, *a, file, infos[s]);
    if (!st.ok()) {
      if (a.ok()) (void)co_await c->free_on(*a);
      for (size_t k = 0; k < s; ++k) (void)co_await c->free_on(layout->stripes[k]);
      co_return st;
    }
    layout->stripes[s] = *a;
  }
  co_return OkStatus();
}

}  // namespace farmem::paged
