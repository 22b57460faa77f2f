// RootTable: named roots, a name (1..128 bytes) mapped to a packed GlobalAddress, so that
// structures are found by name. A root may belong to an object (its owner); destroying the
// object removes it. Bounded at kMaxRoots entries.
// Thread safety: not thread-safe; the server serialises calls.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "farmem/common/result.h"

namespace farmem::memnode {

class RootTable {
 public:
  static constexpr size_t kMaxRoots = 65536;
  Status publish(std::string_view name, uint64_t address, bool replace, uint64_t owner = 0);
  // What publish() would answer, without publishing.
  Status check_publish(std::string_view name, bool replace) const;
  // Calls f(name, address, owner) for each root.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [name, r] : roots_) f(name, r.address, r.owner);
  }
  Result<uint64_t> lookup(std::string_view name) const;
  Status remove(std::string_view name);
  // Removes every root owned by `owner` (an object id); returns how many.
  size_t remove_owned(uint64_t owner);
  size_t size() const { return roots_.size(); }
  static Status check_name(std::string_view name);

 private:
  struct Root {
    uint64_t address;
    uint64_t owner;
  };
  std::map<std::string, Root, std::less<>> roots_;
};

}  // namespace farmem::memnode
