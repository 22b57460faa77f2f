// HashTable's directory cache: each handle caches every shard's directory (which subtable holds
// which suffix) and re-reads it when it is stale, when a split froze the buckets it read, and
// at least once per quarter of the grace period (hash_table.h, docs/formats/hash_table/split.md).
#include <fmt/format.h>

#include <algorithm>

#include "farmem/client/cluster.h"
#include "farmem/common/check.h"
#include "farmem/common/clock.h"
#include "farmem/ds/hash/hash_table.h"
#include "geometry.h"
#include "op_context.h"

namespace farmem::ds::hash {

using runtime::Task;

Task<Status> HashTable::refresh_directory(OpContext& op) {
  Shard& s = op.shard;
  DirectoryHeader h{};
  const uint64_t started = cycles();
  Status st = co_await client_->read(s.directory, &h, sizeof(h));
  ++op.round_trips;
  ++stats_.directory_reads;
  FARMEM_CO_TRY(st);
  uint32_t depth = directory_depth(h.global_depth);
  if (depth > kMaxDepth) co_return ProtocolError("hash table directory is corrupt (depth)");
  std::vector<uint64_t> entries(size_t{1} << depth);
  st = co_await client_->read(s.directory + sizeof(h), entries.data(), 8 * entries.size());
  ++op.round_trips;
  FARMEM_CO_TRY(st);
  for (uint64_t e : entries) {
    if (dir_entry_offset(e) == 0)
      co_return ProtocolError("hash table directory is corrupt (entry)");
  }
  // Another coroutine of this handle may have refreshed meanwhile; keep the newer view.
  if (!s.entries.empty() && h.epoch < s.epoch) co_return OkStatus();
  // Subtables changed: cached slot addresses may point into a retired subtable.
  if (!s.entries.empty() && (h.epoch != s.epoch || entries != s.entries)) spec_.clear();
  s.global_depth = depth;
  s.epoch = h.epoch;
  s.entries = std::move(entries);
  s.checked_cycles = started;
  co_return OkStatus();
}

bool HashTable::directory_due(const Shard& s) const {
  return cycles() - s.checked_cycles > check_interval_cycles_;
}

Task<Status> HashTable::check_directory(OpContext& op) {
  Shard& s = op.shard;
  const uint64_t started = cycles();
  uint64_t words[2] = {0, 0};  // global_depth, epoch
  static_assert(offsetof(DirectoryHeader, global_depth) == 0 &&
                offsetof(DirectoryHeader, epoch) == sizeof(uint64_t));
  Status st = co_await client_->read(s.directory, words, sizeof(words));
  ++op.round_trips;
  FARMEM_CO_TRY(st);
  if (words[1] == s.epoch && directory_depth(words[0]) == s.global_depth) {
    if (started > s.checked_cycles) s.checked_cycles = started;
    co_return OkStatus();
  }
  Status rs = co_await refresh_directory(op);
  co_return rs;
}

GlobalAddress HashTable::subtable_of(const Shard& s, const KeyHash& kh) const {
  const uint64_t i = kh.h1 & suffix_mask(s.global_depth);
  FARMEM_ASSERT(i < s.entries.size(), "the cached directory holds 2^global_depth entries");
  return GlobalAddress(s.node, dir_entry_offset(s.entries[i]));
}

uint64_t HashTable::split_wait_ns() const {
  uint64_t ms = options_.split_wait_ms;
  if (ms == 0) {
    ms = std::max<uint64_t>(10'000, 4ull * client_->cluster().config().options.op_timeout_ms);
  }
  return ms * 1'000'000;
}

Task<Status> HashTable::wait_for_split(OpContext& op, Wait& wait) {
  ++stats_.split_waits;
  const uint64_t now = now_ns();
  if (wait.since_ns == 0) {
    wait.since_ns = now;
  } else if (now - wait.since_ns > split_wait_ns()) {
    co_return TimedOut(fmt::format(
        "the hash table subtable for this key has been frozen by a split (or its directory left "
        "half-published) for {} ms; the client holding it is alive but does not finish "
        "(stopped?); the keys are intact",
        (now - wait.since_ns) / 1'000'000));
  }
  if (now - wait.since_ns >= lease_check_ns() && now - wait.checked_ns >= lease_check_ns()) {
    wait.checked_ns = now;
    // (The repair's own reads are not this operation's round trips.)
    Status rs = co_await repair_stuck_split(op.shard, op.kh);
    FARMEM_CO_TRY(rs);
  }
  co_await wait.backoff.retry();
  Status st = co_await refresh_directory(op);
  co_return st;
}

Task<Status> HashTable::resync(OpContext& op, Wait& wait) {
  const uint64_t epoch = op.shard.epoch;
  Status st = co_await refresh_directory(op);
  FARMEM_CO_TRY(st);
  if (op.shard.epoch != epoch) co_return OkStatus();  // the cache was stale: now it is not
  // The directory has not moved on, yet the buckets belong elsewhere: a split is publishing
  // (entries before the header), or its publisher died doing so. Wait like for a split.
  Status ws = co_await wait_for_split(op, wait);
  co_return ws;
}

}  // namespace farmem::ds::hash
