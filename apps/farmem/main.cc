// farmem: the compute-side command-line tool.
//
//   farmem bench ops [--op read|write|cas|faa|inc] [--depth N] [--block-bytes N] [--direct on|off]
//                    <bench flags>
//   farmem bench ycsb [--structure hash|btree|kv] [--workload a|b|c|d|e|f] [--records N]
//                     [--coroutines N] [--kv-mode M] [--coalesce on|off] ... <bench flags>
//   farmem status [--servers h:p,...|--config FILE]
//   farmem kv pools|create-pool|delete-pool|put|get|erase|find|count|stats|invoke ... (kv_cmd.cc)
//   farmem graph generate|convert|run ...  (graph_cmd.cc)
//   farmem txn promote --node ID --table NAME... --down-nodes h:p=ID <cluster>  (txn_cmd.cc)
//   farmem bench txn --workload smallbank|tatp [--coroutines N] [--scale X] [--max-attempts N]
//                    <bench flags>   (bench_txn.cc)
//   farmem bench ado-filter [--records N] [--value-bytes N] [--query Q] [--coroutines N]
//                           [--repeat N] <bench flags>   (needs a node with ADO plugins)
//   farmem bench paged fault|scan [--page-bytes N] [--bytes N] [--local-memory BYTES|PCT%]
//
// Bench flags (bench_harness.h): [--servers h:p,...|--config FILE] [--threads N] [--duration S]
// [--warmup S] [--seed N] [--out FILE.json|.csv].
//
// Without --servers or --config, a local memory node is started for the run and stopped after.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cctype>

#include "bench_agent.h"
#include "bench_far.h"
#include "bench_harness.h"
#include "bench_paged.h"
#include "bench_txn.h"
#include "command.h"
#include "commands.h"
#include "farmem/common/log.h"
#include "farmem/common/units.h"
#include "farmem/ds/hash/layout.h"
#include "graph_cmd.h"

namespace farmem::apps {

// `farmem bench ycsb` and its flags.
CLI::App* add_bench_ycsb(CLI::App* bench, BenchYcsbFlags* ycsb) {
  CLI::App* bench_ycsb = bench->add_subcommand("ycsb", "YCSB workloads on a far-memory structure");
  add_bench_flags(bench_ycsb, &ycsb->bench, "seconds of the run phase");
  bench_ycsb->add_option("--structure", ycsb->structure, "data structure: hash | btree | kv")
      ->check(CLI::IsMember({"hash", "btree", "kv"}));
  bench_ycsb->add_option("--workload", ycsb->workload, "a|b|c|d|e|f (e: scans, btree only)")
      ->check(CLI::IsMember({"a", "b", "c", "d", "e", "f", "A", "B", "C", "D", "E", "F"}));
  bench_ycsb->add_option("--records", ycsb->records, "records loaded before the run")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 34));
  bench_ycsb->add_option("--key-bytes", ycsb->key_bytes, "key length (>= 8)")
      ->transform(bytes_unit())
      ->check(CLI::Range(size_t{8}, size_t{64 * 1024}));
  bench_ycsb->add_option("--value-bytes", ycsb->value_bytes, "value length")
      ->transform(bytes_unit())
      ->check(CLI::Range(size_t{0}, size_t{256 * 1024}));
  bench_ycsb->add_option("--distribution", ycsb->distribution, "zipfian|uniform")
      ->check(CLI::IsMember({"zipfian", "uniform"}));
  bench_ycsb->add_option("--zipf", ycsb->zipf, "zipfian constant")->check(CLI::Range(0.01, 0.9999));
  bench_ycsb->add_option("--coroutines", ycsb->coroutines, "coroutines per thread")
      ->check(CLI::Range(1, 1024));
  bench_ycsb->add_flag("--no-speculative", ycsb->no_speculative, "disable speculative lookup");
  bench_ycsb
      ->add_option("--initial-depth", ycsb->initial_depth,
                   "2^N subtables per node at creation (default: the table's 3; the "
                   "table grows online either way)")
      ->check(CLI::Range(0, static_cast<int>(ds::hash::kMaxDepth)));
  bench_ycsb
      ->add_option("--spec-cache-log2", ycsb->spec_cache_log2,
                   "entries of each handle's speculative cache = 2^N")
      ->check(CLI::Range(0u, 26u));
  bench_ycsb
      ->add_option("--direct", ycsb->direct,
                   "on|off: direct access on shared memory (default: client config, on)")
      ->check(CLI::IsMember({"on", "off"}));

  bench_ycsb
      ->add_option("--max-scan-length", ycsb->max_scan_length,
                   "workload e: scan lengths are uniform in 1..N (YCSB's maxscanlength)")
      ->check(CLI::Range(1u, 100000u));
  bench_ycsb
      ->add_option("--index-cache", ycsb->index_cache_bytes,
                   "--structure btree: bytes of each handle's index cache (0 = none)")
      ->transform(bytes_unit());
  bench_ycsb
      ->add_option("--kv-mode", ycsb->kv_mode,
                   "--structure kv: rpc | one-two-sided | auto (one-sided gets where the node "
                   "is reached with true one-sided operations; default)")
      ->check(CLI::IsMember({"rpc", "one-two-sided", "auto"}));
  bench_ycsb
      ->add_option("--coalesce", ycsb->coalesce,
                   "--structure kv: on | off, request coalescing (default on)")
      ->check(CLI::IsMember({"on", "off"}));
  bench_ycsb
      ->add_option("--kv-in-flight", ycsb->kv_in_flight,
                   "--structure kv: coalesced messages in flight per node (default 8)")
      ->check(CLI::Range(1u, 256u));
  bench_ycsb
      ->add_option("--local-idle-spin-us", ycsb->bench.cluster.local_idle_spin_us,
                   "idle_spin_us of the local memory node started for the run (default: the "
                   "node's own; 0 sleeps at once when idle, which keeps a busy, shared machine's "
                   "scheduler from starving the node)")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}));
  bench_ycsb
      ->add_option("--kv-batch", ycsb->kv_batch,
                   "--structure kv: operations per coalesced message at most (default 64)")
      ->check(CLI::Range(1u, 256u));
  bench_ycsb
      ->add_option("--kv-cache-log2", ycsb->kv_cache_log2,
                   "--structure kv: location cache entries per thread = 2^N (default 20)")
      ->check(CLI::Range(0, 28));
  bench_ycsb
      ->add_option("--pool-capacity", ycsb->pool_capacity_bytes,
                   "--structure kv: the pool's capacity (default: from records and sizes)")
      ->transform(bytes_unit());
  bench_ycsb->add_option("--keep-table", ycsb->keep_table,
                         "create a persistent table with this name and keep it (default: a "
                         "temporary table, destroyed at the end or when the run dies)");
  return bench_ycsb;
}

}  // namespace farmem::apps

