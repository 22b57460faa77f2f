// SecondaryIndex: a pool's optional ordered key set (AddIndex::VolatileTree), in the node's
// private memory, for find (docs/formats/kv.md "Find").
//
// Keys in byte order; a key's position is its rank, found in O(log n) (an order-statistics
// red-black tree). find() answers exact:, prefix:, regex: (RE2 syntax, whole-key match) and
// next: from a start position, examining at most kMaxExamined keys per call.
// Thread safety: the pool's worker thread only.
#pragma once

#include <cstdint>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "farmem/common/result.h"

namespace farmem::kv::service {

class SecondaryIndex {
 public:
  static constexpr uint64_t kMaxExamined = 4096;

  struct Found {
    bool more = false;      // budget spent without a match: continue at `position`
    uint64_t position = 0;  // the match's rank (or where to continue)
    std::string key;
  };

  void insert(std::string_view key) { tree_.insert(std::string(key)); }
  void erase(std::string_view key) { tree_.erase(std::string(key)); }
  uint64_t size() const { return tree_.size(); }
  // kNotFound at the end; kInvalidArgument for a malformed expression.
  Result<Found> find(std::string_view expression, uint64_t start) const;

 private:
  using Tree =
      __gnu_pbds::tree<std::string, __gnu_pbds::null_type, std::less<std::string>,
                       __gnu_pbds::rb_tree_tag, __gnu_pbds::tree_order_statistics_node_update>;
  Result<Found> find_exact(std::string_view key, uint64_t start) const;
  Result<Found> find_prefix(std::string_view prefix, uint64_t start) const;
  Result<Found> find_regex(std::string_view pattern, uint64_t start) const;
  Result<Found> at(uint64_t position) const;

  Tree tree_;
};

}  // namespace farmem::kv::service
