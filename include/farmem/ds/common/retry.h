// RetryLoop: the bounded CAS retry loop every far-memory structure uses.
//
//   RetryLoop loop(client, "update", max_attempts);
//   for (;;) {
//     ... read, compute, CAS ...;
//     if (won) { loop.succeeded(); break; }
//     if (loop.exhausted()) co_return loop.give_up();  // kRetriesExhausted, one form everywhere
//     co_await loop.retry();                            // backoff (SMART), other coroutines run
//   }
//
// It wraps runtime::Backoff (truncated exponential backoff with the thread's adaptive ceiling)
// and counts attempts against a bound; give_up() reports "<what> gave up after N contended
// attempts" with code kRetriesExhausted. succeeded() tells the thread's policy of a success only
// when the loop retried: the policy then adapts to how many retries a contended operation needs
// (an uncontended update, by far the most common, says nothing). Counting every success kept
// the ceiling at its floor under a hot key (YCSB-A, Zipfian 0.99: ~10% of updates retry), and the
// retries that followed cost more throughput than the backoff they saved.
// Thread safety: one loop, one coroutine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "farmem/client/thread_client.h"
#include "farmem/runtime/backoff.h"

namespace farmem::ds {

class RetryLoop {
 public:
  RetryLoop(client::ThreadClient* c, std::string_view what, uint32_t max_attempts)
      : RetryLoop(c->backoff_policy(), c->scheduler(), what, max_attempts) {}
  RetryLoop(runtime::BackoffPolicy& policy, runtime::Scheduler& scheduler, std::string_view what,
            uint32_t max_attempts)
      : backoff_(policy, scheduler), what_(what), max_(max_attempts) {}
  bool exhausted() const { return attempts_ >= max_ || backoff_.exhausted(); }
  runtime::Scheduler::SleepAwaiter retry() {
    ++attempts_;
    return backoff_.retry();
  }
  void succeeded() {
    if (attempts_ > 0) backoff_.succeeded();
  }
  uint32_t attempts() const { return attempts_; }
  Status give_up() const { return RetriesExhausted(what_, attempts_); }

 private:
  runtime::Backoff backoff_;
  std::string_view what_;
  uint32_t max_;
  uint32_t attempts_ = 0;
};

}  // namespace farmem::ds
