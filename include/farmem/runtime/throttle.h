// Work-request throttling (SMART): a per-thread cap on operations in flight.
//
// Modes: kOff (no cap), kFixed (cap = fixed_cap), kAdaptive (the cap is tuned at run time).
// Adaptive tuning follows SMART: a training sweep runs each candidate cap, then "unlimited",
// for one epoch each and records completions per second; the best finite cap is kept only if it
// beats unlimited by more than inf_weight; the choice holds for hold_epochs, then training
// restarts. tick(now) advances the tuner; the client calls it from the scheduler's ticker.
//
// Posting: try_acquire() takes a credit or fails; a failed poster enqueues a Waiter, which
// release() resumes (with the credit already taken) when a credit frees up.
// Thread safety: owning thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/common/result.h"

namespace farmem::runtime {

enum class ThrottleMode { kOff, kFixed, kAdaptive };
Result<ThrottleMode> parse_throttle_mode(const std::string& text);
const char* throttle_mode_name(ThrottleMode mode);

struct ThrottleOptions {
  ThrottleMode mode = ThrottleMode::kOff;
  uint32_t fixed_cap = 16;
  std::vector<uint32_t> candidates = {4, 8, 16, 32, 64};
  uint64_t epoch_ns = 10'000'000;
  uint32_t hold_epochs = 60;
  double inf_weight = 1.05;
};

class Throttle {
 public:
  static constexpr uint32_t kUnlimited = UINT32_MAX;

  struct Waiter {
    Waiter* next = nullptr;
    void (*resume)(Waiter*) = nullptr;  // called with a credit already taken
    void* owner = nullptr;
  };

  explicit Throttle(const ThrottleOptions& options = {});
  bool try_acquire() {
    if (in_flight_ >= cap_) return false;
    ++in_flight_;
    return true;
  }
  void enqueue(Waiter* w);
  void release();
  void tick(uint64_t now_ns);

  uint32_t cap() const { return cap_; }
  uint32_t in_flight() const { return in_flight_; }
  uint64_t completed() const { return completed_; }
  // How many tuning rounds (sweeps) have finished.
  uint32_t rounds() const { return rounds_; }

 private:
  void set_cap(uint32_t cap);
  void admit_waiters();  // hands credits to queued waiters while below the cap
  ThrottleOptions options_;
  uint32_t cap_;
  uint32_t in_flight_ = 0;
  uint64_t completed_ = 0;
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
  // tuner state
  uint64_t epoch_start_ns_ = 0;
  uint64_t epoch_start_completed_ = 0;
  size_t training_index_ = 0;  // index into candidates; == size() means "unlimited"
  bool training_ = true;
  uint32_t held_epochs_ = 0;
  uint32_t rounds_ = 0;
  std::vector<double> rates_;
};

}  // namespace farmem::runtime
