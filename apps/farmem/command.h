// The commands of the `farmem` tool: a table main.cc iterates. Each entry names the command
// (and the group it hangs under: "bench", "graph", or "" for the top level), registers its
// flags into typed options, and runs a library function on them once parsed.
//
// A command file holds only flag registration and a call (make_command ties the two to one
// options object); what the command does lives in the libraries (src/bench, or the module
// the operator command drives).
// Thread safety: built and run on the main thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace farmem::apps {

struct Command {
  std::string group;  // "" (top level), "bench" or "graph"
  std::string name;
  std::string help;
  std::function<void(CLI::App*)> add_flags;  // registers the flags on the command's CLI::App
  std::function<int()> run;                  // after parsing: the exit code
};

// A command over one Options object, filled by add_flags and read by run.
template <typename Options>
Command make_command(std::string group, std::string name, std::string help,
                     void (*add_flags)(CLI::App*, Options*), int (*run)(const Options&)) {
  auto options = std::make_shared<Options>();
  return Command{std::move(group), std::move(name), std::move(help),
                 [options, add_flags](CLI::App* app) { add_flags(app, options.get()); },
                 [options, run] { return run(*options); }};
}

// The commands' groups (a group appears in the help where its first command does).
struct CommandGroup {
  const char* name;
  const char* help;
};
std::vector<CommandGroup> command_groups();

// Every command, in the order of the help text (main.cc).
std::vector<Command> commands();

// The command files' entries.
Command bench_ops_command();
Command bench_ycsb_command();
Command bench_ado_command();
Command bench_far_command();
Command bench_agent_command();
Command agent_stats_command();
Command bench_paged_command();
Command bench_txn_command();
Command status_command();
std::vector<Command> kv_commands();  // kv pools, create-pool, ...
Command graph_generate_command();
Command graph_convert_command();
Command graph_run_command();
std::vector<Command> txn_commands();  // txn promote, create, locks

}  // namespace farmem::apps
