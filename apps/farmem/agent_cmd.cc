// farmem bench agent --agent ADDR [--range N] [--page N] [--ops N] [--depth N]
//                    [--pattern random|seq] [--pin] <bench flags>
// farmem agent-stats --agent ADDR [--tls T] [--json]           (farmem/bench/agent.h)
#include "command.h"
#include "farmem/bench/agent.h"
#include "flags.h"

namespace farmem::apps {
namespace {

void add_bench_agent_flags(CLI::App* app, bench::AgentBenchOptions* o) {
  add_bench_flags(app, &o->bench, "unused");
  app->add_option("--agent", o->agent, "farmem-agent's host:port")->required();
  app->add_option("--range", o->range_bytes, "remote bytes read")->transform(bytes_unit());
  app->add_option("--page", o->page_bytes, "bytes per read (<= 64KiB)")->transform(bytes_unit());
  app->add_option("--ops", o->ops, "reads per phase")->check(CLI::Range(1, 1 << 24));
  app->add_option("--depth", o->depth, "reads in flight")->check(CLI::Range(1, 64));
  add_enum_option(app, "--pattern", &o->pattern, bench::kAgentReadPatternNames, "random | seq");
  app->add_flag("--pin", o->pin, "add a phase with the range pinned in the agent");
}

void add_agent_stats_flags(CLI::App* app, bench::AgentStatsOptions* o) {
  app->add_option("--agent", o->agent, "farmem-agent's host:port")->required();
  app->add_option("--tls", o->tls, "UCX transports");
  app->add_flag("--json", o->json, "print one JSON object");
}

}  // namespace

Command bench_agent_command() {
  return make_command<bench::AgentBenchOptions>("bench", "agent",
                                                "page reads direct vs through farmem-agent",
                                                add_bench_agent_flags, bench::run_agent_bench);
}

Command agent_stats_command() {
  return make_command<bench::AgentStatsOptions>("", "agent-stats", "show a farmem-agent's counters",
                                                add_agent_stats_flags, bench::run_agent_stats);
}

}  // namespace farmem::apps
