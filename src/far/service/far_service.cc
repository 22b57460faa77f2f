// The far service's handlers (far/service.h, docs/formats/far.md).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "farmem/fabric/wire.h"
#include "farmem/far/service.h"
#include "farmem/far/wire.h"

namespace farmem::far {
namespace {

namespace w = farmem::far::wire;

// A request read front to back; every take checks the remaining length.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  Status take(T* out, const char* what) {
    if (n_ < sizeof(T)) return InvalidArgument(fmt::format("far request: {} is cut short", what));
    std::memcpy(out, p_, sizeof(T));
    p_ += sizeof(T);
    n_ -= sizeof(T);
    return OkStatus();
  }
  Status take_bytes(size_t bytes, const uint8_t** out, const char* what) {
    if (n_ < bytes) return InvalidArgument(fmt::format("far request: {} is cut short", what));
    *out = p_;
    p_ += bytes;
    n_ -= bytes;
    return OkStatus();
  }
  Status done() const {
    return n_ == 0 ? OkStatus()
                   : InvalidArgument(fmt::format("far request has {} trailing bytes", n_));
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

Status check_type(uint8_t t) {
  if (t < 1 || t > 3) return InvalidArgument(fmt::format("unknown element type {}", t));
  return OkStatus();
}

Status check_span(uint64_t offset, uint64_t bytes, uint64_t region_bytes) {
  if (offset < farmem::wire::kRegionHeaderBytes || offset > region_bytes ||
      bytes > region_bytes - offset) {
    return OutOfRange(
        fmt::format("{} bytes at offset {} are outside the node's region "
                    "[{}, {})",
                    bytes, offset, farmem::wire::kRegionHeaderBytes, region_bytes));
  }
  return OkStatus();
}

// n Ranges of elem_bytes elements, each inside the region; their total element count.
Status take_ranges(Reader* r, uint32_t n, uint64_t elem_bytes, uint64_t region_bytes,
                   std::vector<w::Range>* out, uint64_t* total) {
  out->resize(n);
  *total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    w::Range& g = (*out)[i];
    FARMEM_TRY(r->take(&g, "range"));
    if (g.reserved != 0) return ProtocolError("reserved range field not 0");
    if (g.count == 0) return InvalidArgument("empty range");
    if (g.offset % 8 != 0 && elem_bytes == 8) return InvalidArgument("unaligned 8-byte range");
    FARMEM_TRY(check_span(g.offset, uint64_t{g.count} * elem_bytes, region_bytes));
    *total += g.count;
  }
  return OkStatus();
}

Status check_parallel(const std::vector<w::Range>& a, const std::vector<w::Range>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].count != b[i].count) return InvalidArgument("parallel ranges differ in length");
  }
  return OkStatus();
}

template <typename T>
T load(const uint8_t* region, uint64_t offset) {
  T v;
  std::memcpy(&v, region + offset, sizeof(T));
  return v;
}

template <typename T>
bool matches(w::Pred p, T x, T a, T b) {
  switch (p) {
    case w::Pred::kNone:
      return true;
    case w::Pred::kLt:
      return x < a;
    case w::Pred::kLe:
      return x <= a;
    case w::Pred::kGt:
      return x > a;
    case w::Pred::kGe:
      return x >= a;
    case w::Pred::kEq:
      return x == a;
    case w::Pred::kNe:
      return x != a;
    case w::Pred::kIn:
      return a <= x && x < b;
  }
  return false;
}

// Evaluates the predicate of type pred_type on the predicate column's element at `offset`.
bool pred_at(const uint8_t* region, uint64_t offset, uint8_t pred_type, w::Pred p, uint64_t a,
             uint64_t b) {
  switch (static_cast<w::ElemType>(pred_type)) {
    case w::ElemType::kU64:
      return matches<uint64_t>(p, load<uint64_t>(region, offset), a, b);
    case w::ElemType::kI64:
      return matches<int64_t>(p, load<int64_t>(region, offset), w::from_bits<int64_t>(a),
                              w::from_bits<int64_t>(b));
    case w::ElemType::kF64:
      return matches<double>(p, load<double>(region, offset), w::from_bits<double>(a),
                             w::from_bits<double>(b));
  }
  return false;
}

template <typename T>
struct Acc {
  uint64_t count = 0;
  T sum{}, min{}, max{};
  void add(T v) {
    if (count == 0) {
      min = max = v;
    } else {
      min = std::min(min, v);
      max = std::max(max, v);
    }
    if constexpr (std::is_integral_v<T>) {
      sum = static_cast<T>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(v));
    } else {
      sum += v;
    }
    ++count;
  }
  w::AggregateCell cell() const {
    return {count, w::to_bits(sum), w::to_bits(min), w::to_bits(max)};
  }
};

