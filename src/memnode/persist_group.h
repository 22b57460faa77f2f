// PersistGroup: the persists one worker serves in one round, logged with one journal write.
//
// A durable node's persist requests (control.md "Persist") name region ranges to log as they are
// when the node reads them. Logged one by one, each range of each request was a write to the log
// file; a transaction's commit sends three persists of a few ranges each. The core service adds
// every persist of a round here and flush()es at the round's end (its poll) or when the group is
// full: every range, in arrival order, read from the region then and logged in one write; each
// request is then answered through StableReplies (ordered ones at once: they are in the log).
// Reading later than the request arrived is allowed: a persist may hold later writes too. The
// log keeps the order in which bytes were read, so whoever logs region bytes it read or copied
// earlier (served operations' copies) flushes the group first.
// Bounds: kMaxBytes of ranges per group (then it flushes), ranges of at most
// storage::Journal::kMaxRangeCopyBytes are grouped (larger ones are logged alone, in order).
// Thread safety: one per core service worker, on its thread.
#pragma once

#include <cstdint>
#include <vector>

#include "farmem/fabric/wire.h"
#include "farmem/memnode/node_state.h"
#include "farmem/memnode/service.h"
#include "farmem/memnode/stable_replies.h"

namespace farmem::memnode {

class PersistGroup {
 public:
  static constexpr uint64_t kMaxBytes = 4ull << 20;

  PersistGroup(NodeState& node, StableReplies& replies) : node_(node), replies_(replies) {}
  // Adds a checked request's ranges (inside the region) and its responder.
  void add(const std::vector<wire::PersistRange>& ranges, bool ordered, Responder responder);
  // Logs what was added and answers (or fails) its requests.
  void flush();
  bool empty() const { return waiting_.empty(); }

 private:
  struct Waiting {
    Responder responder;
    bool ordered;
  };
  NodeState& node_;
  StableReplies& replies_;
  std::vector<wire::PersistRange> ranges_;
  uint64_t bytes_ = 0;
  std::vector<Waiting> waiting_;
};

}  // namespace farmem::memnode
