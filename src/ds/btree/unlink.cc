// BTree unlinking of a leaf emptied by erase: its left neighbour takes its range, its parent drops
// it, it is marked dead and retired (btree.h, docs/formats/btree.md).
#include "farmem/ds/btree/btree.h"

namespace farmem::ds::btree {

using runtime::Task;

Task<Status> BTree::left_neighbour(std::string_view low, GlobalAddress page, char* buf,
                                   GlobalAddress* left) {
  OpContext op;
  if (root_.is_null()) FARMEM_CO_TRY(co_await refresh_root(op));
  GlobalAddress a = root_;
  for (uint32_t steps = 0; steps < options_.max_attempts; ++steps) {
    PageView v;
    bool foreign = false;
    FARMEM_CO_TRY(co_await fetch(op, a, buf, &v, &foreign));
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
  OpContext op;
  bool foreign = false;
  PageView lv, pv, qv;
  // Locks in (level, key) order: the left leaf, the leaf, then the parent.
  FARMEM_CO_TRY(co_await lock_page(left));
  Status st = co_await fetch(op, left, lb.get(), &lv, &foreign, /*locked=*/true);
  if (!st.ok() || foreign || !lv.leaf() || lv.sibling() != page.pack() || lv.high_infinite() ||
      lv.high() != low) {
    Status us = co_await unlock_page(left);
    (void)us;
    co_return st;
  }
  st = co_await lock_page(page);
  if (st.ok()) st = co_await fetch(op, page, pb.get(), &pv, &foreign, /*locked=*/true);
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
