// BTree: page locks (HOCL: local queue + remote lease word), combined write-back with a redo
// copy, inserts, updates, erases, splits, root growth and unlinking of empty leaves.
#include <fmt/format.h>

#include <algorithm>

#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/ds/btree/btree.h"
#include "farmem/ds/common/kv_block.h"
#include "farmem/ds/common/lease_lock.h"

namespace farmem::ds::btree {

using client::Batch;
using runtime::Task;

// ------------------------------------------------------------------------------------------
// Locks

Task<Status> BTree::lock_page(GlobalAddress page) {
  const bool handed = co_await locks_.enter(page.pack());
  if (handed) co_return OkStatus();
  const uint64_t me = client_->session_id(page.node());
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  const uint64_t since = now_ns();
  uint64_t checked = since;
  const uint64_t lease_ns = options_.lease_check_ms * 1'000'000;
  for (;;) {
    uint64_t found = 0;
    Status st = co_await client_->cas(page, 0, me, &found);
    if (!st.ok()) {
      locks_.leave(page.pack(), false);
      co_return st;
    }
    if (found == 0) {
      backoff.succeeded();
      co_return OkStatus();
    }
    ++stats_.lock_retries;
    const uint64_t now = now_ns();
    if (now - checked >= lease_ns) {
      checked = now;
      LeaseLock lease(client_, page, 0);
      auto attempt = co_await lease.try_acquire();
      if (!attempt.ok()) {
        locks_.leave(page.pack(), false);
        co_return attempt.status();
      }
      if (attempt->acquired) {
        if (!attempt->taken_over) co_return OkStatus();
        ++stats_.takeovers;
        Status rs = co_await repair(page);
        if (!rs.ok()) {
          Status us = co_await unlock_page(page);
          (void)us;
          co_return rs;
        }
        co_return OkStatus();
      }
      found = attempt->holder;
    }
    if (now - since > lock_wait_ns()) {
      locks_.leave(page.pack(), false);
      co_return TimedOut(fmt::format(
          "B+tree page {}:{:#x} has been locked by live session {} for {} ms (stopped or very "
          "slow); the page is intact",
          page.node(), page.offset(), found, (now - since) / 1'000'000));
    }
    co_await backoff.retry();
  }
}

Task<Status> BTree::unlock_page(GlobalAddress page) {
  const bool hand = locks_.will_hand_over(page.pack());
  Status st;
  if (!hand) {
    uint64_t zero = 0;
    st = co_await client_->write(page, &zero, 8);
  }
  locks_.leave(page.pack(), hand);
  co_return st;
}

Task<Status> BTree::lock_covering(std::string_view key, uint32_t level, char* buf,
                                  GlobalAddress* addr, PageView* v) {
  uint32_t reads = 0;
  GlobalAddress a;
  bool located = false;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    if (!located) {
      Status st = co_await locate(key, level, buf, &a, v, &reads);
      FARMEM_CO_TRY(st);
    }
    located = false;
    Status st = co_await lock_page(a);
    FARMEM_CO_TRY(st);
    bool foreign = false;
    st = co_await fetch(a, buf, v, &foreign, &reads, /*locked=*/true);
    if (!st.ok()) {
      Status us = co_await unlock_page(a);
      (void)us;
      co_return st;
    }
    if (!foreign && !v->below(key) && !v->beyond(key) && v->level() == level) {
      *addr = a;
      co_return OkStatus();
    }
    Status us = co_await unlock_page(a);
    FARMEM_CO_TRY(us);
    if (!foreign && v->beyond(key) && v->level() == level && v->sibling() != 0) {
      ++stats_.sibling_hops;  // split since we located it: the right neighbour covers key
      a = GlobalAddress::unpack(v->sibling());
      located = true;
      continue;
    }
    ++stats_.restarts;
    if (level == 0) cache_.invalidate(key);
  }
  co_return RetriesExhausted("B+tree lock (the page kept moving)", options_.max_attempts);
}

// ------------------------------------------------------------------------------------------
// Write-back with a redo copy, and repair

