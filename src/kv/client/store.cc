#include "farmem/kv/store.h"

#include <fmt/format.h>

#include "farmem/client/cluster.h"
#include "farmem/kv/codec.h"
#include "farmem/kv/pool.h"
#include "pool_context.h"

namespace farmem::kv {

namespace w = wire;
using runtime::Task;

const char* kv_mode_name(KvMode mode) {
  switch (mode) {
    case KvMode::kRpc:
      return "rpc";
    case KvMode::kOneTwoSided:
      return "one-two-sided";
    case KvMode::kAuto:
      return "auto";
  }
  return "?";
}

Result<KvMode> parse_kv_mode(std::string_view text) {
  if (text == "rpc") return KvMode::kRpc;
  if (text == "one-two-sided") return KvMode::kOneTwoSided;
  if (text == "auto") return KvMode::kAuto;
  return InvalidArgument(fmt::format("kv mode '{}': expected rpc, one-two-sided or auto", text));
}

namespace {

Status check_name(std::string_view name) {
  if (name.empty() || name.size() > w::kMaxPoolNameBytes) {
    return InvalidArgument(
        fmt::format("pool names are 1..{} bytes, not {}", w::kMaxPoolNameBytes, name.size()));
  }
  return OkStatus();
}

}  // namespace

Store::Store(client::ThreadClient* client, const StoreOptions& options)
    : client_(client),
      options_(options),
      context_(std::make_unique<PoolContext>(client, options)) {}

Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::open(client::ThreadClient* client, StoreOptions options) {
  if (client == nullptr) return InvalidArgument("kv::Store needs a ThreadClient");
  if (options.location_cache_log2 > 30) {
    return InvalidArgument(
        fmt::format("location_cache_log2 {} is above 30", options.location_cache_log2));
  }
  if (options.max_batch < 1 || options.max_batch > w::kMaxOpsPerMessage) {
    return InvalidArgument(
        fmt::format("max_batch {} is outside 1..{}", options.max_batch, w::kMaxOpsPerMessage));
  }
  if (options.max_in_flight < 1 || options.max_in_flight > 256) {
    return InvalidArgument(
        fmt::format("max_in_flight {} is outside 1..256", options.max_in_flight));
  }
  return std::unique_ptr<Store>(new Store(client, options));
}

uint16_t Store::node_of(std::string_view name) const { return client_->cluster().root_node(name); }

bool Store::one_sided(uint16_t node) const { return context_->one_sided(node); }

StoreStats Store::stats() const {
  StoreStats s = context_->stats;
  s.ops_messages = context_->coalescer.messages();
  s.coalesced_ops = context_->coalescer.ops();
  return s;
}

Task<Result<std::unique_ptr<Pool>>> Store::open_or_create(w::KvOpcode opcode, std::string name,
                                                          uint64_t capacity_bytes,
                                                          uint64_t expected_count, uint32_t flags) {
  FARMEM_CO_TRY(check_name(name));
  if ((flags & ~(w::kPoolCreateOnly | w::kPoolReadOnly | w::kPoolTemporary)) != 0) {
    co_return InvalidArgument(fmt::format("unknown pool flags {:#x}", flags));
  }
  const uint16_t node = node_of(name);
  std::vector<uint8_t> reply;
  Status s = co_await context_->call(
      node, opcode, encode_pool_request(name, capacity_bytes, expected_count, flags), &reply,
      sizeof(w::KvPoolReply));
  FARMEM_CO_TRY(s);
  w::KvPoolReply r;
  FARMEM_CO_TRY(decode_fixed(reply.data(), reply.size(), &r));
  co_return std::make_unique<Pool>(context_.get(), std::move(name), node, r, next_pool_id_++);
}

Task<Result<std::unique_ptr<Pool>>> Store::create_pool(std::string name, uint64_t capacity_bytes,
                                                       uint64_t expected_count, uint32_t flags) {
  if (capacity_bytes < w::kMinPoolCapacity) {
    co_return InvalidArgument(fmt::format("pool capacity {} is below the minimum of {} bytes",
                                          capacity_bytes, w::kMinPoolCapacity));
  }
  auto r = co_await open_or_create(w::KvOpcode::kPoolCreate, std::move(name), capacity_bytes,
                                   expected_count, flags);
  co_return r;
}

Task<Result<std::unique_ptr<Pool>>> Store::open_pool(std::string name, uint32_t flags) {
  if ((flags & (w::kPoolCreateOnly | w::kPoolTemporary)) != 0) {
    co_return InvalidArgument("kPoolCreateOnly and kPoolTemporary are create_pool flags");
  }
  auto r = co_await open_or_create(w::KvOpcode::kPoolOpen, std::move(name), 0, 0, flags);
  co_return r;
}

Task<Status> Store::close_pool(Pool& pool) {
  Status s = co_await pool.close();
  co_return s;
}

Task<Status> Store::delete_pool(std::string name) {
  FARMEM_CO_TRY(check_name(name));
  std::vector<uint8_t> reply;
  Status s = co_await context_->call(node_of(name), w::KvOpcode::kPoolDelete,
                                     encode_pool_request(name, 0, 0, 0), &reply, 0);
  co_return s;
}

Task<Result<std::vector<PoolListing>>> Store::list_pools() {
  std::vector<PoolListing> all;
  for (const auto& n : client_->cluster().nodes()) {
    uint32_t start = 0;
    for (;;) {
      std::vector<uint8_t> reply;
      Status s = co_await context_->call(n.node_id, w::KvOpcode::kPoolList, encode_list(start),
                                         &reply, w::kMaxRpcPayloadBytes);
      FARMEM_CO_TRY(s);
      uint32_t entries = 0, total = 0;
      FARMEM_CO_TRY(decode_list(reply.data(), reply.size(), n.node_id, &all, &entries, &total));
      start += entries;
      if (entries == 0 || start >= total) break;
    }
  }
  co_return all;
}

Task<Result<std::vector<w::KvShardStats>>> Store::shard_stats(uint16_t node) {
  std::vector<uint8_t> reply;
  Status s = co_await context_->call(node, w::KvOpcode::kShardStats, std::string(), &reply,
                                     w::kMaxRpcPayloadBytes);
  FARMEM_CO_TRY(s);
  std::vector<w::KvShardStats> out;
  FARMEM_CO_TRY(decode_shard_stats(reply.data(), reply.size(), &out));
  co_return out;
}

}  // namespace farmem::kv
