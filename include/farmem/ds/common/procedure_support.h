// ProcedureSupport: the memory nodes that answered a structure's served call with kNotFound (no
// such procedure: a node without the ds service, e.g. an older server), so that the handle takes
// the one-sided path there and asks them no more (docs/formats/memops.md "Calls").
// Thread safety: owned by one handle (one thread).
#pragma once

#include <cstdint>
#include <vector>

namespace farmem::ds {

class ProcedureSupport {
 public:
  bool missing(uint16_t node) const { return node < missing_.size() && missing_[node] != 0; }
  void mark_missing(uint16_t node) {
    if (node >= missing_.size()) missing_.resize(size_t{node} + 1, 0);
    missing_[node] = 1;
  }

 private:
  std::vector<uint8_t> missing_;  // by node id
};

}  // namespace farmem::ds