Task<Status> BTree::write_back(GlobalAddress page, const char* image, bool unlock) {
  const uint16_t node = page.node();
  GlobalAddress slot;
  if (!free_logs_[node].empty()) {
    slot = free_logs_[node].back();
    free_logs_[node].pop_back();
  } else {
    auto s = co_await heap_.allocate(node, page_bytes_);
    if (!s.ok()) {
      if (unlock) {
        Status us = co_await unlock_page(page);
        (void)us;
      }
      co_return s.status();
    }
    slot = *s;
  }
  PageHeader h;
  std::memcpy(&h, image, sizeof(h));
  const size_t n = sizeof(PageHeader) - 16 + h.used;  // bytes [16, 64 + used)
  const bool hand = unlock && locks_.will_hand_over(page.pack());
  const uint64_t slot_word = slot.pack();
  const uint64_t zero = 0;
  Status st;
  {
    Batch b(*client_);
    (void)b.write(slot, image + 16, n);
    (void)b.fence();
    (void)b.write(page + 8, &slot_word, 8);
    (void)b.fence();
    if (die_mid_write_) {
      (void)b.write(page + 16, image + 16, n / 2);
      st = co_await b.wait();
      co_return Cancelled("test hook: the writer died in the middle of a page write");
    }
    (void)b.write(page + 16, image + 16, n);
    (void)b.fence();
    (void)b.write(page + 8, &zero, 8);
    if (unlock && !hand) {
      (void)b.fence();
      (void)b.write(page, &zero, 8);
    }
    st = co_await b.wait();
  }
  free_logs_[node].push_back(slot);
  if (unlock) locks_.leave(page.pack(), hand);
  co_return st;
}

Task<Status> BTree::repair(GlobalAddress page) {
  uint64_t redo = 0;
  Status st = co_await client_->read(page + 8, &redo, 8);
  if (!st.ok() || redo == 0) co_return st;
  BufRef buf(this);
  std::memset(buf.get(), 0, 16);
  st = co_await client_->read(GlobalAddress::unpack(redo), buf.get() + 16, page_bytes_ - 16);
  FARMEM_CO_TRY(st);
  PageView v;
  if (v.parse(buf.get(), page_bytes_, tree_id_) != PageView::Check::kWhole) {
    co_return Internal(
        fmt::format("B+tree page {}:{:#x}: its dead writer's redo copy is not a "
                    "whole page",
                    page.node(), page.offset()));
  }
  const size_t n = sizeof(PageHeader) - 16 + v.header().used;
  const uint64_t zero = 0;
  Batch b(*client_);
  (void)b.write(page + 16, buf.get() + 16, n);
  (void)b.fence();
  (void)b.write(page + 8, &zero, 8);
  st = co_await b.wait();
  if (st.ok()) ++stats_.repairs;
  co_return st;
}

Task<Result<GlobalAddress>> BTree::new_page() {
  const uint16_t node = nodes_[next_node_++ % nodes_.size()];
  auto a = co_await heap_.allocate(node, page_bytes_);
  co_return a;
}

