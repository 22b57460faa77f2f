// StableReplies: answers that wait until what they acknowledge is durable.
//
// A handler on a durable node logs its change (NodeState::log_locked, or the journal directly)
// and hands the Responder here with the record's LSN: the answer goes out at once when that LSN
// is stable (always on a volatile node, where the LSN is 0; at once on a `process` node), else
// from poll() once the journal's group commit reaches it. Failures are answered at once (nothing
// was logged); a failed journal answers every waiting request with its error. The journal wakes
// a sleeping worker through an eventfd this object watches.
//
// Thread safety: one per ServiceWorker, used on its worker thread only; its ServiceWorker calls
// poll() from its own poll().
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "farmem/memnode/service.h"

namespace farmem::memnode {

class StableReplies {
 public:
  explicit StableReplies(const WorkerContext& context);
  ~StableReplies();
  StableReplies(const StableReplies&) = delete;
  StableReplies& operator=(const StableReplies&) = delete;

  void finish(uint64_t lsn, Responder responder, const Status& status, std::string reply);
  // Sends the answers whose LSN became stable (or the journal's error).
  void poll();

 private:
  struct Waiting {
    uint64_t lsn;
    Responder responder;
    std::string reply;
  };
  void listen(bool on);

  WorkerContext context_;
  int fd_ = -1;                  // eventfd the journal writes when stable_lsn advances
  std::deque<Waiting> waiting_;  // in LSN order
};

}  // namespace farmem::memnode
