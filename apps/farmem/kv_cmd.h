// `farmem kv <command>`: the key-value store from a terminal or a script (kv/store.h, kv/pool.h).
// kv_cmd.cc registers each command's flags into KvOptions; kv_actions.cc runs them.
//
// All take --servers h:p,... or --config FILE (a pool lives on a node of a real cluster, so no
// local node is started). Exit codes scripts can use: kKvExit* below.
// Thread safety: the main thread.
#pragma once

#include <cstdint>
#include <string>

#include "farmem/bench/harness/options.h"

namespace farmem::apps {

inline constexpr int kKvExitOk = 0;
inline constexpr int kKvExitError = 1;     // anything else: unreachable node, timeout, bad reply
inline constexpr int kKvExitUsage = 2;     // bad flags or arguments
inline constexpr int kKvExitNotFound = 3;  // no such pool, key or match
inline constexpr int kKvExitExists = 4;    // create-only: the pool or key exists
inline constexpr int kKvExitBusy = 5;      // the key is locked / the pool is open elsewhere

struct KvOptions {
  std::string command;  // the command's name, for its error lines
  bench::ClusterOptions cluster;
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

// The commands (kv_actions.cc): each connects, runs, prints; the exit code.
int kv_pools(const KvOptions& o);
int kv_create_pool(const KvOptions& o);
int kv_delete_pool(const KvOptions& o);
int kv_put(const KvOptions& o);
int kv_get(const KvOptions& o);
int kv_erase(const KvOptions& o);
int kv_find(const KvOptions& o);
int kv_count(const KvOptions& o);
int kv_stats(const KvOptions& o);
int kv_invoke(const KvOptions& o);
int kv_configure(const KvOptions& o);

}  // namespace farmem::apps