Task<Result<GlobalAddress>> BTree::write_block(GlobalAddress near, std::string_view key,
                                               std::string_view value, uint64_t* bytes) {
  const uint16_t node = near.is_null() ? nodes_[next_node_++ % nodes_.size()] : near.node();
  std::string image;
  encode_kv_block(key, value, client_->session_id(node), &image);
  *bytes = image.size();
  auto a = co_await heap_.allocate(node, image.size());
  FARMEM_CO_TRY(a);
  Status st = co_await client_->write(*a, image.data(), image.size());
  FARMEM_CO_TRY(st);
  co_return a;
}

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
  Status st = co_await client_->write(*a, img.get(), page_bytes_);
  uint64_t found = 0;
  if (st.ok()) st = co_await client_->cas(meta_, old_root.pack(), a->pack(), &found);
  if (st.ok() && found == old_root.pack()) {
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
      uint32_t reads = 0;
      FARMEM_CO_TRY(co_await refresh_root(&reads));
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

// ------------------------------------------------------------------------------------------
// Leaf operations

Task<Status> BTree::write_leaf(std::string_view key, std::string_view value, Mode mode) {
  FARMEM_CO_TRY(check_key(key));
  if (value.size() > kMaxValueBytes) {
    co_return InvalidArgument(
        fmt::format("value of {} bytes exceeds the {}-byte maximum", value.size(), kMaxValueBytes));
  }
  const bool oop = value.size() > inline_bytes_;
  GlobalAddress block;
  uint64_t block_bytes = 0;
  std::string entry;
  if (oop) {
    auto b = co_await write_block(GlobalAddress(), key, value, &block_bytes);
    FARMEM_CO_TRY(b);
    block = *b;
    entry = out_of_place_entry(key, block.pack(), static_cast<uint32_t>(value.size()));
  } else {
    entry = leaf_entry(key, value);
  }
  BufRef buf(this);
  GlobalAddress a;
  PageView v;
  Status st = co_await lock_covering(key, 0, buf.get(), &a, &v);
  if (!st.ok()) {
    if (oop) (void)co_await heap_.free(block, block_bytes);
    co_return st;
  }
  const uint32_t i = v.lower_bound(key);
  const bool exists = i < v.count() && v.key(i) == key;
  if ((exists && mode == Mode::kInsert) || (!exists && mode == Mode::kUpdate)) {
    Status us = co_await unlock_page(a);
    if (oop) (void)co_await heap_.free(block, block_bytes);
    FARMEM_CO_TRY(us);
    if (exists) co_return AlreadyExists("key present");
    co_return NotFound("key not present");
  }
  GlobalAddress old_block;
  uint64_t old_bytes = 0;
  if (exists && v.out_of_place(i)) {
    old_block = GlobalAddress::unpack(v.block(i));
    old_bytes = kv_block_bytes(key.size(), v.block_value_bytes(i));
  }
  PageDraft d = PageDraft::from(v);
  if (exists) {
    d.entries[i] = entry;
  } else {
    d.entries.insert(d.entries.begin() + i, entry);
  }
  st = co_await store(a, d);
  if (!st.ok()) {
    // The new entry may be in the page (a timed-out write): keep the block until the grace
    // period has passed rather than reuse it at once.
    if (oop) (void)co_await reclaimer_.retire(block, block_bytes);
    co_return st;
  }
  if (!old_block.is_null()) {
    Status rs = co_await reclaimer_.retire(old_block, old_bytes);
    (void)rs;
  }
  co_return OkStatus();
}

Task<Status> BTree::insert(std::string_view key, std::string_view value) {
  ++stats_.inserts;
  Status st = co_await write_leaf(key, value, Mode::kInsert);
  co_return st;
}

Task<Status> BTree::update(std::string_view key, std::string_view value) {
  ++stats_.updates;
  Status st = co_await write_leaf(key, value, Mode::kUpdate);
  co_return st;
}

Task<Status> BTree::put(std::string_view key, std::string_view value) {
  ++stats_.puts;
  Status st = co_await write_leaf(key, value, Mode::kPut);
  co_return st;
}

Task<Status> BTree::erase(std::string_view key) {
  FARMEM_CO_TRY(check_key(key));
  ++stats_.erases;
  BufRef buf(this);
  GlobalAddress a;
  PageView v;
  Status st = co_await lock_covering(key, 0, buf.get(), &a, &v);
  FARMEM_CO_TRY(st);
  const uint32_t i = v.lower_bound(key);
  if (i == v.count() || v.key(i) != key) {
    Status us = co_await unlock_page(a);
    FARMEM_CO_TRY(us);
    co_return NotFound("key not present");
  }
  GlobalAddress old_block;
  uint64_t old_bytes = 0;
  if (v.out_of_place(i)) {
    old_block = GlobalAddress::unpack(v.block(i));
    old_bytes = kv_block_bytes(key.size(), v.block_value_bytes(i));
  }
  PageDraft d = PageDraft::from(v);
  d.entries.erase(d.entries.begin() + i);
  const bool emptied = d.entries.empty() && !d.low_infinite;
  std::string low(d.low);
  st = co_await store(a, d);
  FARMEM_CO_TRY(st);
  if (!old_block.is_null()) {
    Status rs = co_await reclaimer_.retire(old_block, old_bytes);
    (void)rs;
  }
  if (emptied && options_.unlink_empty_leaves) {
    Status us = co_await unlink_leaf(a, std::move(low));
    (void)us;  // best effort: an empty leaf that stays linked is still a correct leaf
  }
  co_return OkStatus();
}

}  // namespace farmem::ds::btree

// ------------------------------------------------------------------------------------------
// Unlinking an empty leaf

