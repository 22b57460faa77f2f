// Power loss at every sync boundary of a recorded run, shared by the kv pool, hash table and
// B+tree tests. One life of a durable node whose files take writes only at sync
// (--simulate-power-loss) records each sync in a trace (--sync-trace, storage/sync_trace.h)
// while coroutines apply history.h's operations to a few hot keys; then the node stops.
// For each boundary k (0: nothing synced yet; the last: all the node synced), the directory is
// rebuilt as a power loss right after sync k would leave it, a new node recovers on it and
// every key is read. The history checked with those reads is what the clients knew when the
// next sync returned (a power loss may come any time before it): operations that returned by
// then are done; those called before it and still running are unknown, with it as deadline
// (they took effect before the power loss or never); later ones are left out. Porcupine then
// finds an acknowledged write that recovery lost, and a value no client had written yet.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "durable_history.h"
#include "durable_node.h"
#include "history.h"
#include "sync_boundaries.h"

namespace farmem::testing {
namespace power_loss_sweep_detail {

// The recorded operations as the clients knew them at horizon_ns (see above).
inline void as_of(const std::vector<HistoryOp>& all, int64_t horizon_ns, History* h) {
  for (const auto& o : all) {
    if (o.call >= horizon_ns) continue;
    HistoryOp c = o;
    if (o.ret >= horizon_ns) {
      if (c.op == "get") continue;  // a read without its answer says nothing
      c.unknown = true;
      c.deadline = horizon_ns;
    }
    h->ops.push_back(std::move(c));
  }
}

// A new node recovers on `state_dir`; every key of the structure is read into *h by one more
// client. "" or what failed (the node did not come back, a read failed).
template <typename H>
std::string recover_and_read(const DurableNode& recorded, const std::vector<std::string>& args,
                             const HistoryAcrossKills<H>& run, const std::string& state_dir,
                             History* h) {
  DurableNode probe(recorded.tls(), recorded.capacity_bytes());
  probe.extra_args = args;
  std::string why;
  if (!start_on_copy(probe, state_dir, run.durability, run.checkpoint_log, &why)) return why;
  client::ThreadClient& c = probe.client();
  auto opened = c.run(run.open(&c));
  if (!opened.ok()) return "open: " + opened.status().to_string();
  for (int k = 0; k < run.keys; ++k) {
    HistoryOp o;
    o.client = run.coroutines;
    o.key = fmt::format("hot{}", k);
    c.run(apply_op(opened->get(), 0, &o));  // dice 0: a get
    if (o.unknown) return "get " + o.key + ": " + o.error;
    h->add(std::move(o));
  }
  return "";
}

}  // namespace power_loss_sweep_detail

// Records `ops` operations of `run` (HistoryAcrossKills' workload and open; its kill settings
// are not used) on `node` (not started), then checks every sync boundary as above.
template <typename H>
void power_loss_sweep(DurableNode& node, const HistoryAcrossKills<H>& run, int ops, uint64_t seed,
                      const std::string& name) {
  namespace d = power_loss_sweep_detail;
  std::vector<std::string> args;
  std::string why;
  ASSERT_TRUE(record_syncs(node, run.durability, run.checkpoint_log, &args, &why)) << why;
  History all;
  {
    client::ThreadClient& c = node.client();
    auto opened = c.run(run.open(&c));
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    durable_history_detail::Life l;
    std::vector<runtime::Task<void>> tasks;
    for (int k = 0; k < run.coroutines; ++k) {
      tasks.push_back(durable_history_detail::worker(opened->get(), run, k, 0, seed,
                                                     ops / run.coroutines, &all, &l));
    }
    c.run(runtime::when_all(std::move(tasks)));
    ASSERT_EQ(l.premature, "") << "seed " << seed;
  }
  // A clean stop: every sync the node makes, its shutdown's included, is then in the trace.
  ASSERT_EQ(node.stop(), 0);
  std::printf("[ SWEEP    ] %zu operations\n", all.ops.size());
  for_each_sync_boundary(node, seed, [&](const SyncBoundary& b) -> std::string {
    History h;
    d::as_of(all.ops, b.horizon_ns, &h);
    std::string failed = d::recover_and_read(node, args, run, b.dir, &h);
    std::string out;
    if (failed.empty() && !check_linearizable(h, fmt::format("{}-{}", name, b.index), &out)) {
      failed = out;
    }
    return failed;
  });
}

}  // namespace farmem::testing
