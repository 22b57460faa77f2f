// RootTable: named roots, a name (1..128 bytes) mapped to a packed GlobalAddress, so that
// structures are found by name. Bounded at kMaxRoots entries.
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
  Status publish(std::string_view name, uint64_t address, bool replace);
  Result<uint64_t> lookup(std::string_view name) const;
  Status remove(std::string_view name);
  size_t size() const { return roots_.size(); }
  static Status check_name(std::string_view name);

 private:
  std::map<std::string, uint64_t, std::less<>> roots_;
};

}  // namespace farmem::memnode
