// Recovery of the locks a coordinator that ended left behind (docs/formats/txn.md "Recovery"),
// and the settling of committing logs before a promotion ("Promotion", step 3). One Recovery
// per coordinator, in its TxnContext: transactions ask it on a lock conflict
// (TxnClient::recover does the same), promote_table through TxnClient::settle_for_promotion.
// It has one recovery slot (LogSlots::recovery_slot), so it runs one recovery at a time.
// Thread safety: the coordinator's thread only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "farmem/client/global_address.h"
#include "farmem/common/result.h"
#include "farmem/runtime/task.h"
#include "farmem/txn/layout.h"

namespace farmem::txn {

class TxnContext;

// Bounds the liveness questions a coordinator asks: a holder found alive is asked about again
// only after `interval_ns`, and at most kRecent questions are asked per interval, whatever the
// number of distinct holders met (live holders change quickly under contention). A holder
// found dead stays dead (its session ended) and is never asked about again while remembered.
class HolderChecks {
 public:
  static constexpr uint32_t kRecent = 16;  // holders remembered

  // Whether to look at `holder` now; *dead is whether it is known dead (no question needed).
  bool admit(uint64_t holder, uint64_t now_ns, uint64_t interval_ns, bool* dead);
  // What the look found (kept if the holder is still remembered).
  void record(uint64_t holder, bool dead);

 private:
  struct Check {
    uint64_t holder = 0;
    uint64_t at_ns = 0;
    bool dead = false;
  };
  Check* find(uint64_t holder);

  std::array<Check, kRecent> checks_{};  // a ring of the holders asked about last
  uint32_t next_ = 0;
  uint64_t window_start_ns_ = 0;  // liveness questions asked since then (bounded)
  uint32_t window_checks_ = 0;
};

class Recovery {
 public:
  explicit Recovery(TxnContext* ctx) : ctx_(ctx) {}

  // TxnClient::recover: rolls forward or releases a lock whose holder's coordinator ended.
  runtime::Task<Result<bool>> recover(GlobalAddress word, uint64_t holder);
  // TxnClient::settle_for_promotion.
  runtime::Task<Result<bool>> settle_for_promotion(uint64_t holder, uint16_t dead_node);

 private:
  runtime::Task<Result<bool>> recover_slot(GlobalAddress word, uint64_t holder, bool* dead);
  // Reads the log of `slot` (whose header h was just read) into *log: true when it is complete
  // and committing (state 1, checksum holds), false when not committing or torn.
  runtime::Task<Result<bool>> read_log(GlobalAddress slot, const LogSlotHeader& h,
                                       std::string* log);
  // Copies the log into the recovery slot, then for each entry whose lock still names `holder`
  // (or already names the recovery slot) writes its image to every live target and unlocks.
  runtime::Task<Status> roll_forward(uint64_t holder, const std::string& log);
  // For an entry whose primary lock word is on a node named down (its primary died): writes
  // the image to every target whose version is older than the image's (nobody can have
  // locked the record since: its lock was on the dead node, and promotion applies this before
  // the backups serve as primaries).
  runtime::Task<Status> apply_unlocked(const std::vector<GlobalAddress>& targets, const char* image,
                                       uint32_t image_bytes);

  TxnContext* ctx_;
  HolderChecks checks_;
  bool recovering_ = false;
};

}  // namespace farmem::txn
