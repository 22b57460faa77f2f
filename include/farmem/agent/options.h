// AgentOptions: what farmem-agent does, each feature switchable so its effect can be measured.
// Thread safety: a plain value.
#pragma once

#include <cstdint>

#include "farmem/common/status.h"

namespace farmem::agent {

struct AgentOptions {
  bool aggregation = true;            // group a round's read misses per node into Batches; off: one
                                      // Batch per request
  bool async_writeback = true;        // ack a write on receipt; off: after it is at the node
  bool static_cache = true;           // honour kPinStatic (off: refused)
  bool dynamic_cache = true;          // dynamic caching with staging of entries
  bool adaptive = true;               // the model may switch dynamic caching off and on
  uint64_t entry_bytes = 1ull << 20;  // dynamic/static entry size (>= page_bytes)
  uint64_t page_bytes = 64ull << 10;  // the page-id unit of the recent-access ring
  uint64_t cache_bytes = 256ull << 20;             // dynamic cache budget
  uint64_t static_bytes = 1ull << 30;              // static cache budget
  uint32_t prefetch_workers = 1;                   // background staging threads (1..8)
  uint32_t max_queued = 4096;                      // requests waiting for the forwarder
  uint64_t max_pending_write_bytes = 64ull << 20;  // acked, not yet written back
  uint32_t model_window = 256;                     // dynamic lookups per adaptive decision
  double cost_weight = 0.5;       // adaptive model: staged bytes weigh this much against hit bytes
  uint32_t op_timeout_ms = 5000;  // deadline of each memory-node round

  Status validate() const;
};

}  // namespace farmem::agent
