// NodeJournal: a memory node's metadata (heap, objects, roots) as the journal's owner
// (storage/journal.h): it replays logged NodeRecords into NodeState at recovery and writes a
// checkpoint's snapshot as the records that rebuild the tables (docs/formats/node_journal.md).
// Thread safety: recovery calls on the thread that opens the journal; snapshot() on the
// checkpointer thread, under NodeState::mu (which the node's changes and their logging hold).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "farmem/memnode/node_state.h"
#include "farmem/storage/journal.h"

namespace farmem::memnode {

class NodeJournal final : public storage::JournalOwner {
 public:
  explicit NodeJournal(NodeState& node) : node_(node) {}

  Status load_snapshot(std::string_view bytes) override;
  Status apply(std::string_view record) override;
  std::string snapshot(const std::function<void()>& rotate) override;

 private:
  // Applies the record at the start of `bytes`; returns the bytes it took.
  Result<size_t> apply_one(std::string_view bytes);
  NodeState& node_;
};

}  // namespace farmem::memnode
