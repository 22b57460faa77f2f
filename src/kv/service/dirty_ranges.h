// DirtyRanges: the region bytes the kv service changed while serving one request, in the order
// it changed them, so that a durable node logs them (storage::Journal::append_range) before the
// request's answer goes out (docs/formats/kv.md "On a durable memory node").
//
// mark() merges a range with the previous one when they touch or overlap, so a record written
// field by field or neighbouring buckets become one log record. The list is bounded: when it
// holds kMaxRanges, they go to the spill function (which logs them) before the next is kept.
// Thread safety: one per shard, used on its worker thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace farmem::kv::service {

class DirtyRanges {
 public:
  struct Range {
    uint64_t offset;
    uint64_t bytes;
  };
  static constexpr size_t kMaxRanges = 4096;

  void mark(uint64_t offset, uint64_t bytes) {
    if (bytes == 0) return;
    if (!ranges_.empty()) {
      Range& last = ranges_.back();
      if (offset <= last.offset + last.bytes && last.offset <= offset + bytes) {
        const uint64_t end = std::max(last.offset + last.bytes, offset + bytes);
        last.offset = std::min(last.offset, offset);
        last.bytes = end - last.offset;
        return;
      }
    }
    if (ranges_.size() == kMaxRanges && spill_) spill_(take());
    ranges_.push_back({offset, bytes});
  }
  // Where a full list goes (in order); without one the list grows past the bound.
  void set_spill(std::function<void(const std::vector<Range>&)> spill) {
    spill_ = std::move(spill);
  }
  bool empty() const { return ranges_.empty(); }
  // The ranges marked since the last take(), in marking order; the list is left empty.
  std::vector<Range> take() { return std::exchange(ranges_, {}); }

 private:
  std::vector<Range> ranges_;
  std::function<void(const std::vector<Range>&)> spill_;
};

}  // namespace farmem::kv::service
