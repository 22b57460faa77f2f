// Queue<T>: a far FIFO queue (AIFM's Queue) on List<T>: elements enter at the back and leave at
// the front, a node's worth at a time in far memory, so only the two ends are local while the
// middle of a long queue waits far away.
//
//   far::Queue<Job> q(&cache);
//   co_await q.push(job);
//   auto next = co_await q.pop();     // Result<T>; kOutOfRange when empty
//
// Several coroutines may push and pop (each operation is atomic, List's rule).
// Thread safety: the cache's thread.
#pragma once

#include "farmem/far/list.h"

namespace farmem::far {

template <typename T, uint32_t kNodeBytes = 4096>
class Queue {
 public:
  explicit Queue(ThreadCache* cache) : list_(cache) {}

  uint64_t size() const { return list_.size(); }
  bool empty() const { return list_.empty(); }
  runtime::Task<Status> push(T v) {
    Status s = co_await list_.push_back(v);
    co_return s;
  }
  runtime::Task<Result<T>> pop() {
    auto v = co_await list_.pop_front();
    co_return v;
  }
  runtime::Task<Result<T>> front() {
    auto v = co_await list_.front();
    co_return v;
  }
  List<T, kNodeBytes>& list() { return list_; }

 private:
  List<T, kNodeBytes> list_;
};

}  // namespace farmem::far
