// A durable node's run rebuilt at each of its sync boundaries, for power-loss sweeps of any
// structure. record_syncs() starts the node with its files taking writes only at sync
// (--simulate-power-loss) and every sync recorded in a trace (--sync-trace,
// storage/sync_trace.h); after the workload and a clean stop, for_each_sync_boundary() rebuilds
// the directory as a power loss right after each sync would leave it (boundary 0: nothing synced
// yet) and hands it to the structure's check, with the instant the next sync returned: a write
// acknowledged before then had its sync at this boundary or earlier. The last rebuilt directory
// must equal the one the node left, so the trace is known to be whole.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "durable_node.h"
#include "farmem/storage/sync_trace.h"

namespace farmem::testing {

struct SyncBoundary {
  size_t index = 0;        // 0 .. count
  size_t count = 0;        // syncs in the trace
  int64_t horizon_ns = 0;  // when sync index + 1 returned (int64 max for the last boundary)
  std::string dir;         // the data directory as the power loss leaves it (do not modify)
};

// Starts `node` (not started) recording its syncs; *args gets its arguments without the trace
// (for the nodes that recover on the rebuilt directories). False (with *why) when it fails.
inline bool record_syncs(DurableNode& node, const std::string& durability,
                         const std::string& checkpoint_log, std::vector<std::string>* args,
                         std::string* why) {
  *args = node.extra_args;
  node.extra_args.insert(node.extra_args.end(),
                         {"--simulate-power-loss", "--sync-trace", node.dir() + "/sync.trace"});
  return node.start(why, durability, checkpoint_log);
}

// Starts `probe` (a new node, not started) on a copy of `dir`.
inline bool start_on_copy(DurableNode& probe, const std::string& dir, const std::string& durability,
                          const std::string& checkpoint_log, std::string* why) {
  std::error_code ec;
  std::filesystem::copy(dir, probe.dir() + "/data", std::filesystem::copy_options::recursive, ec);
  if (ec) {
    *why = "copy: " + ec.message();
    return false;
  }
  return probe.start(why, durability, checkpoint_log);
}

namespace sync_boundaries_detail {

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace sync_boundaries_detail

// After record_syncs, the workload and node.stop(): `check` at every boundary returns "" or
// what failed there. Stops after three failures; prints progress every 50 boundaries.
inline void for_each_sync_boundary(DurableNode& node, uint64_t seed,
                                   const std::function<std::string(const SyncBoundary&)>& check) {
  auto entries = storage::read_sync_trace(node.dir() + "/sync.trace");
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  const std::string data = node.dir() + "/data", work = node.dir() + "/work";
  std::filesystem::create_directories(work);
  std::filesystem::copy_file(data + "/FORMAT", work + "/FORMAT");
  std::printf("[ SWEEP    ] seed %lu: %zu sync boundaries\n", seed, entries->size());
  std::fflush(stdout);
  int failures = 0;
  SyncBoundary b;
  b.count = entries->size();
  b.dir = work;
  for (b.index = 0; b.index <= b.count && failures < 3; ++b.index) {
    if (b.index > 0) {
      ASSERT_TRUE(storage::apply_sync_trace_entry(work, (*entries)[b.index - 1]).ok());
    }
    b.horizon_ns = b.index < b.count ? static_cast<int64_t>((*entries)[b.index].steady_ns)
                                     : std::numeric_limits<int64_t>::max();
    const std::string failed = check(b);
    if (!failed.empty()) {
      ADD_FAILURE() << "seed " << seed << ", boundary " << b.index << ": " << failed;
      ++failures;
    }
    if (b.index % 50 == 0 || b.index == b.count) {
      std::printf("[ SWEEP    ] boundary %zu of %zu: %d failed\n", b.index, b.count, failures);
      std::fflush(stdout);  // a long run's progress
    }
  }
  // The last boundary is the directory the node left: the trace holds every sync.
  for (const auto& f : std::filesystem::directory_iterator(data)) {
    const std::string file = f.path().filename();
    if (file == "LOCK") continue;
    EXPECT_EQ(sync_boundaries_detail::slurp(work + "/" + file),
              sync_boundaries_detail::slurp(data + "/" + file))
        << file;
  }
}

}  // namespace farmem::testing
