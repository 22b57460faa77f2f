// BTree's served scan: on nodes whose one-sided operations are served anyway (TCP), a scan's
// page walk runs on the node as one call per node it crosses (btree.h, ds/btree/served.h,
// docs/formats/btree_served.md). What the node hands back (a torn page, a value it cannot read)
// the one-sided scan goes on with.
#include <algorithm>
#include <cstring>

#include "farmem/client/call_result.h"
#include "farmem/ds/btree/btree.h"
#include "farmem/ds/common/call_buffers.h"

namespace farmem::ds::btree {

using client::Batch;
using runtime::Task;
using Outcome = ServedScanOutcome;

namespace {

constexpr size_t kMaxRecordHint = wire::kMaxMemOpBytes;

// Reply slot bytes for a call that may return `limit` records (0: any number).
size_t slot_bytes(size_t limit, uint32_t record_hint, uint32_t reserve) {
  const size_t fixed = sizeof(wire::CallReplyHeader) + sizeof(ServedScanResult) + reserve;
  const size_t records = limit == 0 ? wire::kMaxCallReplyBytes
                                    : std::max<size_t>(limit * record_hint + record_hint / 4, 512);
  return std::min<size_t>(wire::kMaxCallReplyBytes, fixed + records);
}

}  // namespace

bool BTree::served_node(uint16_t node) const {
  return options_.served_procedures && client_->served(node) && !procedures_.missing(node);
}

Task<Status> BTree::served_scan(OpContext& op, std::string* next, std::string_view to, size_t limit,
                                std::vector<std::pair<std::string, std::string>>* out, bool* done) {
  *done = false;
  GlobalAddress start;  // null: the index cache's leaf or the root
  // Calls that returned no record, in a row: a walk across nodes descends a level or moves
  // right with each; past this the one-sided scan takes over.
  uint32_t idle = 0;
  bool descending = false;  // on the way down from the root, above the level-1 page
  while (idle <= kMaxLevels) {
    bool from_root = false;
    if (start.is_null()) start = cache_.leaf_for(*next);
    if (start.is_null()) {
      if (root_.is_null()) FARMEM_CO_TRY(co_await refresh_root(op));
      start = root_;
      from_root = descending = true;
    }
    if (!served_node(start.node())) co_return OkStatus();
    const std::string first = *next;
    const size_t before = out->size();
    auto r = co_await call_scan(op, start, descending, next, to, limit, out);
    FARMEM_CO_TRY(r);
    idle = out->size() == before ? idle + 1 : 0;
    // Still above the level-1 page: the walk left the node before reaching it.
    descending = descending && r->index_page == 0 && out->size() == before &&
                 r->outcome == static_cast<uint32_t>(Outcome::kElsewhere);
    if (r->hops != 0 && !from_root) cache_.invalidate(first);  // its parent missed a split
    switch (static_cast<Outcome>(r->outcome)) {
      case Outcome::kDone:
        *done = true;
        co_return OkStatus();
      case Outcome::kElsewhere:
      case Outcome::kFull:
        start = GlobalAddress::unpack(r->next_page);
        break;
      case Outcome::kRestart:
        ++stats_.restarts;
        if (from_root) {
          FARMEM_CO_TRY(co_await refresh_root(op));
        } else {
          cache_.invalidate(*next);
        }
        start = GlobalAddress();
        break;
      case Outcome::kTorn:
        ++stats_.served_fallbacks;
        co_return OkStatus();
    }
  }
  ++stats_.served_fallbacks;
  co_return OkStatus();
}

Task<Result<ServedScanResult>> BTree::call_scan(
    OpContext& op, GlobalAddress start, bool want_index, std::string* next, std::string_view to,
    size_t limit, std::vector<std::pair<std::string, std::string>>* out) {
  ServedScanArgs a{};
  a.page = start.offset();
  a.tree_id = tree_id_;
  a.page_bytes = page_bytes_;
  const size_t remaining = limit == 0 ? 0 : limit - out->size();
  a.limit = static_cast<uint32_t>(std::min<size_t>(remaining, UINT32_MAX));
  a.node = start.node();
  a.from_bytes = static_cast<uint16_t>(next->size());
  a.to_bytes = static_cast<uint16_t>(to.size());
  a.flags = want_index ? kScanWantIndex : 0;
  const uint32_t reserve = kMaxKeyBytes + (want_index ? page_bytes_ : 0);
  CallBuffers bufs(sizeof(a) + next->size() + to.size(),
                   slot_bytes(remaining, record_hint_, reserve));
  std::memcpy(bufs.args(), &a, sizeof(a));
  std::memcpy(bufs.args() + sizeof(a), next->data(), next->size());
  std::memcpy(bufs.args() + sizeof(a) + next->size(), to.data(), to.size());
  Batch batch(*client_);
  FARMEM_CO_TRY(batch.call(start.node(), kProcBtreeScan, bufs.args(), bufs.args_bytes, bufs.slot(),
                           bufs.slot_bytes));
  Status st = co_await batch.wait();
  FARMEM_CO_TRY(st);
  ++op.round_trips;
  ++stats_.served_calls;
  auto body = client::call_result(bufs.slot(), bufs.slot_bytes);
  if (body.status().code() == StatusCode::kNotFound) {  // a node without the procedure
    procedures_.mark_missing(start.node());
    ServedScanResult r{};
    r.outcome = static_cast<uint32_t>(Outcome::kTorn);  // the one-sided path from *next
    co_return r;
  }
  FARMEM_CO_TRY(body);
  co_return read_scan_result(start.node(), *body, next, out);
}

Result<ServedScanResult> BTree::read_scan_result(
    uint16_t node, std::string_view body, std::string* next,
    std::vector<std::pair<std::string, std::string>>* out) {
  ServedScanResult r;
  if (body.size() < sizeof(r)) return ProtocolError("short btree scan result");
  std::memcpy(&r, body.data(), sizeof(r));
  if (r.outcome > kLastServedScanOutcome || r.next_key_bytes > kMaxKeyBytes) {
    return ProtocolError("malformed btree scan result");
  }
  size_t at = sizeof(r);
  uint32_t widest = 0;
  const size_t need = out->size() + std::min<size_t>(r.records, body.size() / 4);
  if (need > out->capacity()) out->reserve(std::max(need, 2 * out->capacity()));
  for (uint32_t i = 0; i < r.records; ++i) {
    ServedRecordHeader h;
    if (body.size() - at < sizeof(h)) return ProtocolError("btree scan records are truncated");
    std::memcpy(&h, body.data() + at, sizeof(h));
    at += sizeof(h);
    if (h.key_bytes == 0 || h.key_bytes > kMaxKeyBytes ||
        body.size() - at < size_t{h.key_bytes} + h.value_bytes) {
      return ProtocolError("btree scan record overruns its result");
    }
    // assign() copies through libc's memcpy; an inlined copy of a few bytes costs more.
    auto& record = out->emplace_back();
    record.first.assign(body.data() + at, h.key_bytes);
    record.second.assign(body.data() + at + h.key_bytes, h.value_bytes);
    at += h.key_bytes + h.value_bytes;
    widest = std::max<uint32_t>(widest, sizeof(h) + h.key_bytes + h.value_bytes);
  }
  stats_.scan_records += r.records;
  stats_.served_pages += r.pages;
  // The widest record seen lately (it decays slowly; a record past it costs one more call).
  if (r.records != 0) {
    record_hint_ = static_cast<uint32_t>(
        std::min<size_t>(kMaxRecordHint, std::max<size_t>(widest, record_hint_ * 7 / 8)));
  }
  const size_t index_bytes = r.index_page != 0 ? page_bytes_ : 0;
  const bool done = r.outcome == static_cast<uint32_t>(Outcome::kDone);
  if (body.size() - at != (done ? 0 : r.next_key_bytes) + index_bytes) {
    return ProtocolError("btree scan result and its lengths disagree");
  }
  if (!done) {
    next->assign(body.substr(at, r.next_key_bytes));
    at += r.next_key_bytes;
  }
  if (index_bytes != 0) {
    PageView v;
    const GlobalAddress page = GlobalAddress::unpack(r.index_page);
    if (page.node() == node &&
        v.parse(body.data() + at, page_bytes_, tree_id_) == PageView::Check::kWhole &&
        v.level() == 1) {
      cache_.insert(page, body.data() + at);
    }
  }
  return r;
}

}  // namespace farmem::ds::btree
