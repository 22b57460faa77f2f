// NodeHeapSource: pool memory as heap blocks owned by the pool's node object. On a durable node
// each block taken or given back is logged (a NodeRecord) under NodeState::mu, like the core
// service's own allocations, so recovery gives the object the same blocks. A block goes back only
// after `before_free` ran (the shard logs the region changes made so far, e.g. the header that
// stopped naming an old index table, so no log can name memory its pool no longer owns).
// Thread safety: any thread (it takes NodeState::mu).
#pragma once

#include <cstdint>
#include <functional>

#include "allocator.h"
#include "farmem/memnode/node_state.h"

namespace farmem::kv::service {

class NodeHeapSource final : public MemorySource {
 public:
  NodeHeapSource(memnode::NodeState& node, uint64_t owner, std::function<void()> before_free)
      : node_(node), owner_(owner), before_free_(std::move(before_free)) {}
  Result<Block> take(uint64_t bytes) override;
  void give_back(uint64_t offset) override;

 private:
  memnode::NodeState& node_;
  uint64_t owner_;
  std::function<void()> before_free_;
};

}  // namespace farmem::kv::service
