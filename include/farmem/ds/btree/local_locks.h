// LocalLocks: the local level of Sherman's hierarchical lock (HOCL) for one handle.
//
// Coroutines of a handle that want the same remote page lock queue here, in FIFO order, instead
// of all spinning on the remote lock word. The holder, when it releases, hands the remote lock
// over to the next local waiter for the same page without unlocking remotely (at most
// max_handovers times in a row, so remote waiters get their turn), or unlocks remotely and
// lets the next waiter acquire it itself. Waiting is local: no remote operation, and the
// waiting coroutine is suspended until the holder posts it.
//
// Keyed by the exact lock word address (no hashing, so a coroutine holding one page never waits
// behind another page of itself). The remote lock word holds the thread's session id, which is
// the same for every coroutine of the thread, so a hand-over needs no remote write; hand-over
// across threads would leave the word naming a session that may end before the new holder is
// done, so the local level is per handle (one handle per thread).
// Thread safety: the owning thread's coroutines.
#pragma once

#include <coroutine>
#include <cstdint>
#include <unordered_map>

#include "farmem/runtime/scheduler.h"

namespace farmem::ds::btree {

class LocalLocks {
 public:
  struct Waiter {
    std::coroutine_handle<> handle;
    bool handed_over = false;
    Waiter* next = nullptr;
  };
  // co_await enter(word): true when the remote lock came with it (handed over by the previous
  // local holder); false when the caller now has the local turn and must take the remote lock.
  struct EnterAwaiter {
    LocalLocks* locks;
    uint64_t word;
    Waiter waiter;
    bool await_ready();
    void await_suspend(std::coroutine_handle<> h);
    bool await_resume() const { return waiter.handed_over; }
  };

  LocalLocks(runtime::Scheduler* scheduler, uint32_t max_handovers)
      : scheduler_(scheduler), max_handovers_(max_handovers) {}
  EnterAwaiter enter(uint64_t word) { return EnterAwaiter{this, word, {}}; }
  // Whether leave(word) would hand the remote lock over (a local waiter, and the hand-over bound
  // not reached): then the caller must not unlock remotely.
  bool will_hand_over(uint64_t word) const;
  // Ends the caller's turn. remote_held: the caller kept the remote lock because
  // will_hand_over() said so (waiters never leave the queue, so one is still there): the next
  // waiter gets it. Otherwise the caller unlocked remotely (or never locked) and the next
  // waiter, if any, takes the remote lock itself.
  void leave(uint64_t word, bool remote_held);
  uint64_t handovers() const { return handovers_total_; }
  uint64_t waits() const { return waits_total_; }
  size_t active() const { return locks_.size(); }

 private:
  struct Entry {
    Waiter* head = nullptr;
    Waiter* tail = nullptr;
    uint32_t handovers = 0;  // consecutive hand-overs of the remote lock
  };
  runtime::Scheduler* scheduler_;
  uint32_t max_handovers_;
  std::unordered_map<uint64_t, Entry> locks_;  // words with a local holder
  uint64_t handovers_total_ = 0;
  uint64_t waits_total_ = 0;
};

}  // namespace farmem::ds::btree
