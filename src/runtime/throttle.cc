#include "farmem/runtime/throttle.h"

#include <fmt/format.h>

#include <algorithm>

namespace farmem::runtime {

Result<ThrottleMode> parse_throttle_mode(const std::string& text) {
  if (text == "off") return ThrottleMode::kOff;
  if (text == "fixed") return ThrottleMode::kFixed;
  if (text == "adaptive") return ThrottleMode::kAdaptive;
  return InvalidArgument(fmt::format("throttle mode '{}' is not off|fixed|adaptive", text));
}

const char* throttle_mode_name(ThrottleMode mode) {
  switch (mode) {
    case ThrottleMode::kOff:
      return "off";
    case ThrottleMode::kFixed:
      return "fixed";
    case ThrottleMode::kAdaptive:
      return "adaptive";
  }
  return "?";
}

Throttle::Throttle(const ThrottleOptions& options) : options_(options), cap_(kUnlimited) {
  if (options_.candidates.empty()) options_.candidates = {16};
  rates_.assign(options_.candidates.size() + 1, 0.0);
  switch (options_.mode) {
    case ThrottleMode::kOff:
      cap_ = kUnlimited;
      break;
    case ThrottleMode::kFixed:
      cap_ = std::max<uint32_t>(1, options_.fixed_cap);
      break;
    case ThrottleMode::kAdaptive:
      cap_ = options_.candidates[0];
      break;
  }
}

void Throttle::enqueue(Waiter* w) {
  w->next = nullptr;
  if (tail_)
    tail_->next = w;
  else
    head_ = w;
  tail_ = w;
}

void Throttle::admit_waiters() {
  while (head_ != nullptr && in_flight_ < cap_) {
    Waiter* w = head_;
    head_ = w->next;
    if (head_ == nullptr) tail_ = nullptr;
    ++in_flight_;
    w->resume(w);
  }
}

void Throttle::release() {
  --in_flight_;
  ++completed_;
  admit_waiters();
}

void Throttle::set_cap(uint32_t cap) {
  cap_ = cap;
  admit_waiters();  // a larger cap admits waiters at once
}

void Throttle::tick(uint64_t now) {
  if (options_.mode != ThrottleMode::kAdaptive) return;
  if (epoch_start_ns_ == 0) {
    epoch_start_ns_ = now;
    epoch_start_completed_ = completed_;
    return;
  }
  uint64_t elapsed = now - epoch_start_ns_;
  if (elapsed < options_.epoch_ns) return;
  double rate =
      static_cast<double>(completed_ - epoch_start_completed_) * 1e9 / static_cast<double>(elapsed);
  epoch_start_ns_ = now;
  epoch_start_completed_ = completed_;
  const auto& cands = options_.candidates;
  if (training_) {
    rates_[training_index_] = rate;
    ++training_index_;
    if (training_index_ < cands.size()) {
      set_cap(cands[training_index_]);
    } else if (training_index_ == cands.size()) {
      set_cap(kUnlimited);
    } else {
      // Sweep done: keep unlimited unless a finite cap clearly beats it.
      size_t best = 0;
      for (size_t i = 1; i < cands.size(); ++i) {
        if (rates_[i] > rates_[best]) best = i;
      }
      double unlimited = rates_[cands.size()];
      set_cap(rates_[best] > unlimited * options_.inf_weight ? cands[best] : kUnlimited);
      training_ = false;
      held_epochs_ = 0;
      ++rounds_;
    }
  } else if (++held_epochs_ >= options_.hold_epochs) {
    training_ = true;
    training_index_ = 0;
    set_cap(cands[0]);
  }
}

}  // namespace farmem::runtime
