#include "farmem/far/remote.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace farmem::far {

using runtime::Task;
namespace w = wire;

namespace {

// A piece of work for one node: span pieces [begin, end) of the column (split so that none is
// longer than kMaxScanElements), all on `node`.
struct Piece {
  uint64_t offset;  // in the node's region
  uint32_t count;
  uint64_t position;  // of its first element in the column
};
struct Job {
  uint16_t node;
  std::vector<size_t> pieces;  // indices into the piece list
  uint64_t elements = 0;
};

std::vector<Piece> pieces_of(const Spans& spans, uint64_t elem_bytes,
                             std::vector<uint16_t>* nodes) {
  std::vector<Piece> out;
  uint64_t pos = 0;
  for (const Span& s : spans) {
    for (uint32_t done = 0; done < s.count;) {
      const uint32_t n = std::min<uint32_t>(s.count - done, w::kMaxScanElements);
      out.push_back(Piece{s.addr.offset() + done * elem_bytes, n, pos});
      nodes->push_back(s.addr.node());
      done += n;
      pos += n;
    }
  }
  return out;
}

std::vector<Job> jobs_of(const std::vector<Piece>& pieces, const std::vector<uint16_t>& nodes) {
  std::vector<Job> jobs;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const bool fits = !jobs.empty() && jobs.back().node == nodes[i] &&
                      jobs.back().pieces.size() < w::kMaxRanges &&
                      jobs.back().elements + pieces[i].count <= w::kMaxScanElements;
    if (!fits) jobs.push_back(Job{nodes[i], {}, 0});
    jobs.back().pieces.push_back(i);
    jobs.back().elements += pieces[i].count;
  }
  return jobs;
}

template <typename T>
void append(std::string* s, const T& v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void append_ranges(std::string* s, const std::vector<Piece>& pieces, const Job& job) {
  for (size_t i : job.pieces) append(s, w::Range{pieces[i].offset, pieces[i].count, 0});
}

Task<Result<std::string>> call(ThreadCache* cache, uint16_t node, w::Op op, std::string request,
                               uint32_t reply_capacity) {
  std::string reply(reply_capacity, '\0');
  uint32_t got = 0;
  Status s = co_await cache->client()->rpc(node, static_cast<uint16_t>(op), request.data(),
                                           request.size(), reply.data(), reply_capacity, &got);
  FARMEM_CO_TRY(s);
  reply.resize(got);
  cache->mutable_stats().rpc_bytes += request.size() + got;
  co_return reply;
}

template <typename T>
void merge_cell(w::AggregateCell* into, const w::AggregateCell& c) {
  if (c.count == 0) return;
  if (into->count == 0) {
    *into = c;
    return;
  }
  into->count += c.count;
  if constexpr (std::is_floating_point_v<T>) {
    into->sum = w::to_bits(w::from_bits<T>(into->sum) + w::from_bits<T>(c.sum));
  } else {
    into->sum += c.sum;
  }
  into->min = w::to_bits(std::min(w::from_bits<T>(into->min), w::from_bits<T>(c.min)));
  into->max = w::to_bits(std::max(w::from_bits<T>(into->max), w::from_bits<T>(c.max)));
}

void merge(w::ElemType t, w::AggregateCell* into, const w::AggregateCell& c) {
  switch (t) {
    case w::ElemType::kU64:
      return merge_cell<uint64_t>(into, c);
    case w::ElemType::kI64:
      return merge_cell<int64_t>(into, c);
    case w::ElemType::kF64:
      return merge_cell<double>(into, c);
  }
}

bool geometry_matches(const Spans& a, const Spans& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].count != b[i].count || a[i].addr.node() != b[i].addr.node()) return false;
  }
  return true;
}

}  // namespace

