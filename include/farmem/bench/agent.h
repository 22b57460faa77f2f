// `farmem bench agent`: page reads straight from the memory nodes against the same reads through
// farmem-agent (no cache; with `pin`, also with the range pinned in the agent's static cache),
// with the traffic of each path; and `farmem agent-stats`: an agent's counters.
//
// The benchmark fills a range of range_bytes on the first memory node, then reads `ops` pages of
// page_bytes (random or sequential) with `depth` reads in flight, one phase per path. Prints a
// line per phase; --out gets a record per phase.
// Thread safety: run_agent_bench and run_agent_stats run on the calling thread.
#pragma once

#include <cstdint>
#include <string>

#include "farmem/bench/harness/names.h"
#include "farmem/bench/harness/options.h"

namespace farmem::bench {

enum class AgentReadPattern { kRandom, kSeq };
inline constexpr EnumNames<AgentReadPattern, 2> kAgentReadPatternNames{
    {{"random", AgentReadPattern::kRandom}, {"seq", AgentReadPattern::kSeq}}};

struct AgentBenchOptions {
  BenchOptions bench = bench_options_lasting(0);
  std::string agent;                   // host:port of farmem-agent
  uint64_t range_bytes = 64ull << 20;  // the remote range read
  uint64_t page_bytes = 64ull << 10;
  uint64_t ops = 4096;  // page reads per phase
  uint32_t depth = 16;  // reads in flight
  AgentReadPattern pattern = AgentReadPattern::kRandom;
  bool pin = false;  // also a phase with the range pinned in the agent's static cache
};

// Runs the benchmark; 0, or 1 with the error printed.
int run_agent_bench(const AgentBenchOptions& options);

struct AgentStatsOptions {
  std::string agent;  // host:port of farmem-agent
  std::string tls;    // UCX transports ("" = the default)
  bool json = false;  // one JSON object instead of a line per counter
};

// Prints the agent's counters; 0, or 1 with the error printed.
int run_agent_stats(const AgentStatsOptions& options);

}  // namespace farmem::bench
