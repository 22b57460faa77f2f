// LeaseLock: a 64-bit lock word in far memory whose lease is the holder's session.
//
// The word is 0 when free and otherwise the holder's session id on the word's node
// (ThreadClient::session_id). The lease lasts exactly as long as that session: while it is
// open the lock is the holder's, however slow or stopped the holder is; once the session has
// ended (the process died, was killed, lost its node or closed), the node says so and anyone may
// take the lock over with a CAS from the dead holder's id, then repair or undo what the holder
// left in far memory. A session that ended can send nothing more, so a taker never races the
// old holder. Liveness is asked of the node (one RPC) at most once per `check_interval_ns`
// per lock object.
//
// Holding is never inferred from the word's value: two handles of one thread share a session
// id, so a word equal to our own id held by someone else of this thread is simply busy.
// Thread safety: the owning thread's coroutines.
#pragma once

#include <cstdint>

#include "farmem/client/thread_client.h"
#include "farmem/runtime/backoff.h"
#include "farmem/runtime/task.h"

namespace farmem::ds {

class LeaseLock {
 public:
  struct Attempt {
    bool acquired = false;
    bool taken_over = false;  // acquired from a holder whose session had ended
    uint64_t holder = 0;      // when not acquired: who holds it
  };
  LeaseLock(client::ThreadClient* c, GlobalAddress word, uint64_t check_interval_ns = 20'000'000);

  // One attempt: CAS 0 -> me; if held by an ended session (checked at most once per interval),
  // CAS holder -> me.
  runtime::Task<Result<Attempt>> try_acquire();
  // Attempts until acquired, backing off between attempts; kTimedOut once deadline_ns passes
  // (the holder is alive but does not let go: stopped, or slower than the deadline).
  runtime::Task<Result<Attempt>> acquire(uint64_t deadline_ns);
  // CAS me -> 0. kInternal if the word no longer holds our id (someone took it over: our
  // session had ended).
  runtime::Task<Status> release();
  // Whether `holder` (a session id on the word's node) has ended; rate-limited like above:
  // false when it was checked too recently.
  runtime::Task<Result<bool>> holder_gone(uint64_t holder);
  uint64_t me() const { return me_; }
  GlobalAddress word() const { return word_; }

 private:
  client::ThreadClient* client_;
  GlobalAddress word_;
  uint64_t me_;
  uint64_t check_interval_ns_;
  uint64_t last_check_ns_ = 0;
};

}  // namespace farmem::ds
