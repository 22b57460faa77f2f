// `farmem bench ops`: the one-sided operation rate benchmark (SMART's test_rdma).
//
// Each of the run's threads owns a private span of far memory on one memory node (thread t on
// node t mod N) and keeps `depth` operations in flight, each at a uniformly random,
// block-aligned offset of its span. Prints one result line ("ops: op=... Mops/s=..."); the
// report file gets one record. Latency is sampled on one operation in 32.
// Thread safety: run_ops runs on the calling thread and starts the run's threads.
#pragma once

#include <cstdint>
#include <optional>

#include "farmem/bench/harness/names.h"
#include "farmem/bench/harness/options.h"
#include "farmem/runtime/throttle.h"

namespace farmem::bench {

// inc: a CAS retry loop (read, CAS, back off on conflict), the contended-update case.
enum class OneSidedOp { kRead, kWrite, kCas, kFaa, kInc };
inline constexpr EnumNames<OneSidedOp, 5> kOneSidedOpNames{{{"read", OneSidedOp::kRead},
                                                            {"write", OneSidedOp::kWrite},
                                                            {"cas", OneSidedOp::kCas},
                                                            {"faa", OneSidedOp::kFaa},
                                                            {"inc", OneSidedOp::kInc}}};

struct OpsOptions {
  BenchOptions bench = bench_options_lasting(5);
  OneSidedOp op = OneSidedOp::kRead;
  uint32_t depth = 16;                            // operations in flight per thread
  uint64_t block_bytes = 8;                       // read/write size (the atomics use 8)
  uint64_t span_bytes = 64ull << 20;              // per-thread working set (random offsets in it)
  std::optional<runtime::ThrottleMode> throttle;  // unset: the client config's
  std::optional<bool> backoff;                    // unset: the client config's (on)
  std::optional<bool> direct;                     // unset: the client config's direct_access
};

// Runs the benchmark; 0, or 1 (failed run) / 2 (bad options) with the error printed.
int run_ops(const OpsOptions& options);

}  // namespace farmem::bench
