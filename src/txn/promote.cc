#include "farmem/txn/promote.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/txn/table.h"

namespace farmem::txn {

using runtime::Task;

namespace {

constexpr uint64_t kScanChunkBytes = 256 << 10;  // bytes read at a time while scanning
constexpr size_t kMaxHolders = 1 << 16;          // distinct lock holders one promotion settles
constexpr uint64_t kZero = 0;

// What the scan of the surviving replicas found.
struct ScanResult {
  std::set<uint64_t> holders;        // lock values on current primaries and promoted replicas
  std::vector<GlobalAddress> stray;  // nonzero lock words on replicas about to be promoted
  std::vector<HeldLock> held;        // (when asked for) every nonzero lock word seen, bounded
  bool want_held = false;
  uint64_t promoted = 0;
  uint64_t locks = 0;
};

// The lock words of one bucket image: the bucket's, then each slot's.
void lock_words(const Table& t, const char* bucket, GlobalAddress at, bool promoted,
                ScanResult* out) {
  auto note = [&](uint64_t word, GlobalAddress where) {
    if (word == 0) return;
    ++out->locks;
    out->holders.insert(word);
    if (promoted) out->stray.push_back(where);
    if (out->want_held && out->held.size() < kMaxHolders) out->held.push_back({where, word});
  };
  uint64_t word = 0;
  std::memcpy(&word, bucket + offsetof(BucketHeader, lock), kLockWordBytes);
  note(word, at);
  for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    const uint64_t off = sizeof(BucketHeader) + s * t.slot_bytes();
    std::memcpy(&word, bucket + off + offsetof(SlotHeader, lock), kLockWordBytes);
    note(word, at + off);
  }
}

// Reads node index j's bucket array and notes the lock words of the buckets it is primary of
// (before the promotion) and of those it becomes primary of.
Task<Status> scan_node(client::ThreadClient* c, const Table& t, uint32_t j, uint64_t old_failed,
                       uint64_t new_failed, ScanResult* out) {
  const uint32_t n = t.node_count();
  const uint64_t bpn = t.buckets_per_node();
  const uint64_t total = uint64_t{t.replicas()} * bpn;
  const uint64_t per_read = std::max<uint64_t>(1, kScanChunkBytes / t.bucket_bytes());
  std::string chunk;
  for (uint64_t first = 0; first < total; first += per_read) {
    const uint64_t count = std::min(per_read, total - first);
    chunk.resize(count * t.bucket_bytes());
    const GlobalAddress base = t.node_base(j) + first * t.bucket_bytes();
    Status s = co_await c->read(base, chunk.data(), chunk.size());
    FARMEM_CO_TRY(s);
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t local = first + i;
      const uint32_t rank = static_cast<uint32_t>(local / bpn);
      const uint64_t b = (local % bpn) * n + (j + n - rank % n) % n;
      if (b >= t.buckets()) continue;  // padding of the last row
      const uint32_t was = primary_rank(b, t.replicas(), n, old_failed);
      const uint32_t will = primary_rank(b, t.replicas(), n, new_failed);
      const bool promoted = rank == will && will != was;
      if (promoted) ++out->promoted;
      if (rank != was && !promoted) continue;
      lock_words(t, chunk.data() + i * t.bucket_bytes(), base + i * t.bucket_bytes(), promoted,
                 out);
      if (out->holders.size() > kMaxHolders) {
        co_return ResourceExhausted(
            fmt::format("more than {} transactions hold locks in table '{}'; promote when the "
                        "load is lower",
                        kMaxHolders, t.name()));
      }
    }
  }
  co_return OkStatus();
}

Status check_promotable(const Table& t, uint16_t dead, uint32_t index, uint64_t new_failed) {
  if (t.meta_address().node() == dead) {
    return Unavailable(fmt::format(
        "table '{}' keeps its metadata on node {}: it cannot be promoted", t.name(), dead));
  }
  for (uint32_t k = 0; k < t.node_count(); ++k) {  // placement repeats every N buckets
    if (primary_rank(k, t.replicas(), t.node_count(), new_failed) >= t.replicas()) {
      return Unavailable(fmt::format(
          "table '{}': buckets {} mod {} would lose their last replica with node {} (index {}) "
          "failed; their data is gone",
          t.name(), k, t.node_count(), dead, index));
    }
  }
  return OkStatus();
}

}  // namespace

