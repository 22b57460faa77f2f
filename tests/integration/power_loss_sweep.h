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
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "durable_history.h"
#include "durable_node.h"
#include "farmem/storage/sync_trace.h"
#include "history.h"

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

// A new node recovers on a copy of `state_dir`; every key of the structure is read into *h by
// one more client. False (with *why) when the node does not come back or a read fails.
template <typename H>
bool recover_and_read(const DurableNode& recorded, const std::vector<std::string>& args,
                      const HistoryAcrossKills<H>& run, const std::string& state_dir, History* h,
                      std::string* why) {
  DurableNode probe(recorded.tls(), recorded.capacity_bytes());
  probe.extra_args = args;
  std::error_code ec;
  std::filesystem::copy(state_dir, probe.dir() + "/data", std::filesystem::copy_options::recursive,
                        ec);
  if (ec) {
    *why = "copy: " + ec.message();
    return false;
  }
  if (!probe.start(why, run.durability, run.checkpoint_log)) return false;
  client::ThreadClient& c = probe.client();
  auto opened = c.run(run.open(&c));
  if (!opened.ok()) {
    *why = "open: " + opened.status().to_string();
    return false;
  }
  for (int k = 0; k < run.keys; ++k) {
    HistoryOp o;
    o.client = run.coroutines;
    o.key = fmt::format("hot{}", k);
    c.run(apply_op(opened->get(), 0, &o));  // dice 0: a get
    if (o.unknown) {
      *why = "get " + o.key + ": " + o.error;
      return false;
    }
    h->add(std::move(o));
  }
  return true;
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace power_loss_sweep_detail

// Records `ops` operations of `run` (HistoryAcrossKills' workload and open; its kill settings
// are not used) on `node` (not started), then checks every sync boundary as above. Stops after
// three failed boundaries.
template <typename H>
void power_loss_sweep(DurableNode& node, const HistoryAcrossKills<H>& run, int ops, uint64_t seed,
                      const std::string& name) {
  namespace d = power_loss_sweep_detail;
  const std::string trace = node.dir() + "/sync.trace";
  const std::vector<std::string> args = node.extra_args;  // the recovering nodes' too
  node.extra_args.insert(node.extra_args.end(), {"--simulate-power-loss", "--sync-trace", trace});
  std::string why;
  ASSERT_TRUE(node.start(&why, run.durability, run.checkpoint_log)) << why;
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
  auto entries = storage::read_sync_trace(trace);
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  const std::string data = node.dir() + "/data", work = node.dir() + "/work";
  std::filesystem::create_directories(work);
  std::filesystem::copy_file(data + "/FORMAT", work + "/FORMAT");
  std::printf("[ SWEEP    ] seed %lu: %zu operations, %zu sync boundaries\n", seed, all.ops.size(),
              entries->size());
  std::fflush(stdout);
  int failures = 0;
  for (size_t k = 0; k <= entries->size() && failures < 3; ++k) {
    if (k > 0) {
      ASSERT_TRUE(storage::apply_sync_trace_entry(work, (*entries)[k - 1]).ok());
    }
    const int64_t horizon = k < entries->size() ? static_cast<int64_t>((*entries)[k].steady_ns)
                                                : std::numeric_limits<int64_t>::max();
    History h;
    d::as_of(all.ops, horizon, &h);
    std::string out;
    if (!d::recover_and_read(node, args, run, work, &h, &why)) {
      ADD_FAILURE() << "seed " << seed << ", boundary " << k << ": " << why;
      ++failures;
    } else if (!check_linearizable(h, fmt::format("{}-{}", name, k), &out)) {
      ADD_FAILURE() << "seed " << seed << ", boundary " << k << ": " << out;
      ++failures;
    }
    if (k % 50 == 0 || k == entries->size()) {
      std::printf("[ SWEEP    ] boundary %zu of %zu: %zu operations known, %d failed\n", k,
                  entries->size(), h.ops.size() - static_cast<size_t>(run.keys), failures);
      std::fflush(stdout);  // a long run's progress
    }
  }
  // The last boundary is the directory the node left: the trace holds every sync.
  for (const auto& f : std::filesystem::directory_iterator(data)) {
    const std::string file = f.path().filename();
    if (file == "LOCK") continue;
    EXPECT_EQ(d::slurp(work + "/" + file), d::slurp(data + "/" + file)) << file;
  }
}

}  // namespace farmem::testing
