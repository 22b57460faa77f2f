// Remote compute calls of far containers (the client side of far/wire.h).
//
// A column is a list of Spans (far address, element count) in element order; a container
// gives its spans, which must already hold the current data (containers flush their dirty
// chunks first). Calls split the work into requests of at most wire::kMaxScanElements elements
// and wire::kMaxRanges ranges on one node each, and merge the replies; parallel columns (a
// predicate or group column beside the value column) must have the same span geometry. Bytes
// sent and received are added to the cache's stats().rpc_bytes.
// Thread safety: the cache's thread.
#pragma once

#include <cstdint>
#include <vector>

#include "farmem/client/global_address.h"
#include "farmem/far/thread_cache.h"
#include "farmem/far/wire.h"
#include "farmem/runtime/task.h"

namespace farmem::far {

struct Span {
  GlobalAddress addr;
  uint32_t count;
};
using Spans = std::vector<Span>;

struct Predicate {
  wire::Pred op = wire::Pred::kNone;
  wire::ElemType type = wire::ElemType::kU64;
  uint64_t a = 0, b = 0;  // operand bits of `type`
};

// One cell (or kMaxGroups cells when `groups` is given) over the whole column.
runtime::Task<Result<std::vector<wire::AggregateCell>>> remote_aggregate(
    ThreadCache* cache, wire::ElemType type, const Spans* values, Predicate pred,
    const Spans* pred_column, const Spans* groups);
// Positions (in element order) of the elements matching pred (pred.type is the column's).
runtime::Task<Result<std::vector<uint64_t>>> remote_filter(ThreadCache* cache, const Spans* column,
                                                           Predicate pred);
// dst[j] = src[indices[j]] for every j, on the nodes holding them (elements whose source and
// destination are on different nodes are copied through this client).
runtime::Task<Status> remote_gather(ThreadCache* cache, uint32_t elem_bytes, const Spans* src,
                                    const std::vector<uint64_t>* indices, const Spans* dst);
// The k largest elements, largest first, with their positions.
runtime::Task<Result<std::vector<wire::TopKItem>>> remote_top_k(ThreadCache* cache,
                                                                wire::ElemType type,
                                                                const Spans* column, uint32_t k);

}  // namespace farmem::far
