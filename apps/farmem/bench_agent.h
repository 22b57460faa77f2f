// `farmem bench agent`: page reads straight from the memory nodes against the same reads
// through farmem-agent (no cache, static cache), with the traffic of each path; and
// `farmem agent-stats`: an agent's counters (bench_agent.cc).
#pragma once

#include <cstdint>
#include <string>

#include "commands.h"

namespace CLI {
class App;
}

namespace farmem::apps {

struct BenchAgentFlags {
  BenchFlags bench = bench_flags_lasting(0);
  std::string agent;                   // host:port of farmem-agent
  uint64_t range_bytes = 64ull << 20;  // the remote range read
  uint64_t page_bytes = 64ull << 10;
  uint64_t ops = 4096;             // page reads per phase
  uint32_t depth = 16;             // reads in flight
  std::string pattern = "random";  // random | seq
  bool pin = false;                // also a phase with the range pinned in the agent's static cache
};
CLI::App* add_bench_agent(CLI::App* bench, BenchAgentFlags* flags);
int run_bench_agent(const BenchAgentFlags& flags);

struct AgentStatsFlags {
  std::string agent;
  std::string tls;
  bool json = false;
};
CLI::App* add_agent_stats(CLI::App* app, AgentStatsFlags* flags);
int run_agent_stats(const AgentStatsFlags& flags);

}  // namespace farmem::apps
