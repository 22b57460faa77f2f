// The options every command that reaches a cluster takes (ClusterOptions), and those every
// benchmark adds (BenchOptions): plain values a command line fills in before a run.
//
// ClusterOptions names the memory nodes (servers or a TOML config; with neither, a local memory
// node is started for the run: harness/cluster.h). BenchOptions adds threads, the timed run's
// duration and warm-up, the seed and the report file (harness/bench.h uses them).
// Thread safety: values.
#pragma once

#include <cstdint>
#include <string>

namespace farmem::bench {

struct ClusterOptions {
  std::string servers;  // host:port,...
  std::string config;   // TOML file
  uint64_t local_capacity_bytes = 1ull << 30;
  int64_t local_idle_spin_us = -1;  // the local node's idle_spin_us; -1: the node's default
  std::string local_preload_dir;    // the local node's --preload-dir ("" = none)
  // The local node's --durability ("": volatile; "process" or "power": a data directory in
  // its temporary directory, on the file system of $TMPDIR or /tmp).
  std::string local_durability;
  std::string down_nodes;  // host:port=ID,...: listed nodes known to be down
};

// The seed of a benchmark run without --seed.
inline constexpr uint64_t kDefaultBenchSeed = 42;

struct BenchOptions {
  ClusterOptions cluster;
  uint32_t threads = 1;
  double duration_s = 5;  // measured seconds
  double warmup_s = 0;    // seconds run before the measurement, not reported
  uint64_t seed = kDefaultBenchSeed;
  std::string out;  // FILE.json or FILE.csv, appended
};

inline BenchOptions bench_options_lasting(double duration_s) {
  BenchOptions o;
  o.duration_s = duration_s;
  return o;
}

}  // namespace farmem::bench
