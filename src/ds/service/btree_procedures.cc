// The B+tree's served scan on the memory node (ds/btree/served.h, docs/formats/btree_served.md):
// a scan's dependent page reads inside one kCall.
#include "btree_procedures.h"

#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "farmem/client/global_address.h"
#include "farmem/ds/btree/layout.h"
#include "farmem/ds/btree/served.h"
#include "farmem/ds/common/kv_block.h"
#include "farmem/fabric/wire.h"

namespace farmem::ds::btree {

namespace {

using memnode::ProcedureCall;
using Outcome = ServedScanOutcome;

struct Args {
  ServedScanArgs a{};
  std::string_view from, to;
  uint32_t reserve = 0;  // reply bytes kept for the next key and the level-1 image
};

bool in_region(const ProcedureCall& c, uint64_t offset, uint64_t bytes) {
  return offset % 8 == 0 && offset >= wire::kRegionHeaderBytes && offset <= c.region_bytes &&
         c.region_bytes - offset >= bytes;
}

Status check_args(const ProcedureCall& c, Args* out) {
  ServedScanArgs& a = out->a;
  if (c.args_bytes < sizeof(a)) return InvalidArgument("btree scan arguments are truncated");
  std::memcpy(&a, c.args, sizeof(a));
  if (!valid_page_bytes(a.page_bytes) || a.from_bytes > kMaxKeyBytes || a.to_bytes > kMaxKeyBytes ||
      (a.flags & ~kScanWantIndex) != 0 || c.args_bytes != sizeof(a) + a.from_bytes + a.to_bytes) {
    return InvalidArgument(fmt::format(
        "btree scan with {}-byte pages, keys of {} and {} bytes, flags {:#x} in {} argument bytes",
        a.page_bytes, a.from_bytes, a.to_bytes, a.flags, c.args_bytes));
  }
  if (!in_region(c, a.page, a.page_bytes)) {
    return OutOfRange(fmt::format("btree scan names a page at offset {}", a.page));
  }
  out->reserve = kMaxKeyBytes + ((a.flags & kScanWantIndex) != 0 ? a.page_bytes : 0);
  if (c.out_capacity < sizeof(ServedScanResult) + out->reserve) {
    return InvalidArgument("btree scan reply slot is too small for its result");
  }
  const char* keys = reinterpret_cast<const char*>(c.args) + sizeof(a);
  out->from = std::string_view(keys, a.from_bytes);
  out->to = std::string_view(keys + a.from_bytes, a.to_bytes);
  return OkStatus();
}

// Copies a page out of the region word by word (its writers change it meanwhile; the checksum
// tells a torn copy).
void load_page(const ProcedureCall& c, uint64_t offset, uint32_t page_bytes, char* buf) {
  const auto* words = reinterpret_cast<const uint64_t*>(c.region + offset);
  for (uint32_t i = 0; i < page_bytes / 8; ++i) {
    const uint64_t w = __atomic_load_n(words + i, __ATOMIC_ACQUIRE);
    std::memcpy(buf + 8 * i, &w, 8);
  }
}

// One call's walk: the reply it fills (records from the front), where it is and what it found.
class Scan {
 public:
  Scan(const ProcedureCall& c, const Args& args) : c_(c), args_(args), next_(args.from) {}

  Outcome run();
  // Writes the result, the next key and the level-1 image; returns the reply's bytes.
  size_t finish(Outcome o);

 private:
  // The leaf's records from next_ on; nullopt when the scan goes on past its high fence.
  std::optional<Outcome> take(const PageView& v);
  // An out-of-place value, when its block lies on this node and is whole.
  std::optional<std::string_view> block_value(const PageView& v, uint32_t i) const;
  bool add(std::string_view key, std::string_view value);
  // Moves on to the page `packed` names: false (with next_page_ set) when it is on another node.
  bool go(uint64_t packed);

