#include "pool_context.h"

#include "farmem/client/cluster.h"

namespace farmem::kv {

namespace {

CoalescerOptions coalescer_options(client::ThreadClient* c, const StoreOptions& o) {
  CoalescerOptions co;
  co.coalesce = o.coalesce;
  co.max_in_flight = o.max_in_flight;
  co.max_ops = o.max_batch;
  co.timeout_ns = uint64_t{c->cluster().config().options.op_timeout_ms} * 1'000'000;
  return co;
}

// Whether gets on some node of the cluster read one-sidedly (else the cache stays unallocated).
bool uses_cache(client::ThreadClient* c, const StoreOptions& o) {
  if (o.mode == KvMode::kRpc) return false;
  if (o.mode == KvMode::kOneTwoSided) return true;
  for (const auto& n : c->cluster().nodes()) {
    if (c->endpoint(n.node_id) != nullptr && !c->served(n.node_id)) return true;
  }
  return false;
}

}  // namespace

PoolContext::PoolContext(client::ThreadClient* client, const StoreOptions& options)
    : client(client),
      mode(options.mode),
      coalescer(client, coalescer_options(client, options)),
      cache(uses_cache(client, options) ? options.location_cache_log2 : -1) {}

runtime::Task<Status> PoolContext::call(uint16_t node, wire::KvOpcode opcode, std::string request,
                                        std::vector<uint8_t>* reply, uint32_t reply_capacity) {
  reply->resize(reply_capacity);
  uint32_t got = 0;
  Status s = co_await client->rpc(node, static_cast<uint16_t>(opcode), request.data(),
                                  request.size(), reply->data(), reply_capacity, &got);
  reply->resize(s.ok() ? got : 0);
  co_return s;
}

bool PoolContext::one_sided(uint16_t node) const {
  switch (mode) {
    case KvMode::kRpc:
      return false;
    case KvMode::kOneTwoSided:
      return cache.enabled();
    case KvMode::kAuto:
      return cache.enabled() && client->endpoint(node) != nullptr && !client->served(node);
  }
  return false;
}

uint64_t PoolContext::op_timeout_ns() const {
  return uint64_t{client->cluster().config().options.op_timeout_ms} * 1'000'000;
}

}  // namespace farmem::kv
