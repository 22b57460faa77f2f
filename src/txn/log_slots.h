// LogSlots: a coordinator's log slots on one memory node (docs/formats/txn.md "Logs"), slots
// 0..count-1 for its transactions and slot `count` for the recoveries it runs. A transaction's
// lock value is its slot's packed address. The state of each transaction slot is the one the
// coordinator itself drives, mirrored here so that its transitions are checked:
//
//   free --take--> held --set_committing--> committing --set_cleared--> held --give--> free
//   held | committing --retire--> retired (locks or a committing log may still name it: the
//                                          slot is never used again)
//
// Thread safety: the coordinator's thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "farmem/client/global_address.h"
#include "farmem/common/check.h"

namespace farmem::txn {

class LogSlots {
 public:
  LogSlots(GlobalAddress base, uint32_t count, uint32_t slot_bytes)
      : base_(base), count_(count), slot_bytes_(slot_bytes), state_(count, State::kFree) {
    for (uint32_t i = count; i-- > 0;) free_.push_back(i);
  }

  GlobalAddress base() const { return base_; }
  uint32_t count() const { return count_; }
  GlobalAddress address(uint32_t i) const {
    FARMEM_ASSERT(i <= count_, "a log slot of this coordinator");
    return base_ + uint64_t{i} * slot_bytes_;
  }
  GlobalAddress recovery_slot() const { return address(count_); }

  // A free slot, or nothing when all are in use.
  std::optional<uint32_t> take() {
    if (free_.empty()) return std::nullopt;
    const uint32_t i = free_.back();
    free_.pop_back();
    FARMEM_ASSERT(state(i) == State::kFree, "a free log slot is taken once");
    state(i) = State::kHeld;
    return i;
  }
  // The slot's log is being written (its state word becomes kLogCommitting).
  void set_committing(uint32_t i) {
    FARMEM_ASSERT(state(i) == State::kHeld, "a log is written once per transaction");
    state(i) = State::kCommitting;
  }
  // The slot's state word was written back to idle.
  void set_cleared(uint32_t i) {
    FARMEM_ASSERT(state(i) == State::kCommitting, "only a committing log is cleared");
    state(i) = State::kHeld;
  }
  void give(uint32_t i) {
    FARMEM_ASSERT(state(i) == State::kHeld, "a slot is given back once, its log idle");
    state(i) = State::kFree;
    free_.push_back(i);
  }
  void retire(uint32_t i) {
    FARMEM_ASSERT(state(i) == State::kHeld || state(i) == State::kCommitting,
                  "only a slot in use is retired");
    state(i) = State::kRetired;
  }
  // The slots were freed on their node (TxnClient::close): none is taken any more.
  void close() {
    base_ = GlobalAddress();
    free_.clear();
  }

 private:
  enum class State : uint8_t { kFree, kHeld, kCommitting, kRetired };
  State& state(uint32_t i) {
    FARMEM_ASSERT(i < count_, "a transaction slot of this coordinator");
    return state_[i];
  }

  GlobalAddress base_;
  uint32_t count_;
  uint32_t slot_bytes_;
  std::vector<State> state_;  // per transaction slot
  std::vector<uint32_t> free_;
};

}  // namespace farmem::txn
