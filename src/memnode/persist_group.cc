#include "persist_group.h"

#include <string_view>

#include "farmem/storage/journal.h"

namespace farmem::memnode {

void PersistGroup::add(const std::vector<wire::PersistRange>& ranges, bool ordered,
                       Responder responder) {
  for (const wire::PersistRange& r : ranges) {
    ranges_.push_back(r);
    bytes_ += r.bytes;
  }
  waiting_.push_back({std::move(responder), ordered});
  if (bytes_ >= kMaxBytes) flush();
}

void PersistGroup::flush() {
  if (waiting_.empty()) return;
  storage::Journal& journal = *node_.journal;
  Result<uint64_t> lsn = uint64_t{0};
  std::vector<storage::Journal::RangeCopy> copies;
  auto log_copies = [&] {
    if (!copies.empty() && lsn.ok()) lsn = journal.append_ranges(copies);
    copies.clear();
  };
  for (const wire::PersistRange& r : ranges_) {
    if (r.bytes > storage::Journal::kMaxRangeCopyBytes) {
      log_copies();  // (in order: what came before it first)
      if (lsn.ok()) lsn = journal.append_range(r.offset, r.bytes);
      continue;
    }
    const auto* at = reinterpret_cast<const char*>(node_.region_base) + r.offset;
    copies.push_back({r.offset, std::string_view(at, r.bytes)});
  }
  log_copies();
  for (Waiting& w : waiting_) {
    const uint64_t wait_for = lsn.ok() && !w.ordered ? *lsn : 0;
    replies_.finish(wait_for, std::move(w.responder), lsn.status(), {});
  }
  ranges_.clear();
  waiting_.clear();
  bytes_ = 0;
}

}  // namespace farmem::memnode
