// BTree page splits: storing a locked page's draft, cut into pieces B-link style when it does not
// fit, the separators the parent level learns, and root growth (btree.h, docs/formats/btree.md).
#include <algorithm>
#include <cstring>

#include "farmem/ds/btree/btree.h"
#include "farmem/ds/common/durable.h"

namespace farmem::ds::btree {

using client::Batch;
using runtime::Task;

// ------------------------------------------------------------------------------------------
// Storing a page, splitting it when it does not fit

namespace {

size_t lcp(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size()), i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// How a full page is cut: piece p holds entries [cut[p], cut[p + 1]) of the draft (an internal
// piece p > 0 uses entry cut[p] as its low fence and child0, not as an entry).
struct SplitPlan {
  std::vector<uint32_t> cut;  // cut[0] = 0, last = n
};

class Splitter {
 public:
  Splitter(const PageDraft& d, uint32_t page_bytes) : d_(d), page_bytes_(page_bytes) {
    n_ = static_cast<uint32_t>(d.entries.size());
    prefix_.assign(n_ + 1, 0);
    for (uint32_t i = 0; i < n_; ++i) prefix_[i + 1] = prefix_[i] + 2 + d.entries[i].size();
  }
  // The separator between entries i - 1 and i (leaves: the shortest prefix of key i above key
  // i - 1; internal pages: key i itself).
  std::string_view sep(uint32_t i) const {
    std::string_view k = entry_key(d_.entries[i]);
    if (d_.level > 0) return k;
    return k.substr(0, std::min(k.size(), lcp(entry_key(d_.entries[i - 1]), k) + 1));
  }
  bool fits(uint32_t a, uint32_t b) const {
    uint64_t bytes = sizeof(PageHeader);
    if (a > 0) bytes += sep(a).size();
    if (a == 0 && !d_.low_infinite) bytes += d_.low.size();
    if (b < n_) bytes += sep(b).size();
    if (b == n_ && !d_.high_infinite) bytes += d_.high.size();
    const uint32_t first = (a > 0 && d_.level > 0) ? a + 1 : a;  // internal: entry a is child0
    if (first <= b) bytes += prefix_[b] - prefix_[first];
    return bytes <= page_bytes_;
  }
  SplitPlan plan() const {
    SplitPlan p;
    // Two pieces as even as possible.
    const uint32_t lo = d_.level > 0 ? 0 : 1;
    int64_t best = -1;
    uint64_t best_gap = UINT64_MAX;
    for (uint32_t m = std::max(lo, 1u); m < n_; ++m) {
      if (!fits(0, m) || !fits(m, n_)) continue;
      const uint64_t left = prefix_[m], right = prefix_[n_] - prefix_[m];
      const uint64_t gap = left > right ? left - right : right - left;
      if (gap < best_gap) {
        best_gap = gap;
        best = m;
      }
    }
    if (best > 0) {
      p.cut = {0, static_cast<uint32_t>(best), n_};
      return p;
    }
    // Large keys: as many pieces as it takes, each as full as it can be.
    p.cut = {0};
    uint32_t a = 0;
    while (a < n_) {
      uint32_t b = a + 1;
      for (uint32_t c = a + 1; c <= n_; ++c) {
        if (fits(a, c)) b = c;
      }
      p.cut.push_back(b);
      a = b;
    }
    return p;
  }
  // The draft of piece [a, b).
  PageDraft piece(uint32_t a, uint32_t b) const {
    PageDraft p;
    p.level = d_.level;
    p.tree_id = d_.tree_id;
    p.child0 = d_.child0;
    p.low_infinite = d_.low_infinite;
    p.low = d_.low;
    p.high_infinite = d_.high_infinite;
    p.high = d_.high;
    uint32_t first = a;
    if (a > 0) {
      p.low_infinite = false;
      p.low = sep(a);
      if (d_.level > 0) {
        uint64_t c;
        std::memcpy(&c, entry_key(d_.entries[a]).data() + entry_key(d_.entries[a]).size(), 8);
        p.child0 = c;
        first = a + 1;
      }
    }
    if (b < n_) {
      p.high_infinite = false;
      p.high = sep(b);
    }
    for (uint32_t i = first; i < b; ++i) p.entries.push_back(d_.entries[i]);
    return p;
  }