Task<Result<PromoteReport>> promote_table(client::ThreadClient* c, TxnClient* tc, std::string name,
                                          uint16_t dead) {
  if (!c->cluster().is_down(dead)) {
    co_return InvalidArgument(
        fmt::format("node {} must be named down (down_nodes) to be promoted away from", dead));
  }
  auto opened = co_await Table::open(c, name);
  if (!opened.ok()) {
    if (opened.status().code() != StatusCode::kUnavailable) co_return opened.status();
    co_return Unavailable(
        fmt::format("table '{}' cannot be opened without node {} (its root or "
                    "metadata is there): {}",
                    name, dead, opened.status().message()));
  }
  const Table& t = *opened;
  PromoteReport report;
  report.table = name;
  report.node = dead;
  uint32_t index = t.node_count();
  for (uint32_t i = 0; i < t.node_count(); ++i) {
    if (t.node_id(i) == dead) index = i;
  }
  if (index == t.node_count()) {
    co_return InvalidArgument(fmt::format("table '{}' has no replicas on node {}", name, dead));
  }
  const uint64_t old_failed = t.failed_nodes();
  const uint64_t new_failed = old_failed | (1ull << index);
  report.failed_nodes = old_failed;
  if (old_failed == new_failed) {
    report.already_failed = true;
    co_return report;
  }
  FARMEM_CO_TRY(check_promotable(t, dead, index, new_failed));
  ScanResult scan;
  for (uint32_t j = 0; j < t.node_count(); ++j) {
    if ((new_failed >> j) & 1) continue;
    Status s = co_await scan_node(c, t, j, old_failed, new_failed, &scan);
    FARMEM_CO_TRY(s);
  }
  report.promoted_buckets = scan.promoted;
  report.locks_seen = scan.locks;
  for (uint64_t holder : scan.holders) {
    if (GlobalAddress::unpack(holder).node() == dead) {
      co_return Unavailable(fmt::format(
          "table '{}' has a record locked by a transaction whose redo log was on node {}: its "
          "outcome cannot be known (logs are not replicated)",
          name, dead));
    }
    auto settled = co_await tc->settle_for_promotion(holder, dead);
    FARMEM_CO_TRY(settled);
    if (*settled) ++report.logs_rolled_forward;
  }
  for (const GlobalAddress& word : scan.stray) {
    Status s = co_await c->write(word, &kZero, kLockWordBytes);
    FARMEM_CO_TRY(s);
  }
  report.locks_cleared = scan.stray.size();
  uint64_t found = 0;
  const GlobalAddress marks = t.meta_address() + offsetof(TableMeta, failed_nodes);
  Status s = co_await c->cas(marks, old_failed, new_failed, &found);
  FARMEM_CO_TRY(s);
  if (found != old_failed) {
    co_return Busy(
        fmt::format("table '{}' changed its failed-node marks meanwhile (another "
                    "promotion?); run the promotion again",
                    name));
  }
  report.failed_nodes = new_failed;
  co_return report;
}

Task<Result<LockReport>> held_locks(client::ThreadClient* c, std::string name) {
  auto opened = co_await Table::open(c, name);
  FARMEM_CO_TRY(opened);
  const Table& t = *opened;
  const uint64_t failed = t.failed_nodes();
  ScanResult scan;
  scan.want_held = true;
  for (uint32_t j = 0; j < t.node_count(); ++j) {
    if (((failed >> j) & 1) || c->cluster().is_down(t.node_id(j))) continue;
    Status s = co_await scan_node(c, t, j, failed, failed, &scan);
    FARMEM_CO_TRY(s);
  }
  LockReport report;
  report.table = name;
  report.locks = scan.locks;
  report.held = std::move(scan.held);
  co_return report;
}

}  // namespace farmem::txn
