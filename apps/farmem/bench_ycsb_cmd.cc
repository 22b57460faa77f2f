// farmem bench ycsb [--structure hash|btree|kv] [--workload a|b|c|d|e|f] [--records N]
//                   [--coroutines N] [--kv-mode M] [--coalesce on|off] ... <bench flags>
//                                                             (farmem/bench/ycsb.h)
#include "command.h"
#include "farmem/bench/ycsb.h"
#include "farmem/ds/hash/layout.h"
#include "flags.h"

namespace farmem::apps {
namespace {

// The flags of the workload: what is loaded and how keys are chosen.
void add_workload_flags(CLI::App* app, bench::YcsbOptions* o) {
  add_enum_option(app, "--structure", &o->structure, bench::kYcsbStructureNames,
                  "data structure: hash | btree | kv");
  add_enum_option(app, "--workload", &o->workload, bench::kYcsbWorkloadNames,
                  "a|b|c|d|e|f (e: scans, btree only)");
  app->add_option("--records", o->records, "records loaded before the run")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 34));
  app->add_option("--key-bytes", o->key_bytes, "key length (>= 8)")
      ->transform(bytes_unit())
      ->check(CLI::Range(size_t{8}, size_t{64 * 1024}));
  app->add_option("--value-bytes", o->value_bytes, "value length")
      ->transform(bytes_unit())
      ->check(CLI::Range(size_t{0}, size_t{256 * 1024}));
  add_choice_option(app, "--distribution", &o->distribution, {"zipfian", "uniform"},
                    bench::workload::distribution_by_name, "zipfian|uniform");
  app->add_option("--zipf", o->zipf, "zipfian constant")->check(CLI::Range(0.01, 0.9999));
  app->add_option("--coroutines", o->coroutines, "coroutines per thread")
      ->check(CLI::Range(1, 1024));
}

// The flags of the hash table and the tree.
void add_table_flags(CLI::App* app, bench::YcsbOptions* o) {
  app->add_flag("--no-speculative", o->no_speculative, "disable speculative lookup");
  app->add_flag("--no-served", o->no_served,
                "hash, btree: stay one-sided where the node serves one-sided operations (TCP)");
  app->add_option("--initial-depth", o->initial_depth,
                  "2^N subtables per node at creation (default: the table's 3; the "
                  "table grows online either way)")
      ->check(CLI::Range(0, static_cast<int>(ds::hash::kMaxDepth)));
  app->add_option("--spec-cache-log2", o->spec_cache_log2,
                  "entries of each handle's speculative cache = 2^N")
      ->check(CLI::Range(0u, 26u));
  add_on_off_option(app, "--direct", &o->direct,
                    "on|off: direct access on shared memory (default: client config, on)");
  app->add_option("--max-scan-length", o->max_scan_length,
                  "workload e: scan lengths are uniform in 1..N (YCSB's maxscanlength)")
      ->check(CLI::Range(1u, 100000u));
  app->add_option("--index-cache", o->index_cache_bytes,
                  "--structure btree: bytes of each handle's index cache (0 = none)")
      ->transform(bytes_unit());
}

// The flags of the key-value store (and of the local node, which matters most to it).
void add_kv_flags(CLI::App* app, bench::YcsbOptions* o) {
  add_choice_option(app, "--kv-mode", &o->kv_mode, {"rpc", "one-two-sided", "auto"},
                    kv::parse_kv_mode,
                    "--structure kv: rpc | one-two-sided | auto (one-sided gets where the node "
                    "is reached with true one-sided operations; default)");
  add_on_off_option(app, "--coalesce", &o->coalesce,
                    "--structure kv: on | off, request coalescing (default on)");
  app->add_option("--kv-in-flight", o->kv_in_flight,
                  "--structure kv: coalesced messages in flight per node (default 8)")
      ->check(CLI::Range(1u, 256u));
  app->add_option("--local-idle-spin-us", o->bench.cluster.local_idle_spin_us,
                  "idle_spin_us of the local memory node started for the run (default: the "
                  "node's own; 0 sleeps at once when idle, which keeps a busy, shared machine's "
                  "scheduler from starving the node)")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}));
  app->add_option("--kv-batch", o->kv_batch,
                  "--structure kv: operations per coalesced message at most (default 64)")
      ->check(CLI::Range(1u, 256u));
  app->add_option("--kv-cache-log2", o->kv_cache_log2,
                  "--structure kv: location cache entries per thread = 2^N (default 20)")
      ->check(CLI::Range(0, 28));
  app->add_option("--pool-capacity", o->pool_capacity_bytes,
                  "--structure kv: the pool's capacity (default: from records and sizes)")
      ->transform(bytes_unit());
}

void add_flags(CLI::App* app, bench::YcsbOptions* o) {
  add_bench_flags(app, &o->bench, "seconds of the run phase");
  add_workload_flags(app, o);
  add_table_flags(app, o);
  add_kv_flags(app, o);
  app->add_option("--local-durability", o->bench.cluster.local_durability,
                  "the local memory node keeps its data in a temporary data directory: "
                  "process | power (default: volatile)")
      ->check(CLI::IsMember({"process", "power"}));
  app->add_option("--keep-table", o->keep_table,
                  "create a persistent table with this name and keep it (default: a "
                  "temporary table, destroyed at the end or when the run dies)");
}

}  // namespace

Command bench_ycsb_command() {
  return make_command<bench::YcsbOptions>(
      "bench", "ycsb", "YCSB workloads on a far-memory structure", add_flags, bench::run_ycsb);
}

}  // namespace farmem::apps
