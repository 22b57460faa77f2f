// Store: one thread's handle on the cluster's key-value store (farmem::kv).
//
// The store is a memory-node service (docs/formats/kv.md): named pools of key-value pairs, each
// on one shard (worker) of one node, with MCAS-style direct transfers, locks and a secondary
// index, and records laid out so that clients may read them one-sidedly (Storm). A Store is
// the per-thread client, like ds::hash::HashTable's handles: open one per thread over that
// thread's client::ThreadClient; it holds the thread's request coalescer (kv/coalescer.h), its
// location cache (kv/location_cache.h) and its counters, which its pools (kv/pool.h) share
// through a PoolContext (src/kv/client/pool_context.h), and its pools run every operation.
//
// Pools are placed by name: the node is Cluster::root_node(name) (XXH3 over the sorted node
// ids, as roots are), the shard is chosen by the node. Pool operations here:
//   create_pool(name, capacity, expected_count, flags) -> an open Pool (kPoolCreateOnly:
//       kAlreadyExists if it exists; otherwise an existing pool is opened; kPoolTemporary: a
//       pool it creates is deleted when this thread's session with its node ends, e.g. when
//       the process dies)
//   open_pool(name, flags)  (kNotFound)      close_pool(pool)
//   delete_pool(name)       (kNotFound; kBusy while another session has it open)
//   list_pools()            every pool of every node
//   shard_stats(node)       the kv service's per-shard counters of one node
// Configuring a pool, its count and its info are calls on its Pool (configure, count, info).
//
// Every call is a coroutine (plain code runs one with runtime::sync_wait), returns Status / Result
// and never throws; every remote step has the client's op_timeout_ms as its deadline (a timed-out
// step gives kTimedOut and may or may not have been applied), and a dead node gives kPeerFailed.
//
// Thread safety: the ThreadClient's thread only. Destroy the pools before their Store.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/common/result.h"
#include "farmem/kv/types.h"
#include "farmem/kv/wire.h"
#include "farmem/runtime/task.h"

namespace farmem::kv {

class Pool;
struct PoolContext;

// How gets read (Storm's one-two-sided gets):
//   kRpc          every get is a (coalesced) RPC;
//   kOneTwoSided  a get first reads the cached record one-sidedly, RPC on a miss;
//   kAuto         one-two-sided on nodes reached with true one-sided operations (shared memory,
//                 RDMA: ThreadClient::served(node) is false), RPC on nodes over TCP, where a
//                 one-sided read is itself a message the node serves.
enum class KvMode : uint8_t { kRpc, kOneTwoSided, kAuto };
const char* kv_mode_name(KvMode mode);  // "rpc" | "one-two-sided" | "auto"
Result<KvMode> parse_kv_mode(std::string_view text);

struct StoreOptions {
  KvMode mode = KvMode::kAuto;
  bool coalesce = true;          // request coalescing (kv/coalescer.h)
  uint32_t max_in_flight = 8;    // kOps messages in flight per node
  uint32_t max_batch = 64;       // operations per kOps message (1..256)
  int location_cache_log2 = 16;  // location cache entries = 2^N (32 B each); < 0: none (also
                                 // none when no node is read one-sidedly in this mode)
};

class Store {
 public:
  // No I/O; the options are checked (kInvalidArgument).
  static Result<std::unique_ptr<Store>> open(client::ThreadClient* client,
                                             StoreOptions options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  runtime::Task<Result<std::unique_ptr<Pool>>> create_pool(std::string name,
                                                           uint64_t capacity_bytes,
                                                           uint64_t expected_count = 0,
                                                           uint32_t flags = 0);
  runtime::Task<Result<std::unique_ptr<Pool>>> open_pool(std::string name, uint32_t flags = 0);
  // Closes the handle (the Pool object stays, unusable: destroy it).
  runtime::Task<Status> close_pool(Pool& pool);
  runtime::Task<Status> delete_pool(std::string name);
  runtime::Task<Result<std::vector<PoolListing>>> list_pools();
  runtime::Task<Result<std::vector<wire::KvShardStats>>> shard_stats(uint16_t node);

  // The node that holds (or would hold) the pool `name`.
  uint16_t node_of(std::string_view name) const;
  // Whether gets on `node` try the one-sided read first (the mode, resolved for that node).
  bool one_sided(uint16_t node) const;
  // This handle's counters (coalescing figures included).
  StoreStats stats() const;
  const StoreOptions& options() const { return options_; }
  client::ThreadClient& client() { return *client_; }

 private:
  Store(client::ThreadClient* client, const StoreOptions& options);
  runtime::Task<Result<std::unique_ptr<Pool>>> open_or_create(wire::KvOpcode opcode,
                                                              std::string name,
                                                              uint64_t capacity_bytes,
                                                              uint64_t expected_count,
                                                              uint32_t flags);

  client::ThreadClient* client_;
  StoreOptions options_;
  // What the pools share: coalescer, location cache, counters. Destroyed after the pools.
  std::unique_ptr<PoolContext> context_;
  uint32_t next_pool_id_ = 1;
};

}  // namespace farmem::kv
