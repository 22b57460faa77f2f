// Table: a named transactional table of fixed-size records keyed by 64-bit keys, in hash
// buckets on the memory nodes with a primary and replicas - 1 backups per bucket
// (layout: txn/layout.h, docs/formats/txn.md). A string key maps to a 64-bit key by the
// caller's choice of hash (XXH3-64 is what the benchmarks would use); collisions are the
// caller's to avoid.
//
// create() sizes the buckets for `capacity` records at four per bucket of kSlotsPerBucket = 16
// (load factor 1/4: there are no overflow chains, so an insert into one of the rare full
// buckets fails with kResourceExhausted; at capacity about one bucket in 10^6 is full), writes
// the zeroed bucket arrays and the metadata and publishes the root "txn/<name>". open() reads
// them. A Table is immutable after create/open: one value may be shared by every coroutine and
// thread of a process (the ThreadClient given to create/open is only used during the call).
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
  ds::FarObject object_;
};

}  // namespace farmem::txn
