#include "farmem/ds/common/reclaimer.h"

#include "farmem/common/clock.h"

namespace farmem::ds {

using runtime::Task;

namespace {
uint32_t now_ms32() { return static_cast<uint32_t>(now_ns() / 1'000'000); }
}  // namespace

Reclaimer::Reclaimer(client::ThreadClient* c, ObjectHeap* heap, uint64_t grace_ns,
                     size_t max_retired)
    : client_(c), heap_(heap), grace_ns_(grace_ns), max_retired_(max_retired) {}

uint64_t Reclaimer::default_grace_ns(uint32_t op_timeout_ms) {
  return (2ull * op_timeout_ms + 1000) * 1'000'000;
}

uint64_t Reclaimer::age_ns(const Retired& r) {
  return uint64_t{static_cast<uint32_t>(now_ms32() - r.when_ms)} * 1'000'000;
}

Task<Status> Reclaimer::retire(GlobalAddress addr, uint64_t bytes, Kind kind) {
  const uint32_t tagged =
      static_cast<uint32_t>(bytes) | (kind == Kind::kNodeBlock ? kNodeBlockBit : 0u);
  retired_.push_back(Retired{addr.pack(), tagged, now_ms32()});
  ++stats_.retired;
  if (retired_.size() > max_retired_) {
    // Bounded: wait for the oldest block's grace period rather than grow.
    const uint64_t age = age_ns(retired_.front());
    if (age < grace_ns_) {
      ++stats_.waits;
      co_await client_->scheduler().sleep_for_ns(grace_ns_ - age);
    }
  }
  if (!retired_.empty() && age_ns(retired_.front()) >= grace_ns_) co_await reclaim(false);
  co_return OkStatus();
}

Task<void> Reclaimer::reclaim(bool wait_for_all) {
  while (!retired_.empty()) {
    const Retired r = retired_.front();
    const uint64_t age = age_ns(r);
    if (age < grace_ns_) {
      if (!wait_for_all) co_return;
      co_await client_->scheduler().sleep_for_ns(grace_ns_ - age);
      continue;  // another coroutine of the handle may have freed it meanwhile
    }
    retired_.pop_front();
    if (r.bytes & kNodeBlockBit) {
      (void)co_await client_->free_on(GlobalAddress::unpack(r.addr));
    } else {
      (void)co_await heap_->free(GlobalAddress::unpack(r.addr), r.bytes);
    }
    ++stats_.reclaimed;
  }
}

}  // namespace farmem::ds
