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

#include "bench_harness.h"
#include "command.h"
#include "commands.h"
#include "farmem/common/log.h"
#include "farmem/common/units.h"
#include "farmem/ds/hash/layout.h"
#include "graph_cmd.h"

namespace farmem::apps {}  // namespace farmem::apps

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
  farmem::apps::Command ycsb_cmd = farmem::apps::bench_ycsb_command();
  CLI::App* bench_ycsb = bench->add_subcommand(ycsb_cmd.name, ycsb_cmd.help);
  ycsb_cmd.add_flags(bench_ycsb);
  farmem::apps::Command ado_cmd = farmem::apps::bench_ado_command();
  CLI::App* bench_ado = bench->add_subcommand(ado_cmd.name, ado_cmd.help);
  ado_cmd.add_flags(bench_ado);

  farmem::apps::Command far_cmd = farmem::apps::bench_far_command();
  CLI::App* bench_far = bench->add_subcommand(far_cmd.name, far_cmd.help);
  far_cmd.add_flags(bench_far);

  farmem::apps::Command agent_cmd = farmem::apps::bench_agent_command();
  CLI::App* bench_agent = bench->add_subcommand(agent_cmd.name, agent_cmd.help);
  agent_cmd.add_flags(bench_agent);
  farmem::apps::Command agent_stats_cmd = farmem::apps::agent_stats_command();
  CLI::App* agent_stats = app.add_subcommand(agent_stats_cmd.name, agent_stats_cmd.help);
  agent_stats_cmd.add_flags(agent_stats);
  farmem::apps::Command paged_cmd = farmem::apps::bench_paged_command();
  CLI::App* bench_paged = bench->add_subcommand(paged_cmd.name, paged_cmd.help);
  paged_cmd.add_flags(bench_paged);
  farmem::apps::Command txn_bench_cmd = farmem::apps::bench_txn_command();
  CLI::App* bench_txn = bench->add_subcommand(txn_bench_cmd.name, txn_bench_cmd.help);
  txn_bench_cmd.add_flags(bench_txn);

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
  if (bench_ado->parsed()) return ado_cmd.run();
  if (bench_far->parsed()) return far_cmd.run();
  if (bench_agent->parsed()) return agent_cmd.run();
  if (agent_stats->parsed()) return agent_stats_cmd.run();
  if (bench_paged->parsed()) return paged_cmd.run();
  if (bench_txn->parsed()) return txn_bench_cmd.run();
  if (bench_ycsb->parsed()) return ycsb_cmd.run();
  return 2;
}
