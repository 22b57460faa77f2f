#include "farmem/ds/btree/local_locks.h"

namespace farmem::ds::btree {

bool LocalLocks::EnterAwaiter::await_ready() {
  auto [it, fresh] = locks->locks_.try_emplace(word);
  if (fresh) return true;  // nobody of this handle holds it: our turn, remote lock not held
  return false;
}

void LocalLocks::EnterAwaiter::await_suspend(std::coroutine_handle<> h) {
  waiter.handle = h;
  LocalLocks::Entry& e = locks->locks_[word];
  if (e.tail == nullptr) {
    e.head = e.tail = &waiter;
  } else {
    e.tail->next = &waiter;
    e.tail = &waiter;
  }
  ++locks->waits_total_;
}

bool LocalLocks::will_hand_over(uint64_t word) const {
  auto it = locks_.find(word);
  return it != locks_.end() && it->second.head != nullptr && it->second.handovers < max_handovers_;
}

void LocalLocks::leave(uint64_t word, bool remote_held) {
  auto it = locks_.find(word);
  if (it == locks_.end()) return;
  Entry& e = it->second;
  Waiter* w = e.head;
  if (w == nullptr) {
    locks_.erase(it);
    return;
  }
  e.head = w->next;
  if (e.head == nullptr) e.tail = nullptr;
  if (remote_held) {
    ++e.handovers;
    ++handovers_total_;
    w->handed_over = true;
  } else {
    e.handovers = 0;
    w->handed_over = false;
  }
  scheduler_->post(w->handle);
}

}  // namespace farmem::ds::btree
