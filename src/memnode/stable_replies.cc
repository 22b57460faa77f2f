#include "farmem/memnode/stable_replies.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include "farmem/common/log.h"
#include "farmem/storage/journal.h"

namespace farmem::memnode {

StableReplies::StableReplies(const WorkerContext& context) : context_(context) {
  storage::Journal* journal = context_.node->journal;
  if (journal == nullptr || journal->durability() != storage::Durability::kPower) return;
  fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) return;  // answers then wait for the worker's next round instead of a wake-up
  if (Status s = context_.watch_fd(fd_); !s.ok()) {
    log::warn("stable replies: cannot watch the journal's eventfd: {}", s.to_string());
  }
}

StableReplies::~StableReplies() {
  if (fd_ < 0) return;
  if (!waiting_.empty()) context_.node->journal->remove_listener(fd_);
  context_.unwatch_fd(fd_);
  ::close(fd_);
}

// The journal writes the eventfd only while answers wait, so an idle worker sleeps.
void StableReplies::listen(bool on) {
  if (fd_ < 0) return;
  if (on) {
    context_.node->journal->add_listener(fd_);
    return;
  }
  context_.node->journal->remove_listener(fd_);
  uint64_t count = 0;
  (void)!::read(fd_, &count, sizeof(count));
}

void StableReplies::finish(uint64_t lsn, Responder responder, const Status& status,
                           std::string reply) {
  storage::Journal* journal = context_.node->journal;
  if (!status.ok() || lsn == 0 || journal == nullptr ||
      (waiting_.empty() && journal->stable_lsn() >= lsn)) {
    responder.finish(status, reply);
    return;
  }
  if (waiting_.empty()) listen(true);
  waiting_.push_back(Waiting{lsn, std::move(responder), std::move(reply)});
}

void StableReplies::poll() {
  if (waiting_.empty()) return;
  if (fd_ >= 0) {
    uint64_t count = 0;
    (void)!::read(fd_, &count, sizeof(count));
  }
  storage::Journal* journal = context_.node->journal;
  const uint64_t stable = journal->stable_lsn();
  while (!waiting_.empty() && waiting_.front().lsn <= stable) {
    waiting_.front().responder.ok(waiting_.front().reply);
    waiting_.pop_front();
  }
  if (!waiting_.empty()) {
    const Status health = journal->health();
    if (health.ok()) return;
    for (Waiting& w : waiting_) w.responder.fail(health);
    waiting_.clear();
  }
  listen(false);
}

}  // namespace farmem::memnode
