// Table: a named transactional table of fixed-size records keyed by 64-bit keys, in hash
// buckets on the memory nodes with a primary and replicas - 1 backups per bucket
// (layout: txn/layout.h, docs/formats/txn.md). A string key maps to a 64-bit key by the
// caller's choice of hash (XXH3-64 is what the benchmarks would use); collisions are the
// caller's to avoid.
//
// create() sizes the buckets for `capacity` records (bucket_count() in layout.h: 4 records per
// 16-slot bucket for small tables, fewer for large ones, so that at capacity the chance that
// any bucket is full stays below 1%; there are no overflow chains, so an insert into a full
// bucket fails with kResourceExhausted), writes
// the zeroed bucket arrays and the metadata and publishes the root "txn/<name>". open() reads
// them. A Table is immutable after create/open except for refresh(): one value may be shared
// by every coroutine and thread of a process (the ThreadClient given to create/open is only
// used during the call).
//
// Failed nodes (docs/formats/txn.md "Promotion"): the metadata marks node indices that died
// (farmem txn promote). A bucket's primary is its lowest-rank replica on a node not marked, and
// commits write only the replicas on unmarked nodes; a bucket whose replicas all failed gives
// kUnavailable. refresh() re-reads the marks, for a long-running process after a promotion.
// Thread safety: const methods from any thread; create/open/destroy on the caller's client.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/common/result.h"
#include "farmem/ds/common/far_object.h"
#include "farmem/runtime/task.h"
#include "farmem/txn/layout.h"

namespace farmem::txn {

struct TableOptions {
  uint32_t record_bytes = 8;  // 1..kMaxRecordBytes
  uint64_t capacity = 1024;   // records the table is sized for
  uint32_t replicas = 0;      // 0: 2 when there are >= 2 nodes, else 1; at most the node count
  bool temporary = false;     // lives only as long as the creating thread's sessions
};

class Table {
 public:
  Table() = default;
  static runtime::Task<Result<Table>> create(client::ThreadClient* c, std::string name,
                                             TableOptions options);
  static runtime::Task<Result<Table>> open(client::ThreadClient* c, std::string name);
  // Frees the table on every node; no transaction may use it any more.
  runtime::Task<Status> destroy(client::ThreadClient* c);
  // Re-reads the failed-node marks from the metadata. Precondition: no transaction of this
  // process uses the table during the call (it changes what primary_rank() returns).
  runtime::Task<Status> refresh(client::ThreadClient* c);

  const std::string& name() const { return name_; }
  uint32_t record_bytes() const { return meta_.record_bytes; }
  uint32_t replicas() const { return meta_.replicas; }
  uint64_t buckets() const { return meta_.buckets; }
  uint64_t slot_bytes() const { return txn::slot_bytes(meta_.record_bytes); }
  uint64_t bucket_bytes() const { return meta_.bucket_bytes; }
  // A tag for caches (derived from the name).
  uint32_t tag() const { return static_cast<uint32_t>(meta_.seed); }
  bool valid() const { return meta_.magic == kTableMagic; }

  uint64_t bucket_of(uint64_t key) const { return txn::bucket_of(key, meta_.seed, meta_.buckets); }
  uint32_t node_count() const { return meta_.node_count; }
  uint64_t buckets_per_node() const { return meta_.buckets_per_node; }
  // Bit i: node index i (sorted node ids) failed.
  uint64_t failed_nodes() const { return meta_.failed_nodes; }
  // The node id at node index i (0..node_count-1).
  uint16_t node_id(uint32_t index) const { return bases_[index].node(); }
  GlobalAddress node_base(uint32_t index) const { return bases_[index]; }
  GlobalAddress meta_address() const { return meta_address_; }
  // Where the primary of bucket b is (replicas() when no replica is left: check_bucket()).
  uint32_t primary_rank(uint64_t b) const {
    return txn::primary_rank(b, meta_.replicas, meta_.node_count, meta_.failed_nodes);
  }
  // Whether replica `rank` of bucket b is on a node that did not fail.
  bool replica_live(uint64_t b, uint32_t rank) const {
    return ((meta_.failed_nodes >> placement(b, rank, meta_.node_count, 0).node_index) & 1) == 0;
  }
  // kUnavailable when every replica of bucket b is on a failed node.
  Status check_bucket(uint64_t b) const;
  GlobalAddress primary_bucket(uint64_t b) const {
    const uint32_t r = primary_rank(b);
    return bucket_address(b, r < meta_.replicas ? r : 0);
  }
  GlobalAddress primary_slot(uint64_t b, uint32_t slot) const {
    return primary_bucket(b) + sizeof(BucketHeader) + slot * slot_bytes();
  }
  // The address of replica `rank` (0 = primary) of bucket b.
  GlobalAddress bucket_address(uint64_t b, uint32_t rank) const {
    const Placement p = placement(b, rank, meta_.node_count, meta_.buckets_per_node);
    return bases_[p.node_index] + p.local_bucket * meta_.bucket_bytes;
  }
  GlobalAddress slot_address(uint64_t b, uint32_t slot, uint32_t rank) const {
    return bucket_address(b, rank) + sizeof(BucketHeader) + slot * slot_bytes();
  }

 private:
  std::string name_;
  TableMeta meta_{};
  std::vector<GlobalAddress> bases_;  // per node index (sorted node ids)
  GlobalAddress meta_address_;
  ds::FarObject object_;
};

}  // namespace farmem::txn
