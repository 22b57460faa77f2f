// farmem: the compute-side command-line tool. Every command is an entry of the table below
// (command.h); `farmem <group> <command> --help` lists a command's flags.
//
//   farmem bench ops|ycsb|ado-filter|far|agent|paged|txn ...   benchmarks (farmem/bench/*.h)
//   farmem agent-stats --agent ADDR                            an agent's counters
//   farmem status [--servers h:p,...|--config FILE]            every memory node's usage
//   farmem kv pools|create-pool|...|configure ...              the key-value store (kv_cmd.cc)
//   farmem graph generate|convert|run ...                      graph analytics (graph_cmd.cc)
//   farmem txn create|locks|promote ...                        transactional tables (txn_cmd.cc)
//
// Bench flags (flags.h): [--servers h:p,...|--config FILE] [--threads N] [--duration S]
// [--warmup S] [--seed N] [--out FILE.json|.csv]. Without --servers or --config, a local memory
// node is started for the run and stopped after.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "command.h"
#include "farmem/common/guarded_main.h"
#include "farmem/common/log.h"

namespace farmem::apps {

std::vector<CommandGroup> command_groups() {
  return {{"bench", "benchmarks"},
          {"kv", "the key-value store: pools, keys, finds, ADO calls"},
          {"graph", "graph analytics (Ligra-style) on far memory"},
          {"txn", "transactional tables: operator commands"}};
}

std::vector<Command> commands() {
  std::vector<Command> table = {bench_ops_command(),   bench_ycsb_command(),  bench_ado_command(),
                                bench_far_command(),   bench_agent_command(), agent_stats_command(),
                                bench_paged_command(), bench_txn_command(),   status_command()};
  for (Command& c : kv_commands()) table.push_back(std::move(c));
  table.push_back(graph_generate_command());
  table.push_back(graph_convert_command());
  table.push_back(graph_run_command());
  for (Command& c : txn_commands()) table.push_back(std::move(c));
  return table;
}

}  // namespace farmem::apps

namespace {

int run(int argc, char** argv) {
  farmem::log::init_from_env();
  signal(SIGPIPE, SIG_IGN);
  CLI::App app{"farmem: far memory over UCX"};
  app.require_subcommand(1);
  std::map<std::string, std::string> group_help;
  for (const auto& g : farmem::apps::command_groups()) group_help[g.name] = g.help;
  std::map<std::string, CLI::App*> groups = {{"", &app}};
  const std::vector<farmem::apps::Command> table = farmem::apps::commands();
  std::vector<CLI::App*> parsers;
  for (const farmem::apps::Command& c : table) {
    CLI::App*& parent = groups[c.group];
    if (parent == nullptr) {  // a group appears where its first command does
      parent = app.add_subcommand(c.group, group_help.at(c.group));
      parent->require_subcommand(1);
    }
    parsers.push_back(parent->add_subcommand(c.name, c.help));
    c.add_flags(parsers.back());
  }
  CLI11_PARSE(app, argc, argv);
  for (size_t i = 0; i < table.size(); ++i) {
    if (parsers[i]->parsed()) return table[i].run();
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  return farmem::guarded_main("farmem", [&] { return run(argc, argv); });
}