  const ProcedureCall& c_;
  const Args& args_;
  std::string next_;  // every key < next_ has been dealt with
  uint64_t at_ = 0;   // region offset of the current page
  size_t used_ = sizeof(ServedScanResult);
  uint32_t records_ = 0;
  uint16_t pages_ = 0, hops_ = 0;
  uint64_t next_page_ = 0, index_page_ = 0;
  char page_[kMaxPageBytes];
  char index_[kMaxPageBytes];
};

bool Scan::go(uint64_t packed) {
  const GlobalAddress g = GlobalAddress::unpack(packed);
  if (g.node() != args_.a.node) {
    next_page_ = packed;
    return false;
  }
  at_ = g.offset();
  return true;
}

Outcome Scan::run() {
  const uint32_t page_bytes = args_.a.page_bytes;
  const bool want_index = (args_.a.flags & kScanWantIndex) != 0;
  bool at_leaves = false;
  at_ = args_.a.page;
  for (;;) {
    if (pages_ == kMaxServedScanPages) {
      next_page_ = GlobalAddress(args_.a.node, at_).pack();
      return Outcome::kFull;
    }
    if (!in_region(c_, at_, page_bytes)) return Outcome::kRestart;
    load_page(c_, at_, page_bytes, page_);
    ++pages_;
    PageView v;
    const PageView::Check check = v.parse(page_, page_bytes, args_.a.tree_id);
    if (check == PageView::Check::kForeign) return Outcome::kRestart;
    // A durable node's reader waits for a page mid-write (its redo may replace it after a crash).
    if (check == PageView::Check::kTorn || (c_.durable && v.header().redo != 0)) {
      return Outcome::kTorn;
    }
    if (v.dead() || v.below(next_)) return Outcome::kRestart;
    uint64_t to = 0;
    if (v.beyond(next_)) {
      hops_ += at_leaves ? 0 : 1;
      to = v.sibling();
    } else if (!v.leaf()) {
      if (v.level() == 1 && want_index && index_page_ == 0) {
        std::memcpy(index_, page_, page_bytes);
        index_page_ = GlobalAddress(args_.a.node, at_).pack();
      }
      to = v.child_for(next_);
    } else {
      at_leaves = true;
      if (auto o = take(v)) return *o;
      if (v.high_infinite()) return Outcome::kDone;
      next_.assign(v.high());
      if (!args_.to.empty() && next_ >= args_.to) return Outcome::kDone;
      if (args_.a.limit != 0 && records_ >= args_.a.limit) return Outcome::kDone;
      to = v.sibling();
    }
    if (to == 0) return Outcome::kRestart;  // a page with a high fence names its sibling
    if (!go(to)) return Outcome::kElsewhere;
  }
}

std::optional<Outcome> Scan::take(const PageView& v) {
  for (uint32_t i = next_.empty() ? 0 : v.lower_bound(next_); i < v.count(); ++i) {
    const std::string_view k = v.key(i);
    if (!args_.to.empty() && k >= args_.to) return Outcome::kDone;
    if (args_.a.limit != 0 && records_ >= args_.a.limit) return Outcome::kDone;
    std::optional<std::string_view> value =
        v.out_of_place(i) ? block_value(v, i) : v.inline_value(i);
    if (!value) {
      next_.assign(k);
      return Outcome::kTorn;
    }
    if (!add(k, *value)) {
      next_.assign(k);
      next_page_ = GlobalAddress(args_.a.node, at_).pack();
      return Outcome::kFull;
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> Scan::block_value(const PageView& v, uint32_t i) const {
  const GlobalAddress b = GlobalAddress::unpack(v.block(i));
  const std::string_view key = v.key(i);
  const uint64_t bytes = kv_block_bytes(key.size(), v.block_value_bytes(i));
  if (b.node() != args_.a.node || !in_region(c_, b.offset(), bytes)) return std::nullopt;
  KvBlockView kv;
  size_t need = 0;
  if (check_kv_block(reinterpret_cast<const char*>(c_.region + b.offset()), bytes, kMaxKeyBytes,
                     kMaxValueBytes, &kv, &need) != BlockCheck::kOk ||
      kv.key != key || kv.value.size() > UINT16_MAX) {
    return std::nullopt;  // reclaimed since the leaf was read, or too long for a record
  }
  return kv.value;
}

bool Scan::add(std::string_view key, std::string_view value) {
  const size_t n = sizeof(ServedRecordHeader) + key.size() + value.size();
  if (value.size() > UINT16_MAX || used_ + n + args_.reserve > c_.out_capacity) return false;
  const ServedRecordHeader h{static_cast<uint16_t>(key.size()),
                             static_cast<uint16_t>(value.size())};
  std::memcpy(c_.out + used_, &h, sizeof(h));
  std::memcpy(c_.out + used_ + sizeof(h), key.data(), key.size());
  std::memcpy(c_.out + used_ + sizeof(h) + key.size(), value.data(), value.size());
  used_ += n;
  ++records_;
  return true;
}

size_t Scan::finish(Outcome o) {
  ServedScanResult r{};
  r.outcome = static_cast<uint32_t>(o);
  r.records = records_;
  r.next_page = (o == Outcome::kElsewhere || o == Outcome::kFull) ? next_page_ : 0;
  r.index_page = index_page_;
  if (o != Outcome::kDone) {
    r.next_key_bytes = static_cast<uint16_t>(next_.size());
    std::memcpy(c_.out + used_, next_.data(), next_.size());
    used_ += next_.size();
  }
  r.pages = pages_;
  r.hops = hops_;
  std::memcpy(c_.out, &r, sizeof(r));
  if (index_page_ != 0) {
    std::memcpy(c_.out + used_, index_, args_.a.page_bytes);
    used_ += args_.a.page_bytes;
  }
  return used_;
}

}  // namespace

Result<size_t> served_scan(const ProcedureCall& call) {
  Args args;
  FARMEM_TRY(check_args(call, &args));
  Scan scan(call, args);
  const Outcome o = scan.run();
  return scan.finish(o);
}

}  // namespace farmem::ds::btree
