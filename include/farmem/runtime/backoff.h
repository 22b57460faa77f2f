// Conflict avoidance (SMART): truncated exponential backoff with jitter and an adaptive ceiling.
//
// BackoffPolicy is per thread. It holds the ceiling, which adapts once per epoch to the retry
// rate seen by all of the thread's retry loops: below low_retry_rate the ceiling halves
// (contention is rare, retry fast); above high_retry_rate it doubles. Backoff is per retry loop
// (one operation): each wait() sleeps current + uniform(0, jitter) and doubles current up to
// the policy's ceiling. Sleeping yields the thread to other coroutines. Sleeps and epochs are
// measured with now_ns(), so a test drives them with a VirtualClock (common/virtual_clock.h);
// the jitter is reproducible with BackoffOptions::seed.
//
// Every CAS retry loop in farmem uses it:
//   Backoff b(policy, scheduler);
//   for (;;) {
//     ...;
//     if (cas succeeded) { b.succeeded(); break; }
//     if (b.exhausted()) return an error;   // max_retries attempts
//     co_await b.retry();                   // records the retry and sleeps
//   }
// Thread safety: owning thread only.
#pragma once

#include <cstdint>

#include "farmem/runtime/scheduler.h"

namespace farmem::runtime {

struct BackoffOptions {
  bool enabled = true;
  uint64_t base_ns = 1'000;
  uint64_t jitter_ns = 1'000;
  uint64_t ceiling_min_ns = 2'000;
  uint64_t ceiling_max_ns = 2'000'000;
  bool adaptive = true;
  uint64_t epoch_ns = 20'000'000;
  double low_retry_rate = 0.10;
  double high_retry_rate = 0.50;
  uint32_t max_retries = 100'000;  // a retry loop gives up after this many attempts
  // Seed of the jitter generator. 0 (the default): derived from the policy's address and the
  // TSC, so threads and runs differ. Tests set it to replay the same jitter.
  uint64_t seed = 0;
};

class BackoffPolicy {
 public:
  explicit BackoffPolicy(const BackoffOptions& options = {});
  const BackoffOptions& options() const { return options_; }
  uint64_t ceiling_ns() const { return ceiling_ns_; }
  void record_retry(uint64_t now);
  void record_success(uint64_t now);
  uint64_t random_below(uint64_t bound);
  uint64_t retries() const { return total_retries_; }
  uint64_t successes() const { return total_successes_; }

 private:
  void maybe_adapt(uint64_t now);
  BackoffOptions options_;
  uint64_t ceiling_ns_;
  uint64_t epoch_start_ns_ = 0;
  uint64_t epoch_retries_ = 0;
  uint64_t epoch_successes_ = 0;
  uint64_t total_retries_ = 0;
  uint64_t total_successes_ = 0;
  uint64_t rng_;
};

class Backoff {
 public:
  Backoff(BackoffPolicy& policy, Scheduler& scheduler)
      : policy_(&policy), scheduler_(&scheduler), current_ns_(policy.options().base_ns) {}
  // Records a failed attempt; the returned awaiter sleeps current + jitter. Check exhausted()
  // before retrying.
  Scheduler::SleepAwaiter retry();
  bool exhausted() const { return attempts_ >= policy_->options().max_retries; }
  uint32_t attempts() const { return attempts_; }
  void succeeded();
  // The sleep the next retry would take without jitter (for tests).
  uint64_t current_ns() const { return current_ns_; }

 private:
  BackoffPolicy* policy_;
  Scheduler* scheduler_;
  uint64_t current_ns_;
  uint32_t attempts_ = 0;
};

}  // namespace farmem::runtime