template <typename T>
void aggregate_typed(const uint8_t* region, const w::AggregateRequest& q,
                     const std::vector<w::Range>& vals, const std::vector<w::Range>& preds,
                     const std::vector<w::Range>& groups, std::string* out) {
  std::vector<Acc<T>> acc(q.grouped ? w::kMaxGroups : 1);
  const auto pred = static_cast<w::Pred>(q.pred);
  for (size_t r = 0; r < vals.size(); ++r) {
    for (uint32_t i = 0; i < vals[r].count; ++i) {
      if (pred != w::Pred::kNone &&
          !pred_at(region, preds[r].offset + 8ull * i, q.pred_type, pred, q.a, q.b)) {
        continue;
      }
      size_t g = 0;
      if (q.grouped) {
        const uint64_t key = load<uint64_t>(region, groups[r].offset + 8ull * i);
        if (key >= w::kMaxGroups) continue;
        g = key;
      }
      acc[g].add(load<T>(region, vals[r].offset + 8ull * i));
    }
  }
  for (const auto& a : acc) {
    w::AggregateCell c = a.cell();
    out->append(reinterpret_cast<const char*>(&c), sizeof(c));
  }
}

Status aggregate(const uint8_t* region, uint64_t region_bytes, Reader r, std::string* out) {
  w::AggregateRequest q;
  FARMEM_TRY(r.take(&q, "aggregate request"));
  FARMEM_TRY(check_type(q.type));
  if (q.pred > static_cast<uint8_t>(w::Pred::kIn)) return InvalidArgument("unknown predicate");
  if (q.pred != 0) FARMEM_TRY(check_type(q.pred_type));
  if (q.pred == 0 && (q.pred_type != 0 || q.a != 0 || q.b != 0)) {
    return ProtocolError("predicate fields set without a predicate");
  }
  if (q.grouped > 1) return ProtocolError("grouped is 0 or 1");
  if (q.n_ranges == 0 || q.n_ranges > w::kMaxRanges) return InvalidArgument("bad range count");
  std::vector<w::Range> vals, preds, groups;
  uint64_t total = 0, t2 = 0;
  FARMEM_TRY(take_ranges(&r, q.n_ranges, 8, region_bytes, &vals, &total));
  if (total > w::kMaxScanElements) return InvalidArgument("request scans too many elements");
  if (q.pred != 0) {
    FARMEM_TRY(take_ranges(&r, q.n_ranges, 8, region_bytes, &preds, &t2));
    FARMEM_TRY(check_parallel(vals, preds));
  }
  if (q.grouped) {
    FARMEM_TRY(take_ranges(&r, q.n_ranges, 8, region_bytes, &groups, &t2));
    FARMEM_TRY(check_parallel(vals, groups));
  }
  FARMEM_TRY(r.done());
  switch (static_cast<w::ElemType>(q.type)) {
    case w::ElemType::kU64:
      aggregate_typed<uint64_t>(region, q, vals, preds, groups, out);
      break;
    case w::ElemType::kI64:
      aggregate_typed<int64_t>(region, q, vals, preds, groups, out);
      break;
    case w::ElemType::kF64:
      aggregate_typed<double>(region, q, vals, preds, groups, out);
      break;
  }
  return OkStatus();
}

Status filter(const uint8_t* region, uint64_t region_bytes, Reader r, std::string* out) {
  w::FilterRequest q;
  FARMEM_TRY(r.take(&q, "filter request"));
  FARMEM_TRY(check_type(q.type));
  if (q.pred == 0 || q.pred > static_cast<uint8_t>(w::Pred::kIn)) {
    return InvalidArgument("filter needs a predicate");
  }
  if (q.reserved != 0) return ProtocolError("reserved filter field not 0");
  if (q.n_ranges == 0 || q.n_ranges > w::kMaxRanges) return InvalidArgument("bad range count");
  std::vector<w::Range> vals;
  uint64_t total = 0;
  FARMEM_TRY(take_ranges(&r, q.n_ranges, 8, region_bytes, &vals, &total));
  if (total > w::kMaxScanElements) return InvalidArgument("request scans too many elements");
  FARMEM_TRY(r.done());
  w::FilterReply rep{total, 0};
  std::string bits((total + 7) / 8, '\0');
  uint64_t pos = 0;
  for (const w::Range& g : vals) {
    for (uint32_t i = 0; i < g.count; ++i, ++pos) {
      if (pred_at(region, g.offset + 8ull * i, q.type, static_cast<w::Pred>(q.pred), q.a, q.b)) {
        bits[pos / 8] = static_cast<char>(bits[pos / 8] | (1 << (pos % 8)));
        ++rep.matched;
      }
    }
  }
  out->append(reinterpret_cast<const char*>(&rep), sizeof(rep));
  out->append(bits);
  return OkStatus();
}

