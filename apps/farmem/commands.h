// Subcommands of the `farmem` tool.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "farmem/bench/harness/cluster.h"
#include "farmem/bench/harness/options.h"
#include "farmem/client/cluster_config.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace farmem::apps {

using ClusterFlags = bench::ClusterOptions;
using bench::LocalNode;
using bench::resolve_cluster;

CLI::Validator bytes_unit();
void add_cluster_flags(CLI::App* sub, ClusterFlags* flags);
void add_bench_flags(CLI::App* sub, bench::BenchOptions* flags, const std::string& duration_help);

using BenchFlags = bench::BenchOptions;
using bench::kDefaultBenchSeed;
inline BenchFlags bench_flags_lasting(double duration_s) {
  return bench::bench_options_lasting(duration_s);
}

int run_status(const ClusterFlags& flags);

// `farmem kv <command>` (kv_cmd.cc). Exit codes scripts can use:
inline constexpr int kKvExitOk = 0;
inline constexpr int kKvExitError = 1;     // anything else: unreachable node, timeout, bad reply
inline constexpr int kKvExitUsage = 2;     // bad flags or arguments
inline constexpr int kKvExitNotFound = 3;  // no such pool, key or match
inline constexpr int kKvExitExists = 4;    // create-only: the pool or key exists
inline constexpr int kKvExitBusy = 5;      // the key is locked / the pool is open elsewhere

struct KvFlags {
  ClusterFlags cluster;
  std::string command;  // pools, create-pool, ...
  std::string pool;
  std::string key;
  std::string value;
  std::string value_file;  // put: read the value from this file ("-": stdin)
  std::string expression;  // find
  std::string request;     // invoke
  std::string configure;   // configure: the command (kv.md "Configure commands")
  uint64_t capacity_bytes = 64ull << 20;
  uint64_t expected_count = 0;
  uint64_t start = 0;  // find: first position
  uint64_t limit = 0;  // find: matches to print (0 = all)
  bool create_only = false;
  bool dont_overwrite = false;
  bool raw = false;             // get: the value's bytes only, no newline
  std::string put_value;        // invoke: invoke_put_ado with this value
  uint32_t ado_flags = 0;       // invoke: wire::kAdo* flags
  uint64_t ado_value_size = 0;  // invoke: kAdoCreateOnDemand size
};
// Registers `farmem kv` and its commands on `app`; run_kv runs the parsed one.
CLI::App* add_kv_commands(CLI::App* app, KvFlags* flags);
int run_kv(const KvFlags& flags);

// `farmem txn <command>` (txn_cmd.cc): operator commands for transactional tables.
struct TxnFlags {
  ClusterFlags cluster;
  std::string command;              // create | locks | promote
  uint16_t node = 0;                // promote: the dead node's id
  std::vector<std::string> tables;  // the tables (create, locks: one)
  uint32_t record_bytes = 8;        // create
  uint64_t capacity = 1024;         // create
  uint32_t replicas = 0;            // create (0: the default)
  bool recover = false;             // locks: meet each held lock (recovery of ended holders)
};
CLI::App* add_txn_commands(CLI::App* app, TxnFlags* flags);
int run_txn(const TxnFlags& flags);

}  // namespace farmem::apps