namespace farmem::ds::btree {

Task<Status> BTree::left_neighbour(std::string_view low, GlobalAddress page, char* buf,
                                   GlobalAddress* left) {
  uint32_t reads = 0;
  if (root_.is_null()) FARMEM_CO_TRY(co_await refresh_root(&reads));
  GlobalAddress a = root_;
  for (uint32_t steps = 0; steps < options_.max_attempts; ++steps) {
    PageView v;
    bool foreign = false;
    FARMEM_CO_TRY(co_await fetch(a, buf, &v, &foreign, &reads));
    // The page must hold keys just below `low`: low fence < low <= high fence.
    if (foreign || (!v.low_infinite() && !(v.low() < low))) {
      a = root_;
      continue;
    }
    if (!v.high_infinite() && v.high() < low) {
      if (v.sibling() == 0) co_return Internal("B+tree page with a high fence but no sibling");
      a = GlobalAddress::unpack(v.sibling());
      continue;
    }
    if (v.leaf()) {
      if (v.sibling() == page.pack() && !v.high_infinite() && v.high() == low) {
        *left = a;
        co_return OkStatus();
      }
      co_return NotFound("the leaf's left neighbour changed");
    }
    const uint32_t i = v.lower_bound(low);  // first key >= low: descend left of it
    a = GlobalAddress::unpack(i == 0 ? v.header().child0 : v.child(i - 1));
  }
  co_return RetriesExhausted("B+tree left-neighbour search", options_.max_attempts);
}

Task<Status> BTree::unlink_leaf(GlobalAddress page, std::string low) {
  BufRef lb(this), pb(this), qb(this);
  GlobalAddress left;
  FARMEM_CO_TRY(co_await left_neighbour(low, page, lb.get(), &left));
  uint32_t reads = 0;
  bool foreign = false;
  PageView lv, pv, qv;
  // Locks in (level, key) order: the left leaf, the leaf, then the parent.
  FARMEM_CO_TRY(co_await lock_page(left));
  Status st = co_await fetch(left, lb.get(), &lv, &foreign, &reads, /*locked=*/true);
  if (!st.ok() || foreign || !lv.leaf() || lv.sibling() != page.pack() || lv.high_infinite() ||
      lv.high() != low) {
    Status us = co_await unlock_page(left);
    (void)us;
    co_return st;
  }
  st = co_await lock_page(page);
  if (st.ok()) st = co_await fetch(page, pb.get(), &pv, &foreign, &reads, /*locked=*/true);
  if (!st.ok() || foreign || pv.count() != 0 || pv.low_infinite() || pv.low() != low) {
    if (st.ok()) (void)co_await unlock_page(page);
    (void)co_await unlock_page(left);
    co_return st;
  }
  GlobalAddress parent;
  st = co_await lock_covering(low, 1, qb.get(), &parent, &qv);
  if (!st.ok()) {
    (void)co_await unlock_page(page);
    (void)co_await unlock_page(left);
    co_return st.code() == StatusCode::kNotFound ? OkStatus() : st;
  }
  PageDraft q = PageDraft::from(qv);
  const uint32_t i = qv.lower_bound(low);
  if (i < qv.count() && qv.key(i) == low && qv.child(i) == page.pack()) {
    q.entries.erase(q.entries.begin() + i);
  } else if (qv.header().child0 == page.pack()) {
    q.child0 = left.pack();  // the left leaf now also covers the start of this parent's range
  } else {
    // The parent does not list the leaf yet (its split is still being published): leave it.
    (void)co_await unlock_page(parent);
    (void)co_await unlock_page(page);
    (void)co_await unlock_page(left);
    co_return OkStatus();
  }
  // Descents now lead to the left leaf, which reaches this one by its sibling pointer until it
  // takes its range; then the leaf is marked dead (readers that still reach it start over).
  st = co_await store(parent, q);
  PageDraft l = PageDraft::from(lv);
  l.high_infinite = pv.high_infinite();
  l.high = pv.high();
  l.sibling = pv.sibling();
  if (st.ok()) {
    st = co_await store(left, l);
  } else {
    (void)co_await unlock_page(left);
  }
  PageDraft p = PageDraft::from(pv);
  p.flags |= kPageDead;
  if (st.ok()) {
    st = co_await store(page, p);
  } else {
    (void)co_await unlock_page(page);
  }
  FARMEM_CO_TRY(st);
  ++stats_.unlinked;
  Status rs = co_await reclaimer_.retire(page, page_bytes_);
  co_return rs;
}

}  // namespace farmem::ds::btree
