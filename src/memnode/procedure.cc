#include "farmem/memnode/procedure.h"

#include <fmt/format.h>

#include <algorithm>

namespace farmem::memnode {

Status ProcedureTable::add(const Procedure& p) {
  if (p.id == 0 || p.fn == nullptr) {
    return InvalidArgument(fmt::format("procedure {} needs an id and a function", p.name));
  }
  auto at = std::lower_bound(procedures_.begin(), procedures_.end(), p.id,
                             [](const Procedure& x, uint16_t id) { return x.id < id; });
  if (at != procedures_.end() && at->id == p.id) {
    return InvalidArgument(
        fmt::format("procedure {}: id {} is taken by {}", p.name, p.id, at->name));
  }
  procedures_.insert(at, p);
  return OkStatus();
}

const Procedure* ProcedureTable::find(uint64_t id) const {
  auto at = std::lower_bound(procedures_.begin(), procedures_.end(), id,
                             [](const Procedure& x, uint64_t i) { return x.id < i; });
  return at != procedures_.end() && at->id == id ? &*at : nullptr;
}

}  // namespace farmem::memnode
