// farmem graph generate --kron SCALE | --uniform SCALE [--degree 16] [--seed N] [--directed]
//                       [--threads T] [--order input|degree [--order-map FILE]] --out G.fmg
// farmem graph convert --input FILE.el|.wel|.mtx|.sg|.wsg [--symmetrize] [--keep-duplicates]
//                      [--threads T]
//                      [--order input|degree [--order-map FILE]] --out G.fmg
// farmem graph run bfs|pr|cc|radii|bc --graph G.fmg|G.sg|G.wsg [--source V[,V...]] [--trials N]
//                  [--threads T] [--backend local|mmap|far] [--local-memory BYTES|PCT%]
//                  [--page-bytes 64KiB] [--agent none|ADDR] [--cache off|static|dynamic]
//                  [--advice default|random] [--mmap-dir DIR] [--output FILE] [--out F.json]
//                                                             (farmem/bench/graph.h)
#include "command.h"
#include "farmem/bench/graph.h"
#include "flags.h"

namespace farmem::apps {
namespace {

void add_output_flags(CLI::App* app, bench::GraphOutputOptions* o) {
  app->add_option("--threads", o->threads, "threads (2)")->check(CLI::Range(1u, 256u));
  app->add_option("--out", o->out, "the .fmg file to write")->required();
  add_enum_option(app, "--order", &o->order, bench::kVertexOrderNames,
                  "vertex ids: input (as generated/read) or degree (relabelled by descending "
                  "degree, hubs first)");
  app->add_option("--order-map", o->order_map, "with --order degree: write 'new old' id lines");
}

void add_generate_flags(CLI::App* app, bench::GraphGenerateOptions* o) {
  app->add_option("--kron", o->kron_scale, "Graph500 Kronecker graph of 2^SCALE vertices")
      ->check(CLI::Range(1u, 31u));
  app->add_option("--uniform", o->uniform_scale, "uniform random graph of 2^SCALE vertices")
      ->check(CLI::Range(1u, 31u));
  app->add_option("--degree", o->degree, "edges per vertex before symmetrizing (16)")
      ->check(CLI::Range(1u, 1024u));
  app->add_option("--seed", o->seed, "generator seed (1)");
  app->add_flag("--directed", o->directed, "do not symmetrize");
  add_output_flags(app, &o->output);
}

void add_convert_flags(CLI::App* app, bench::GraphConvertOptions* o) {
  app->add_option("--input", o->input, "FILE.el | FILE.wel | FILE.mtx | GAPBS FILE.sg | FILE.wsg")
      ->required();
  app->add_flag("--symmetrize", o->symmetrize,
                "add (v,u) for every (u,v) that has none (never a duplicate)");
  app->add_flag("--keep-duplicates", o->keep_duplicates,
                "keep self loops and duplicate edges (dropped and counted by default)");
  add_output_flags(app, &o->output);
}

// The far backend's flags (its pages, advice and pinning; the agent).
void add_far_flags(CLI::App* app, bench::GraphRunOptions* o) {
  graph::FarGraphOptions* far = &o->far;
  app->add_option("--page-bytes", far->page_bytes, "far: page size (64KiB)")
      ->transform(bytes_unit());
  app->add_option("--graph-page-bytes", far->graph_page_bytes,
                  "far: page size of the graph file's region (--page-bytes)")
      ->transform(bytes_unit());
  add_enum_option(app, "--far-huge-pages", &o->far_huge_pages, bench::kHugePagesModeNames,
                  "far: the graph file's region on huge pages (vm.nr_hugepages; --graph-page-bytes "
                  "a multiple of the huge page size, 2MiB when unset): auto (when the pool has "
                  "them free, without --agent), on, off (auto)");
  app->add_option("--far-sparse-view", far->sparse_view,
                  "far, graph pages larger than --page-bytes: a second copy of the graph on "
                  "--page-bytes pages for sparse rounds over few vertices (true)")
      ->default_str("true");
  app->add_option("--agent", o->agent, "far: none | ADDR of a farmem-agent");
  add_enum_option(app, "--cache", &o->cache, bench::kAgentCacheNames,
                  "far with an agent: off | static | dynamic");
  add_enum_option(app, "--advice", &o->advice, bench::kMmapGraphAdviceNames,
                  "mmap: default (readahead) | random (MADV_RANDOM)");
  add_enum_option(app, "--far-advice", &far->graph_advice, bench::kFarGraphAdviceNames,
                  "far: random | sequential (read-ahead) for the graph's sections (sequential)");
  add_enum_option(app, "--far-pin", &far->pin, bench::kFarPinNames,
                  "far: on | random | off: keep vertex arrays resident (static advice, at most "
                  "half the budget): random-access ones, then sequential state (on) or "
                  "random-access ones only (random); frontier lists never (on)");
  app->add_option("--far-install-threads", far->install_threads,
                  "far: threads that map fetched pages beside the pager thread (0: the pager "
                  "thread maps them) (2)")
      ->check(CLI::Range(0u, 16u));
}

void add_run_flags(CLI::App* app, bench::GraphRunOptions* o) {
  add_enum_option(app, "algorithm", &o->algorithm, bench::kGraphAlgorithmNames,
                  "bfs | pr | cc | radii | bc")
      ->required();
  app->add_option("--graph", o->graph, "the .fmg file (or a GAPBS .sg/.wsg)")->required();
  app->add_option("--source", o->sources,
                  "source vertex (bfs; bc: one or more, comma-separated); default: the "
                  "smallest-id vertex of the greatest degree")
      ->delimiter(',');
  app->add_option("--trials", o->trials, "timed runs (3)")->check(CLI::Range(1u, 1000u));
  app->add_option("--threads", o->threads, "threads (2)")->check(CLI::Range(1u, 256u));
  app->add_option("--seed", o->seed, "radii: the seed of the 64 sampled sources (1)");
  add_enum_option(app, "--backend", &o->backend, bench::kGraphBackendNames,
                  "local | mmap | far (local)");
  app->add_option("--local-memory", o->local_memory,
                  "mmap/far: local budget, BYTES or PCT% of the footprint (graph + vertex "
                  "arrays); mmap runs inside a memory cgroup of that size");
  add_far_flags(app, o);
  app->add_option("--mmap-dir", o->mmap_dir,
                  "mmap: directory of the vertex arrays' files (a disk file system) (/tmp)");
  app->add_option("--iterations", o->pr_iterations, "pr: iterations at most (20)")
      ->check(CLI::Range(1u, 100000u));
  app->add_option("--tolerance", o->pr_tolerance,
                  "pr: stop after an iteration whose L1 change is below this (1e-4, as GAPBS; "
                  "0: run every iteration)")
      ->check(CLI::NonNegativeNumber);
  add_enum_option(app, "--convention", &o->pr_convention, bench::kPageRankConventionNames,
                  "pr: networkx (dangling rank spread, ranks sum to 1) | gapbs (dropped)");
  add_enum_option(app, "--bc-normalize", &o->bc_normalize, bench::kBcNormalizationNames,
                  "bc: none (raw sums) | max (divided by the greatest, GAPBS) | networkx "
                  "(normalized=True, k = the sources)");
  app->add_option("--output", o->output, "write 'vertex value' per line to FILE");
  app->add_option("--out", o->json_out, "append a JSON (or CSV) record to FILE");
  add_cluster_flags(app, &o->cluster);
}

}  // namespace

Command graph_generate_command() {
  return make_command<bench::GraphGenerateOptions>("graph", "generate",
                                                   "generate a Kronecker or uniform graph (.fmg)",
                                                   add_generate_flags, bench::run_graph_generate);
}

Command graph_convert_command() {
  return make_command<bench::GraphConvertOptions>(
      "graph", "convert", "convert an edge list (.el, .wel), .mtx or GAPBS .sg/.wsg to .fmg",
      add_convert_flags, bench::run_graph_convert);
}

Command graph_run_command() {
  return make_command<bench::GraphRunOptions>("graph", "run", "run an algorithm on a .fmg graph",
                                              add_run_flags, bench::run_graph);
}

}  // namespace farmem::apps
