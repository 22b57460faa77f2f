// Promotion: after a memory node died, make the backups of the buckets whose primary it held
// the primaries (docs/formats/txn.md "Promotion"). An operator command (farmem txn promote)
// runs it once per table, in a client that names the dead node down
// (client::ClientOptions::down_nodes).
//
// For one table it (a) refuses when the dead node holds the table's metadata or root, or when
// some bucket would lose its last replica; (b) scans the table's buckets on the surviving nodes
// for lock words, and rolls forward every complete committing redo log they name that has a
// lock or a replica on the dead node (kBusy, changing nothing, while such a log's coordinator
// is alive); (c) clears the lock words of the promoted replicas (commits never write them, so
// this finds none unless something is wrong); (d) sets the dead node's bit in the table's
// failed-node marks (CAS: concurrent promotions do not lose each other's bits). Running
// processes pick the change up with Table::refresh. It does not restore the replica count and
// does not move the metadata.
// Thread safety: the caller's thread (its ThreadClient and TxnClient).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/common/result.h"
#include "farmem/runtime/task.h"
#include "farmem/txn/transaction.h"

namespace farmem::txn {

struct PromoteReport {
  std::string table;
  uint16_t node = 0;              // the dead node
  bool already_failed = false;    // its bit was set before: nothing else done
  uint64_t promoted_buckets = 0;  // buckets whose primary moved off the dead node
  uint64_t locks_seen = 0;        // lock words held on the surviving replicas
  uint64_t logs_rolled_forward = 0;
  uint64_t locks_cleared = 0;  // nonzero lock words found (and cleared) on promoted replicas
  uint64_t failed_nodes = 0;   // the table's failed-node marks afterwards (bit per index)
};

// The lock words held on the primaries of a table (bucket and record locks), for operators:
// once the coordinators that held them have ended and recovery met them, there are none.
// Scans every live node's bucket array with one-sided reads; `held` keeps at most 65,536.
struct HeldLock {
  GlobalAddress word;
  uint64_t holder;  // the lock value: the holder's log slot (packed GlobalAddress)
};
struct LockReport {
  std::string table;
  uint64_t locks = 0;
  std::vector<HeldLock> held;
};
runtime::Task<Result<LockReport>> held_locks(client::ThreadClient* c, std::string table);

runtime::Task<Result<PromoteReport>> promote_table(client::ThreadClient* c, TxnClient* tc,
                                                   std::string table, uint16_t dead_node);

}  // namespace farmem::txn
