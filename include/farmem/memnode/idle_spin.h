// IdleSpin: how long an idle server worker busy-polls before it sleeps in epoll.
//
// At most idle_spin_us; halved whenever a spin ends with nothing to do, doubled (from 1 us)
// when work arrives during one, and back to the maximum every kReprobeNs to try again.
// Spinning pays when the clients run on other cores and send their next request within the
// window. On a machine with more runnable threads than cores the spinning worker only holds a
// core its clients are waiting for, and every served round trip paid the whole window; the
// window then shrinks towards zero (sleep at once, woken by the event fd).
// Thread safety: the worker's thread.
#pragma once

#include <algorithm>
#include <cstdint>

namespace farmem::memnode {

class IdleSpin {
 public:
  static constexpr uint64_t kMinNs = 1000;
  static constexpr uint64_t kReprobeNs = 100'000'000;

  explicit IdleSpin(uint64_t max_ns) : max_ns_(max_ns), window_ns_(max_ns) {}
  // How long to spin after the last event now.
  uint64_t window_ns() const { return window_ns_; }
  // Work arrived while spinning.
  void productive() { window_ns_ = std::min(max_ns_, std::max(window_ns_ * 2, kMinNs)); }
  // The window passed without work (`now`: the worker's clock, ns); the worker sleeps next.
  void wasted(uint64_t now) {
    if (now - reprobed_ns_ >= kReprobeNs) {
      reprobed_ns_ = now;
      window_ns_ = max_ns_;
    } else {
      window_ns_ /= 2;
    }
  }

 private:
  uint64_t max_ns_;
  uint64_t window_ns_;
  uint64_t reprobed_ns_ = 0;
};

}  // namespace farmem::memnode