 private:
  const PageDraft& d_;
  uint32_t page_bytes_;
  uint32_t n_;
  std::vector<uint64_t> prefix_;
};

}  // namespace

Task<Status> BTree::store(GlobalAddress page, const PageDraft& d) {
  BufRef img(this);
  if (d.fits(page_bytes_)) {
    d.encode(img.get(), page_bytes_);
    Status st = co_await write_back(page, img.get(), /*unlock=*/true);
    co_return st;
  }
  Splitter splitter(d, page_bytes_);
  const SplitPlan plan = splitter.plan();
  const size_t pieces = plan.cut.size() - 1;
  std::vector<GlobalAddress> addrs(pieces);
  addrs[0] = page;
  Status st;
  for (size_t p = 1; p < pieces && st.ok(); ++p) {
    auto a = co_await new_page();
    if (a.ok()) {
      addrs[p] = *a;
    } else {
      st = a.status();
    }
  }
  std::vector<PageDraft> drafts;
  for (size_t p = 0; p < pieces; ++p)
    drafts.push_back(splitter.piece(plan.cut[p], plan.cut[p + 1]));
  for (size_t p = 0; p < pieces; ++p) {
    drafts[p].sibling = p + 1 < pieces ? addrs[p + 1].pack() : d.sibling;
  }
  // The new right pieces first (nobody reaches them yet), then the page itself.
  std::vector<std::string> images(pieces);
  if (st.ok()) {
    Batch b(*client_);
    for (size_t p = 1; p < pieces; ++p) {
      images[p].resize(page_bytes_);
      drafts[p].encode(images[p].data(), page_bytes_);
      (void)b.write(addrs[p], images[p].data(), page_bytes_);
    }
    st = co_await b.wait();
  }
  if (st.ok() && any_node_durable(client_)) {  // stable before the page links them
    std::vector<PersistRange> fresh;
    for (size_t p = 1; p < pieces; ++p) fresh.push_back({addrs[p], page_bytes_});
    st = co_await persist_all(client_, fresh);
  }
  if (!st.ok()) {
    for (size_t p = 1; p < pieces; ++p) {
      if (!addrs[p].is_null()) {
        Status fs = co_await heap_.free(addrs[p], page_bytes_);
        (void)fs;
      }
    }
    Status us = co_await unlock_page(page);
    (void)us;
    co_return st;
  }
  drafts[0].encode(img.get(), page_bytes_);
  st = co_await write_back(page, img.get(), /*unlock=*/true);
  FARMEM_CO_TRY(st);
  ++stats_.splits;
  // The tree is correct from here (the new pages are reachable through sibling pointers);
  // the parent learns of them for speed.
  for (size_t p = 1; p < pieces; ++p) {
    Status ps = co_await insert_separator(d.level + 1u, std::string(drafts[p].low), addrs[p], page);
    FARMEM_CO_TRY(ps);
  }
  co_return OkStatus();
}

Task<Result<bool>> BTree::grow_root(GlobalAddress old_root, uint32_t level, const std::string& sep,
                                    GlobalAddress child) {
  auto a = co_await new_page();
  FARMEM_CO_TRY(a);
  PageDraft d;
  d.level = static_cast<uint8_t>(level);
  d.tree_id = tree_id_;
  d.child0 = old_root.pack();
  const std::string e = internal_entry(sep, child.pack());
  d.entries.push_back(e);
  BufRef img(this);
  d.encode(img.get(), page_bytes_);
  Status st = co_await durable_write(client_, *a, img.get(), page_bytes_);
  uint64_t found = 0;
  if (st.ok()) st = co_await client_->cas(meta_, old_root.pack(), a->pack(), &found);
  if (st.ok() && found == old_root.pack()) {
    FARMEM_CO_TRY(co_await persist_if_durable(client_, meta_, 8));
    ++stats_.root_growths;
    if (root_level_ < level) {
      root_ = *a;
      root_level_ = level;
    }
    co_return true;
  }
  Status fs = co_await heap_.free(*a, page_bytes_);  // never published
  (void)fs;
  FARMEM_CO_TRY(st);
  co_return false;  // another client grew the tree first
}

Task<Status> BTree::insert_separator(uint32_t level, std::string sep, GlobalAddress child,
                                     GlobalAddress left) {
  if (level >= kMaxLevels) co_return ResourceExhausted("B+tree reached its maximum height");
  BufRef buf(this);
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    GlobalAddress a;
    PageView v;
    Status st = co_await lock_covering(sep, level, buf.get(), &a, &v);
    if (st.code() == StatusCode::kNotFound) {
      // The page split was the root (the leftmost page of the top level): grow a new root.
      OpContext op;
      FARMEM_CO_TRY(co_await refresh_root(op));
      if (root_level_ >= level) continue;
      if (root_level_ + 1 != level) co_return Internal("B+tree levels are not contiguous");
      auto grown = co_await grow_root(root_, level, sep, child);
      FARMEM_CO_TRY(grown);
      if (!*grown) continue;
      co_return OkStatus();
    }
    FARMEM_CO_TRY(st);
    const uint32_t i = v.lower_bound(sep);
    if (i < v.count() && v.key(i) == sep) {  // already there (cannot happen twice for a page)
      Status us = co_await unlock_page(a);
      co_return us;
    }
    PageDraft d = PageDraft::from(v);
    const std::string e = internal_entry(sep, child.pack());
    d.entries.insert(d.entries.begin() + i, e);
    Status ss = co_await store(a, d);
    co_return ss;
  }
  (void)left;
  co_return RetriesExhausted("B+tree separator insert", options_.max_attempts);
}

}  // namespace farmem::ds::btree
