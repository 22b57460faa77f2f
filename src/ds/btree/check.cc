// BTree::check: the diagnostic walk of every level by sibling pointers, checking fences, key
// order and levels (btree.h). Tests and tools run it; no operation does.
#include <fmt/format.h>

#include <algorithm>

#include "farmem/ds/btree/btree.h"

namespace farmem::ds::btree {

using runtime::Task;

Task<Status> BTree::check(std::vector<uint64_t>* pages) {
  pages->clear();
  OpContext op;
  FARMEM_CO_TRY(co_await refresh_root(op));
  BufRef buf(this);
  // The leftmost page of each level, from the root down by child0.
  std::vector<GlobalAddress> leftmost;
  GlobalAddress a = root_;
  for (;;) {
    PageView v;
    bool foreign = false;
    FARMEM_CO_TRY(co_await fetch(op, a, buf.get(), &v, &foreign));
    if (foreign) co_return Internal("the leftmost path reaches a dead or foreign page");
    leftmost.push_back(a);
    if (v.leaf()) break;
    a = GlobalAddress::unpack(v.header().child0);
  }
  std::reverse(leftmost.begin(), leftmost.end());
  for (uint32_t level = 0; level < leftmost.size(); ++level) {
    uint64_t count = 0;
    std::string prev_high;
    bool first = true;
    for (GlobalAddress p = leftmost[level]; !p.is_null();) {
      PageView v;
      bool foreign = false;
      FARMEM_CO_TRY(co_await fetch(op, p, buf.get(), &v, &foreign));
      const std::string where =
          fmt::format("page {}:{:#x} at level {}", p.node(), p.offset(), level);
      if (foreign) co_return Internal(where + " is dead or foreign but linked");
      if (v.level() != level) co_return Internal(where + " has the wrong level");
      if (!v.check_entries()) co_return Internal(where + " has an entry outside the page");
      if (first != v.low_infinite() || (!first && v.low() != prev_high)) {
        co_return Internal(where + "'s low fence is not its left neighbour's high fence");
      }
      for (uint32_t i = 0; i < v.count(); ++i) {
        if (v.below(v.key(i)) || v.beyond(v.key(i)) || (i > 0 && !(v.key(i - 1) < v.key(i)))) {
          co_return Internal(where + " holds a key out of order or outside its fences");
        }
      }
      ++count;
      first = false;
      if (v.high_infinite()) {
        if (v.sibling() != 0) co_return Internal(where + " is rightmost but has a sibling");
        break;
      }
      prev_high.assign(v.high());
      p = GlobalAddress::unpack(v.sibling());
      if (p.is_null()) co_return Internal(where + " has a high fence but no sibling");
    }
    pages->push_back(count);
  }
  co_return OkStatus();
}

}  // namespace farmem::ds::btree
