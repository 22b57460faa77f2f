// The B+tree's served scan (docs/formats/btree_served.md): over transports where every one-sided
// operation is a message the node serves anyway (TCP), a scan's dependent page reads (down from an
// internal page to the leaf covering the first key, then along the leaves by sibling pointers)
// run on the node inside one kCall of the thread's kMemOps message (memnode/procedure.h), as long
// as the pages lie on that node; the reply carries the records, where to go on, and the level-1
// page it passed so that the client's index cache learns it. The node runs the same checks a
// reader runs (tree id, checksum, fences, dead pages); whatever it cannot settle alone (a torn or
// mid-write page, a value block elsewhere) it hands back with the key to resume from, and the
// client takes the one-sided path from there. Shared by the client (ds/btree) and the node's
// library (ds/service.h). Thread safety: constants and plain structs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace farmem::ds::btree {

// Procedure id (the B+tree's range is 32..47, docs/formats/memops.md "Calls").
inline constexpr uint16_t kProcBtreeScan = 32;

// Why a served scan stopped.
enum class ServedScanOutcome : uint32_t {
  kDone = 0,       // the scan is complete: `to`, the limit or the end of the tree was reached
  kElsewhere = 1,  // the page covering next_key is next_page, on another node
  kFull = 2,       // the reply slot or the page budget is used up: call again at next_page
  kRestart = 3,    // a stale pointer (dead, foreign or not covering the key): locate next_key
  kTorn = 4,       // a page mid-write or a value the node cannot read: the client reads from
                   // next_key one-sided
};
inline constexpr uint32_t kLastServedScanOutcome = 4;
// Pages one call reads at most (bounds the procedure's time).
inline constexpr uint32_t kMaxServedScanPages = 64;
// ServedScanArgs::flags
inline constexpr uint16_t kScanWantIndex = 1;  // return the level-1 page passed on the way down

// The arguments; the `from` key (from_bytes) and the `to` key (to_bytes) follow.
struct ServedScanArgs {
  uint64_t page;        // region offset of the page to start at (any level)
  uint64_t tree_id;     // TreeMeta::tree_id
  uint32_t page_bytes;  // the tree's page size
  uint32_t limit;       // records at most; 0 = as many as the reply slot holds
  uint16_t node;        // this node's id: pointers to other nodes end the walk
  uint16_t from_bytes;  // 0 = from the first key
  uint16_t to_bytes;    // 0 = no upper bound
  uint16_t flags;       // kScanWantIndex
};
static_assert(sizeof(ServedScanArgs) == 32);
static_assert(offsetof(ServedScanArgs, limit) == 20);
static_assert(offsetof(ServedScanArgs, flags) == 30);
static_assert(std::is_trivially_copyable_v<ServedScanArgs>);

// The result. Then: `records` records (ServedRecordHeader, key, value), next_key
// (next_key_bytes), and the level-1 page image (page_bytes) when index_page is not 0.
struct ServedScanResult {
  uint32_t outcome;         // ServedScanOutcome
  uint32_t records;         // records that follow, in key order, all < next_key
  uint64_t next_page;       // kElsewhere, kFull: packed address of the page to go on at
  uint64_t index_page;      // packed address of the level-1 page whose image follows, or 0
  uint16_t next_key_bytes;  // not kDone: every key below next_key has been dealt with
  uint16_t pages;           // pages the node read
  uint16_t hops;            // moves right past a split before the first leaf: a stale hint
  uint16_t reserved;        // 0
};
static_assert(sizeof(ServedScanResult) == 32);
static_assert(offsetof(ServedScanResult, next_key_bytes) == 24);
static_assert(std::is_trivially_copyable_v<ServedScanResult>);

struct ServedRecordHeader {
  uint16_t key_bytes;    // 1..kMaxKeyBytes
  uint16_t value_bytes;  // the value follows the key
};
static_assert(sizeof(ServedRecordHeader) == 4);

}  // namespace farmem::ds::btree