Status gather(uint8_t* region, uint64_t region_bytes, Reader r) {
  w::GatherRequest q;
  FARMEM_TRY(r.take(&q, "gather request"));
  if (q.elem_bytes == 0 || q.elem_bytes > w::kMaxGatherElemBytes) {
    return InvalidArgument("gather element size out of range");
  }
  if (q.n_src == 0 || q.n_src > w::kMaxRanges || q.n_dst == 0 || q.n_dst > w::kMaxRanges ||
      q.n_idx == 0 || q.n_idx > w::kMaxGatherIndices) {
    return InvalidArgument("bad gather counts");
  }
  std::vector<w::Range> src, dst;
  uint64_t src_total = 0, dst_total = 0;
  FARMEM_TRY(take_ranges(&r, q.n_src, q.elem_bytes, region_bytes, &src, &src_total));
  const uint8_t* idx_bytes = nullptr;
  FARMEM_TRY(r.take_bytes(size_t{q.n_idx} * 4, &idx_bytes, "gather indices"));
  FARMEM_TRY(take_ranges(&r, q.n_dst, q.elem_bytes, region_bytes, &dst, &dst_total));
  FARMEM_TRY(r.done());
  if (dst_total != q.n_idx) return InvalidArgument("destination ranges do not hold the indices");
  std::vector<uint64_t> starts(src.size() + 1, 0);
  for (size_t i = 0; i < src.size(); ++i) starts[i + 1] = starts[i] + src[i].count;
  std::vector<uint32_t> idx(q.n_idx);
  std::memcpy(idx.data(), idx_bytes, idx.size() * 4);
  for (uint32_t i : idx) {
    if (i >= src_total) return OutOfRange(fmt::format("gather index {} >= {}", i, src_total));
  }
  size_t d = 0;
  uint32_t in_d = 0;
  for (uint32_t i : idx) {
    const size_t s = std::upper_bound(starts.begin(), starts.end(), i) - starts.begin() - 1;
    const uint64_t from = src[s].offset + (i - starts[s]) * q.elem_bytes;
    const uint64_t to = dst[d].offset + uint64_t{in_d} * q.elem_bytes;
    std::memmove(region + to, region + from, q.elem_bytes);
    if (++in_d == dst[d].count) {
      ++d;
      in_d = 0;
    }
  }
  return OkStatus();
}

Status hash_lookup(const uint8_t* region, uint64_t region_bytes, Reader r, std::string* out) {
  w::HashLookupRequest q;
  FARMEM_TRY(r.take(&q, "hash lookup request"));
  if (q.key_bytes == 0 || q.key_bytes > w::kMaxHashKeyBytes ||
      q.value_bytes > w::kMaxHashValueBytes || q.slots == 0 || q.slots > 1024 || q.n_buckets == 0 ||
      q.n_buckets > w::kMaxHashBuckets) {
    return InvalidArgument("hash lookup sizes out of range");
  }
  const uint8_t* key = nullptr;
  FARMEM_TRY(r.take_bytes(q.key_bytes, &key, "hash key"));
  const uint64_t slot = uint64_t{q.key_bytes} + q.value_bytes;
  const uint64_t bucket_bytes = sizeof(w::BucketHeader) + slot * q.slots;
  std::vector<uint64_t> buckets(q.n_buckets);
  for (auto& b : buckets) {
    FARMEM_TRY(r.take(&b, "bucket offset"));
    FARMEM_TRY(check_span(b, bucket_bytes, region_bytes));
  }
  FARMEM_TRY(r.done());
  w::HashLookupReply rep{static_cast<uint8_t>(w::HashOutcome::kGoOn), {0, 0, 0}, 0};
  for (uint32_t bi = 0; bi < buckets.size(); ++bi) {
    const uint8_t* b = region + buckets[bi];
    w::BucketHeader h;
    std::memcpy(&h, b, sizeof(h));
    const uint32_t n = std::min<uint32_t>(h.count, q.slots);  // a torn count is clamped
    for (uint32_t s = 0; s < n; ++s) {
      const uint8_t* at = b + sizeof(h) + s * slot;
      if (std::memcmp(at, key, q.key_bytes) == 0) {
        rep.outcome = static_cast<uint8_t>(w::HashOutcome::kFound);
        rep.bucket = bi;
        out->append(reinterpret_cast<const char*>(&rep), sizeof(rep));
        out->append(reinterpret_cast<const char*>(at + q.key_bytes), q.value_bytes);
        return OkStatus();
      }
    }
    if (!(h.flags & w::kBucketOverflowed)) {
      rep.outcome = static_cast<uint8_t>(w::HashOutcome::kAbsent);
      rep.bucket = bi;
      break;
    }
    rep.bucket = bi;
  }
  out->append(reinterpret_cast<const char*>(&rep), sizeof(rep));
  return OkStatus();
}

