#include "farmem/common/virtual_clock.h"

#include <cstdio>
#include <cstdlib>

namespace farmem {
namespace {

[[noreturn]] void die(const char* message) {
  std::fprintf(stderr, "farmem: %s\n", message);
  std::abort();
}

}  // namespace

namespace clock_internal {
uint64_t virtual_now_ns(const VirtualClock* clock) { return clock->now_ns(); }
}  // namespace clock_internal

VirtualClock::~VirtualClock() {
  if (current() == this) die("VirtualClock destroyed while a ScopedVirtualClock still installs it");
}

ScopedVirtualClock::ScopedVirtualClock(VirtualClock& clock)
    : clock_(&clock), previous_(clock_internal::tls_virtual_clock) {
  clock_internal::tls_virtual_clock = clock_;
}

ScopedVirtualClock::~ScopedVirtualClock() {
  if (clock_internal::tls_virtual_clock != clock_) {
    die("ScopedVirtualClock destroyed out of order (guards nest; destroy the innermost first)");
  }
  clock_internal::tls_virtual_clock = previous_;
}

}  // namespace farmem
