#include "farmem/runtime/backoff.h"

#include <algorithm>

#include "farmem/common/clock.h"

namespace farmem::runtime {

namespace {

// splitmix64's finaliser: spreads a small or structured seed over all 64 bits of the state.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

BackoffPolicy::BackoffPolicy(const BackoffOptions& options)
    : options_(options),
      ceiling_ns_(options.ceiling_max_ns),
      rng_(mix(options.seed != 0 ? options.seed : reinterpret_cast<uintptr_t>(this) ^ cycles())) {
  if (rng_ == 0) rng_ = 1;
  // Start in the middle of the range; adaptation moves it.
  ceiling_ns_ = std::clamp<uint64_t>(options.ceiling_max_ns / 32, options.ceiling_min_ns,
                                     options.ceiling_max_ns);
}

uint64_t BackoffPolicy::random_below(uint64_t bound) {
  if (bound == 0) return 0;
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  return rng_ % bound;
}

void BackoffPolicy::record_retry(uint64_t now) {
  ++epoch_retries_;
  ++total_retries_;
  maybe_adapt(now);
}

void BackoffPolicy::record_success(uint64_t now) {
  ++epoch_successes_;
  ++total_successes_;
  maybe_adapt(now);
}

void BackoffPolicy::maybe_adapt(uint64_t now) {
  if (!options_.adaptive) return;
  if (epoch_start_ns_ == 0) epoch_start_ns_ = now;
  if (now - epoch_start_ns_ < options_.epoch_ns) return;
  uint64_t total = epoch_retries_ + epoch_successes_;
  if (total > 0) {
    double rate = static_cast<double>(epoch_retries_) / static_cast<double>(total);
    if (rate < options_.low_retry_rate) {
      ceiling_ns_ = std::max(options_.ceiling_min_ns, ceiling_ns_ / 2);
    } else if (rate > options_.high_retry_rate) {
      ceiling_ns_ = std::min(options_.ceiling_max_ns, ceiling_ns_ * 2);
    }
  }
  epoch_start_ns_ = now;
  epoch_retries_ = epoch_successes_ = 0;
}

Scheduler::SleepAwaiter Backoff::retry() {
  ++attempts_;
  uint64_t now = now_ns();
  policy_->record_retry(now);
  const BackoffOptions& o = policy_->options();
  if (!o.enabled) return Scheduler::SleepAwaiter{scheduler_, now};  // ready at once
  uint64_t sleep = current_ns_ + policy_->random_below(o.jitter_ns + 1);
  current_ns_ = std::min(current_ns_ * 2, policy_->ceiling_ns());
  return Scheduler::SleepAwaiter{scheduler_, now + sleep};
}

void Backoff::succeeded() { policy_->record_success(now_ns()); }

}  // namespace farmem::runtime