template <typename T>
void top_k_typed(const uint8_t* region, const std::vector<w::Range>& vals, uint32_t k,
                 std::string* out) {
  // (value, -position): a larger value first, then a lower position.
  std::vector<std::pair<T, uint64_t>> best;
  auto better = [](const std::pair<T, uint64_t>& a, const std::pair<T, uint64_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  uint64_t pos = 0;
  for (const w::Range& g : vals) {
    for (uint32_t i = 0; i < g.count; ++i, ++pos) {
      std::pair<T, uint64_t> item{load<T>(region, g.offset + 8ull * i), pos};
      if (best.size() < k) {
        best.push_back(item);
        std::push_heap(best.begin(), best.end(), better);
      } else if (better(item, best.front())) {
        std::pop_heap(best.begin(), best.end(), better);
        best.back() = item;
        std::push_heap(best.begin(), best.end(), better);
      }
    }
  }
  std::sort(best.begin(), best.end(), better);
  for (const auto& [v, p] : best) {
    w::TopKItem it{w::to_bits(v), p};
    out->append(reinterpret_cast<const char*>(&it), sizeof(it));
  }
}

Status top_k(const uint8_t* region, uint64_t region_bytes, Reader r, std::string* out) {
  w::TopKRequest q;
  FARMEM_TRY(r.take(&q, "top-k request"));
  FARMEM_TRY(check_type(q.type));
  if (q.reserved0 != 0) return ProtocolError("reserved top-k field not 0");
  if (q.k == 0 || q.k > w::kMaxTopK) return InvalidArgument("k out of range");
  if (q.n_ranges == 0 || q.n_ranges > w::kMaxRanges) return InvalidArgument("bad range count");
  std::vector<w::Range> vals;
  uint64_t total = 0;
  FARMEM_TRY(take_ranges(&r, q.n_ranges, 8, region_bytes, &vals, &total));
  if (total > w::kMaxScanElements) return InvalidArgument("request scans too many elements");
  FARMEM_TRY(r.done());
  switch (static_cast<w::ElemType>(q.type)) {
    case w::ElemType::kU64:
      top_k_typed<uint64_t>(region, vals, q.k, out);
      break;
    case w::ElemType::kI64:
      top_k_typed<int64_t>(region, vals, q.k, out);
      break;
    case w::ElemType::kF64:
      top_k_typed<double>(region, vals, q.k, out);
      break;
  }
  return OkStatus();
}

class FarWorker : public memnode::ServiceWorker {
 public:
  explicit FarWorker(const memnode::WorkerContext& c) : node_(*c.node) {}
  void handle(memnode::Request& r, memnode::Responder responder) override {
    std::string out;
    Status s = handle_far_request(node_.region_base, node_.region_bytes, r.header.opcode,
                                  r.payload.data(), r.payload.size(), &out);
    responder.finish(s, out);
  }

 private:
  memnode::NodeState& node_;
};

class FarService : public memnode::Service {
 public:
  std::string_view name() const override { return "far"; }
  uint16_t first_opcode() const override { return w::kFirstOpcode; }
  uint16_t last_opcode() const override { return w::kLastOpcode; }
  std::unique_ptr<memnode::ServiceWorker> start_worker(const memnode::WorkerContext& c) override {
    return std::make_unique<FarWorker>(c);
  }
};

}  // namespace

std::shared_ptr<memnode::Service> make_far_service() { return std::make_shared<FarService>(); }

Status handle_far_request(uint8_t* region, uint64_t region_bytes, uint16_t opcode,
                          const uint8_t* payload, size_t bytes, std::string* out) {
  Reader r(payload, bytes);
  switch (static_cast<w::Op>(opcode)) {
    case w::Op::kAggregate:
      return aggregate(region, region_bytes, r, out);
    case w::Op::kFilter:
      return filter(region, region_bytes, r, out);
    case w::Op::kGather:
      return gather(region, region_bytes, r);
    case w::Op::kHashLookup:
      return hash_lookup(region, region_bytes, r, out);
    case w::Op::kTopK:
      return top_k(region, region_bytes, r, out);
  }
  return InvalidArgument(fmt::format("unknown far service opcode {}", opcode));
}

}  // namespace farmem::far