Task<Result<std::vector<w::AggregateCell>>> remote_aggregate(ThreadCache* cache, w::ElemType type,
                                                             const Spans* values, Predicate pred,
                                                             const Spans* pred_column,
                                                             const Spans* groups) {
  const bool has_pred = pred.op != w::Pred::kNone;
  if ((has_pred && (pred_column == nullptr || !geometry_matches(*values, *pred_column))) ||
      (groups != nullptr && !geometry_matches(*values, *groups))) {
    co_return InvalidArgument("remote aggregate: columns of different shapes");
  }
  std::vector<uint16_t> nodes, unused;
  std::vector<Piece> vp = pieces_of(*values, 8, &nodes);
  std::vector<Piece> pp, gp;
  if (has_pred) pp = pieces_of(*pred_column, 8, &unused);
  if (groups != nullptr) gp = pieces_of(*groups, 8, &unused);
  const size_t cells = groups != nullptr ? w::kMaxGroups : 1;
  std::vector<w::AggregateCell> out(cells, w::AggregateCell{0, 0, 0, 0});
  for (const Job& job : jobs_of(vp, nodes)) {
    std::string req;
    w::AggregateRequest q{static_cast<uint8_t>(type),
                          static_cast<uint8_t>(pred.op),
                          static_cast<uint8_t>(has_pred ? pred.type : w::ElemType{}),
                          static_cast<uint8_t>(groups != nullptr),
                          static_cast<uint32_t>(job.pieces.size()),
                          has_pred ? pred.a : 0,
                          has_pred ? pred.b : 0};
    append(&req, q);
    append_ranges(&req, vp, job);
    if (has_pred) append_ranges(&req, pp, job);
    if (groups != nullptr) append_ranges(&req, gp, job);
    auto rep = co_await call(cache, job.node, w::Op::kAggregate, std::move(req),
                             static_cast<uint32_t>(cells * sizeof(w::AggregateCell)));
    FARMEM_CO_TRY(rep);
    if (rep->size() != cells * sizeof(w::AggregateCell)) {
      co_return ProtocolError("far aggregate reply of the wrong size");
    }
    for (size_t c = 0; c < cells; ++c) {
      w::AggregateCell cell;
      std::memcpy(&cell, rep->data() + c * sizeof(cell), sizeof(cell));
      merge(type, &out[c], cell);
    }
  }
  co_return out;
}

Task<Result<std::vector<uint64_t>>> remote_filter(ThreadCache* cache, const Spans* column,
                                                  Predicate pred) {
  if (pred.op == w::Pred::kNone) co_return InvalidArgument("remote filter needs a predicate");
  std::vector<uint16_t> nodes;
  std::vector<Piece> vp = pieces_of(*column, 8, &nodes);
  std::vector<uint64_t> out;
  for (const Job& job : jobs_of(vp, nodes)) {
    std::string req;
    append(&req, w::FilterRequest{static_cast<uint8_t>(pred.type), static_cast<uint8_t>(pred.op), 0,
                                  static_cast<uint32_t>(job.pieces.size()), pred.a, pred.b});
    append_ranges(&req, vp, job);
    const uint32_t cap = static_cast<uint32_t>(sizeof(w::FilterReply) + (job.elements + 7) / 8);
    auto rep = co_await call(cache, job.node, w::Op::kFilter, std::move(req), cap);
    FARMEM_CO_TRY(rep);
    w::FilterReply h;
    if (rep->size() != cap) co_return ProtocolError("far filter reply of the wrong size");
    std::memcpy(&h, rep->data(), sizeof(h));
    const auto* bits = reinterpret_cast<const uint8_t*>(rep->data()) + sizeof(h);
    uint64_t local = 0;
    for (size_t i : job.pieces) {
      for (uint32_t k = 0; k < vp[i].count; ++k, ++local) {
        if (bits[local / 8] & (1u << (local % 8))) out.push_back(vp[i].position + k);
      }
    }
  }
  co_return out;
}

namespace {

// Where element `pos` of a column lies.
GlobalAddress locate(const Spans& spans, const std::vector<uint64_t>& starts, uint64_t pos,
                     uint32_t elem_bytes, size_t* span) {
  *span = std::upper_bound(starts.begin(), starts.end(), pos) - starts.begin() - 1;
  return spans[*span].addr + (pos - starts[*span]) * elem_bytes;
}

std::vector<uint64_t> starts_of(const Spans& spans) {
  std::vector<uint64_t> s(spans.size() + 1, 0);
  for (size_t i = 0; i < spans.size(); ++i) s[i + 1] = s[i] + spans[i].count;
  return s;
}

struct GatherBatch {
  uint16_t node = 0;
  std::vector<size_t> src_spans;  // spans of src used, in request order
  std::vector<uint32_t> idx;      // into the concatenation of src_spans
  std::vector<w::Range> dst;
};

}  // namespace

