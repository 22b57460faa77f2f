// TxnContext: what a coordinator (TxnClient) shares with the transactions it begins and the
// recoveries it runs: the thread's client, the options, the counters, the address cache, the
// log slots, the recovery state and the crash test hook. The TxnClient owns it (one per
// thread); every Transaction holds a pointer to it and uses nothing else of the coordinator.
// Thread safety: the coordinator's thread only.
#pragma once

#include <cstdint>

#include "farmem/client/thread_client.h"
#include "farmem/txn/transaction.h"
#include "log_slots.h"
#include "recovery.h"
#include "slot_cache.h"

namespace farmem::txn {

// Test hook (FARMEM_TXN_CRASH_AT=before_log|after_log|after_write): the coordinator SIGKILLs
// itself at that point of its next read-write commit, or SIGSTOPs with
// FARMEM_TXN_CRASH_SIGNAL=stop (the commit goes on after SIGCONT).
class CrashHook {
 public:
  enum class At : uint8_t { kNever, kBeforeLog, kAfterLog, kAfterWrite };
  // Reads the two variables.
  static CrashHook from_environment();
  void point(At at) const {
    if (at_ == at) fire();
  }

 private:
  void fire() const;

  At at_ = At::kNever;
  bool stops_ = false;
};

class TxnContext {
 public:
  TxnContext(client::ThreadClient* c, const TxnClientOptions& o, GlobalAddress log_base)
      : client(c),
        options(o),
        cache(o.cache_log2),
        logs(log_base, o.log_slots, o.log_slot_bytes),
        recovery(this),
        crash(CrashHook::from_environment()) {}
  TxnContext(const TxnContext&) = delete;
  TxnContext& operator=(const TxnContext&) = delete;

  client::ThreadClient* const client;
  const TxnClientOptions options;
  TxnCounters counters;
  SlotCache cache;
  LogSlots logs;
  Recovery recovery;  // points back at this context
  const CrashHook crash;
};

}  // namespace farmem::txn