int main(int argc, char** argv) {
  farmem::log::init_from_env();
  signal(SIGPIPE, SIG_IGN);
  CLI::App app{"farmem: far memory over UCX"};
  app.require_subcommand(1);

  CLI::App* bench = app.add_subcommand("bench", "benchmarks");
  bench->require_subcommand(1);
  farmem::apps::Command ops_cmd = farmem::apps::bench_ops_command();
  CLI::App* bench_ops = bench->add_subcommand(ops_cmd.name, ops_cmd.help);
  ops_cmd.add_flags(bench_ops);
  farmem::apps::BenchYcsbFlags ycsb;
  CLI::App* bench_ycsb = farmem::apps::add_bench_ycsb(bench, &ycsb);
  farmem::apps::BenchAdoFlags ado;
  CLI::App* bench_ado = farmem::apps::add_bench_ado(bench, &ado);

  farmem::apps::BenchFarFlags far_flags;
  CLI::App* bench_far = farmem::apps::add_bench_far(bench, &far_flags);

  farmem::apps::BenchAgentFlags agent_flags;
  CLI::App* bench_agent = farmem::apps::add_bench_agent(bench, &agent_flags);
  farmem::apps::AgentStatsFlags agent_stats_flags;
  CLI::App* agent_stats = farmem::apps::add_agent_stats(&app, &agent_stats_flags);
  farmem::apps::BenchPagedFlags paged_flags;
  CLI::App* bench_paged = farmem::apps::add_bench_paged(bench, &paged_flags);
  farmem::apps::BenchTxnFlags txn_flags;
  CLI::App* bench_txn = farmem::apps::add_bench_txn(bench, &txn_flags);

  farmem::apps::ClusterFlags status_flags;
  CLI::App* status = app.add_subcommand("status", "show every memory node's usage");
  farmem::apps::add_cluster_flags(status, &status_flags);

  farmem::apps::KvFlags kv;
  CLI::App* kv_cmd = farmem::apps::add_kv_commands(&app, &kv);

  farmem::apps::GraphFlags graph_flags;
  const farmem::apps::GraphCommands graph_cmds =
      farmem::apps::add_graph_commands(&app, &graph_flags);

  farmem::apps::TxnFlags txn_cmd_flags;
  CLI::App* txn_cmd = farmem::apps::add_txn_commands(&app, &txn_cmd_flags);

  CLI11_PARSE(app, argc, argv);
  if (txn_cmd->parsed()) return farmem::apps::run_txn(txn_cmd_flags);
  if (graph_cmds.run->parsed() || graph_cmds.generate->parsed() || graph_cmds.convert->parsed()) {
    return farmem::apps::run_graph(graph_cmds, graph_flags);
  }
  if (kv_cmd->parsed()) return farmem::apps::run_kv(kv);
  if (bench_ops->parsed()) return ops_cmd.run();
  if (status->parsed()) return farmem::apps::run_status(status_flags);
  if (bench_ado->parsed()) return farmem::apps::run_bench_ado_filter(ado);
  if (bench_far->parsed()) return farmem::apps::run_bench_far(far_flags);
  if (bench_agent->parsed()) return farmem::apps::run_bench_agent(agent_flags);
  if (agent_stats->parsed()) return farmem::apps::run_agent_stats(agent_stats_flags);
  if (bench_paged->parsed()) return farmem::apps::run_bench_paged(paged_flags);
  if (bench_txn->parsed()) return farmem::apps::run_bench_txn(txn_flags);
  if (bench_ycsb->parsed()) {
    for (char& ch : ycsb.workload) ch = static_cast<char>(std::tolower(ch));
    return farmem::apps::run_bench_ycsb(ycsb);
  }
  return 2;
}