Task<Status> remote_gather(ThreadCache* cache, uint32_t elem_bytes, const Spans* src,
                           const std::vector<uint64_t>* indices, const Spans* dst) {
  const std::vector<uint64_t> ss = starts_of(*src), ds = starts_of(*dst);
  if (ds.back() < indices->size()) co_return InvalidArgument("gather destination too short");
  std::vector<uint8_t> bounce(elem_bytes);
  GatherBatch b;
  std::vector<uint64_t> local_start;  // start of each used src span in the request's array
  auto flush = [&]() -> std::string {
    std::string req;
    append(&req, w::GatherRequest{elem_bytes, static_cast<uint32_t>(b.src_spans.size()),
                                  static_cast<uint32_t>(b.idx.size()),
                                  static_cast<uint32_t>(b.dst.size())});
    for (size_t s : b.src_spans) {
      append(&req, w::Range{(*src)[s].addr.offset(), (*src)[s].count, 0});
    }
    req.append(reinterpret_cast<const char*>(b.idx.data()), b.idx.size() * 4);
    for (const w::Range& r : b.dst) append(&req, r);
    return req;
  };
  for (uint64_t j = 0; j < indices->size(); ++j) {
    const uint64_t i = (*indices)[j];
    if (i >= ss.back()) co_return OutOfRange(fmt::format("gather index {} >= {}", i, ss.back()));
    size_t sspan, dspan;
    const GlobalAddress from = locate(*src, ss, i, elem_bytes, &sspan);
    const GlobalAddress to = locate(*dst, ds, j, elem_bytes, &dspan);
    if (from.node() != to.node()) {  // different nodes: through this client
      Status s = co_await cache->client()->read(from, bounce.data(), elem_bytes);
      if (s.ok()) s = co_await cache->client()->write(to, bounce.data(), elem_bytes);
      FARMEM_CO_TRY(s);
      cache->mutable_stats().rpc_bytes += 2ull * elem_bytes;
      continue;
    }
    const bool full = b.idx.size() >= w::kMaxGatherIndices || b.src_spans.size() >= w::kMaxRanges ||
                      b.dst.size() >= w::kMaxRanges;
    if (!b.idx.empty() && (b.node != from.node() || full)) {
      auto rep = co_await call(cache, b.node, w::Op::kGather, flush(), 0);
      FARMEM_CO_TRY(rep);
      b = GatherBatch{};
      local_start.clear();
    }
    b.node = from.node();
    auto it = std::find(b.src_spans.begin(), b.src_spans.end(), sspan);
    size_t k = it - b.src_spans.begin();
    if (it == b.src_spans.end()) {
      local_start.push_back(
          b.src_spans.empty() ? 0 : local_start.back() + (*src)[b.src_spans.back()].count);
      b.src_spans.push_back(sspan);
    }
    b.idx.push_back(static_cast<uint32_t>(local_start[k] + (i - ss[sspan])));
    if (!b.dst.empty() &&
        b.dst.back().offset + uint64_t{b.dst.back().count} * elem_bytes == to.offset()) {
      ++b.dst.back().count;
    } else {
      b.dst.push_back(w::Range{to.offset(), 1, 0});
    }
  }
  if (!b.idx.empty()) {
    auto rep = co_await call(cache, b.node, w::Op::kGather, flush(), 0);
    FARMEM_CO_TRY(rep);
  }
  co_return OkStatus();
}

Task<Result<std::vector<w::TopKItem>>> remote_top_k(ThreadCache* cache, w::ElemType type,
                                                    const Spans* column, uint32_t k) {
  if (k == 0 || k > w::kMaxTopK) co_return InvalidArgument("top-k: k is 1..64");
  std::vector<uint16_t> nodes;
  std::vector<Piece> vp = pieces_of(*column, 8, &nodes);
  std::vector<w::TopKItem> all;
  for (const Job& job : jobs_of(vp, nodes)) {
    std::string req;
    append(&req, w::TopKRequest{static_cast<uint8_t>(type), 0, static_cast<uint16_t>(k),
                                static_cast<uint32_t>(job.pieces.size())});
    append_ranges(&req, vp, job);
    auto rep = co_await call(cache, job.node, w::Op::kTopK, std::move(req),
                             static_cast<uint32_t>(k * sizeof(w::TopKItem)));
    FARMEM_CO_TRY(rep);
    const size_t n = rep->size() / sizeof(w::TopKItem);
    // Positions are relative to the job's concatenation of pieces.
    std::vector<uint64_t> starts;
    uint64_t acc = 0;
    for (size_t i : job.pieces) {
      starts.push_back(acc);
      acc += vp[i].count;
    }
    for (size_t t = 0; t < n; ++t) {
      w::TopKItem it;
      std::memcpy(&it, rep->data() + t * sizeof(it), sizeof(it));
      size_t p = std::upper_bound(starts.begin(), starts.end(), it.position) - starts.begin() - 1;
      it.position = vp[job.pieces[p]].position + (it.position - starts[p]);
      all.push_back(it);
    }
  }
  auto better = [type](const w::TopKItem& a, const w::TopKItem& b) {
    if (a.value != b.value) {
      switch (type) {
        case w::ElemType::kU64:
          return a.value > b.value;
        case w::ElemType::kI64:
          return w::from_bits<int64_t>(a.value) > w::from_bits<int64_t>(b.value);
        case w::ElemType::kF64:
          return w::from_bits<double>(a.value) > w::from_bits<double>(b.value);
      }
    }
    return a.position < b.position;
  };
  std::sort(all.begin(), all.end(), better);
  if (all.size() > k) all.resize(k);
  co_return all;
}

}  // namespace farmem::far
