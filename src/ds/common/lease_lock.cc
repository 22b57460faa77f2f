#include "farmem/ds/common/lease_lock.h"

#include <fmt/format.h>

#include "farmem/common/check.h"
#include "farmem/common/clock.h"

namespace farmem::ds {

using runtime::Task;

LeaseLock::LeaseLock(client::ThreadClient* c, GlobalAddress word, uint64_t check_interval_ns)
    : client_(c),
      word_(word),
      me_(c->session_id(word.node())),
      check_interval_ns_(check_interval_ns) {}

Task<Result<bool>> LeaseLock::holder_gone(uint64_t holder) {
  const uint64_t now = now_ns();
  if (last_check_ns_ != 0 && now - last_check_ns_ < check_interval_ns_) co_return false;
  last_check_ns_ = now;
  std::vector<uint64_t> ids(1, holder);
  auto alive = co_await client_->sessions_alive(word_.node(), std::move(ids));
  FARMEM_CO_TRY(alive);
  co_return !(*alive)[0];
}

Task<Result<LeaseLock::Attempt>> LeaseLock::try_acquire() {
  if (me_ == 0) co_return Unavailable("no session with the lock word's node");
  uint64_t found = 0;
  Status s = co_await client_->cas(word_, 0, me_, &found);
  FARMEM_CO_TRY(s);
  if (found == 0) co_return Attempt{true, false, 0};
  auto gone = co_await holder_gone(found);
  FARMEM_CO_TRY(gone);
  if (!*gone) co_return Attempt{false, false, found};
  uint64_t seen = 0;
  s = co_await client_->cas(word_, found, me_, &seen);
  FARMEM_CO_TRY(s);
  if (seen == found) co_return Attempt{true, true, found};
  co_return Attempt{false, false, seen};  // someone else took it first
}

Task<Result<LeaseLock::Attempt>> LeaseLock::acquire(uint64_t deadline_ns) {
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  for (;;) {
    auto a = co_await try_acquire();
    if (!a.ok() || a->acquired) co_return a;
    if (now_ns() >= deadline_ns) {
      co_return TimedOut(fmt::format("lock at node {} offset {:#x} is held by live session {}",
                                     word_.node(), word_.offset(), a->holder));
    }
    co_await backoff.retry();
  }
}

Task<Status> LeaseLock::release() {
  // Only a holder releases, and a holder's word names its session (try_acquire refuses without
  // one): releasing with no session would "succeed" on a free word it never held.
  FARMEM_ASSERT(me_ != 0, "a lease lock is released by the session that holds it");
  uint64_t found = 0;
  Status s = co_await client_->cas(word_, me_, 0, &found);
  FARMEM_CO_TRY(s);
  if (found != me_) {
    co_return Internal(fmt::format("lock at node {} offset {:#x} was taken over (holder {})",
                                   word_.node(), word_.offset(), found));
  }
  co_return OkStatus();
}

}  // namespace farmem::ds
