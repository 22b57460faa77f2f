// `farmem graph generate|convert|run` (graph_cmd.cc): graph analytics on far memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commands.h"

namespace farmem::apps {

struct GraphFlags {
  // generate
  uint32_t kron_scale = 0;
  uint32_t uniform_scale = 0;
  uint32_t degree = 16;
  uint64_t seed = 1;
  bool directed = false;  // generate: do not symmetrize
  // convert
  std::string input;
  bool symmetrize = false;
  // generate / convert
  std::string out;              // G.fmg
  std::string order = "input";  // input | degree (reorder_by_degree)
  std::string order_map;        // degree: FILE of "new old" vertex id lines ("" = none)
  // run
  std::string algorithm;  // bfs | pr | cc | radii | bc
  std::string graph;
  std::vector<uint32_t> sources;
  uint32_t trials = 3;
  uint32_t threads = 2;
  std::string backend = "local";  // local | mmap | far
  std::string local_memory;       // BYTES or PCT% ("" = unlimited)
  uint64_t page_bytes = 64 * 1024;
  uint64_t graph_page_bytes = 0;  // far: page size of the graph file's region (0 = page_bytes)
  bool far_huge_pages = false;    // far: the graph file's region on huge pages
  bool far_sparse_view = true;    // far: a small-page copy for sparse rounds (large graph pages)
  std::string agent = "none";
  std::string cache = "off";
  std::string advice = "default";     // mmap: default | random
  std::string far_advice = "random";  // far: random | sequential (graph sections)
  uint32_t far_install_threads = 2;   // far: paged::PageManagerOptions::install_threads
  std::string far_pin = "on";         // far: on | random | off: pin vertex arrays (static advice)
  std::string mmap_dir = "/tmp";
  uint32_t pr_iterations = 20;
  double pr_epsilon = 0;
  std::string output;    // one line per vertex
  std::string json_out;  // --out FILE.json
  ClusterFlags cluster;  // far
};

struct GraphCommands {
  CLI::App* generate = nullptr;
  CLI::App* convert = nullptr;
  CLI::App* run = nullptr;
};

GraphCommands add_graph_commands(CLI::App* app, GraphFlags* flags);
int run_graph(const GraphCommands& commands, const GraphFlags& flags);

}  // namespace farmem::apps
