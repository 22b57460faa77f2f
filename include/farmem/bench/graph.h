// `farmem graph generate|convert|run`: graph analytics (Ligra-style, farmem/graph) on a
// GraphMemory backend: local DRAM, a memory-mapped file, or paged far memory.
//
//   generate  a Kronecker or uniform graph (symmetrized unless directed; self loops and
//             duplicate edges dropped), written as .fmg
//   convert   an edge list (.el, .wel), a .mtx or a GAPBS .sg/.wsg; self loops and duplicate
//             edges dropped and counted (keep_duplicates: kept); symmetrize adds the reverse
//             edges without ever creating a duplicate; a symmetric .mtx is mirrored either way
//   run       an algorithm over `trials` timed runs: the median, faults and bytes moved, and a
//             record appended to json_out; far memory failing under a run ends it with
//             paged::kFaultExitStatus (86) and one "fatal" line, never wrong output or a hang;
//             a GAPBS .sg/.wsg is first converted to a temporary .fmg in mmap_dir (removed
//             at exit)
//
// VertexOrder::kDegree relabels the vertices by descending degree before writing
// (graph::reorder_by_degree); order_map then gets "new old" per vertex.
// Thread safety: each run_* on the calling thread (the algorithms start their thread pool).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "farmem/bench/harness/names.h"
#include "farmem/bench/harness/options.h"
#include "farmem/graph/algorithms.h"
#include "farmem/graph/far_graph.h"

namespace farmem::bench {

enum class VertexOrder { kInput, kDegree };
inline constexpr EnumNames<VertexOrder, 2> kVertexOrderNames{
    {{"input", VertexOrder::kInput}, {"degree", VertexOrder::kDegree}}};

// Where a built graph goes.
struct GraphOutputOptions {
  uint32_t threads = 2;
  std::string out;  // G.fmg
  VertexOrder order = VertexOrder::kInput;
  std::string order_map;  // kDegree: FILE of "new old" vertex id lines ("" = none)
};

struct GraphGenerateOptions {
  GraphOutputOptions output;
  uint32_t kron_scale = 0;  // exactly one of kron_scale and uniform_scale
  uint32_t uniform_scale = 0;
  uint32_t degree = 16;
  uint64_t seed = 1;
  bool directed = false;  // do not symmetrize
};

struct GraphConvertOptions {
  GraphOutputOptions output;
  std::string input;
  bool symmetrize = false;
  bool keep_duplicates = false;  // keep self loops and duplicate edges
};

enum class GraphAlgorithm { kBfs, kPr, kCc, kRadii, kBc };
inline constexpr EnumNames<GraphAlgorithm, 5> kGraphAlgorithmNames{
    {{"bfs", GraphAlgorithm::kBfs},
     {"pr", GraphAlgorithm::kPr},
     {"cc", GraphAlgorithm::kCc},
     {"radii", GraphAlgorithm::kRadii},
     {"bc", GraphAlgorithm::kBc}}};

enum class GraphBackend { kLocal, kMmap, kFar };
inline constexpr EnumNames<GraphBackend, 3> kGraphBackendNames{
    {{"local", GraphBackend::kLocal}, {"mmap", GraphBackend::kMmap}, {"far", GraphBackend::kFar}}};

// What the agent caches (far backend through an agent): nothing, the vertex arrays pinned whole
// in its static cache, or the graph's pages in its dynamic cache.
enum class AgentCache { kOff, kStatic, kDynamic };
inline constexpr EnumNames<AgentCache, 3> kAgentCacheNames{{{"off", AgentCache::kOff},
                                                            {"static", AgentCache::kStatic},
                                                            {"dynamic", AgentCache::kDynamic}}};

// The mmap backend's advice (graph::MmapOptions).
enum class MmapGraphAdvice { kDefault, kRandom };
inline constexpr EnumNames<MmapGraphAdvice, 2> kMmapGraphAdviceNames{
    {{"default", MmapGraphAdvice::kDefault}, {"random", MmapGraphAdvice::kRandom}}};

// The far backend's advice for the graph's sections.
inline constexpr EnumNames<paged::Advice, 2> kFarGraphAdviceNames{
    {{"random", paged::Advice::kRandom}, {"sequential", paged::Advice::kSequential}}};

inline constexpr EnumNames<graph::FarPin, 3> kFarPinNames{
    {{"on", graph::FarPin::kOn}, {"random", graph::FarPin::kRandom}, {"off", graph::FarPin::kOff}}};

inline constexpr EnumNames<graph::PageRankConvention, 2> kPageRankConventionNames{
    {{"networkx", graph::PageRankConvention::kNetworkx},
     {"gapbs", graph::PageRankConvention::kGapbs}}};

inline constexpr EnumNames<graph::BcNormalization, 3> kBcNormalizationNames{
    {{"none", graph::BcNormalization::kNone},
     {"max", graph::BcNormalization::kMax},
     {"networkx", graph::BcNormalization::kNetworkx}}};

// --far-huge-pages: auto (the graph's region on huge pages when the pool has them free, direct
// mode only; else small pages and one line with the sysctl that would give them), on (refused
// with that line when the pool lacks them), off.
enum class HugePagesMode { kAuto, kOn, kOff };
inline constexpr EnumNames<HugePagesMode, 3> kHugePagesModeNames{
    {{"auto", HugePagesMode::kAuto}, {"on", HugePagesMode::kOn}, {"off", HugePagesMode::kOff}}};

struct GraphRunOptions {
  GraphAlgorithm algorithm = GraphAlgorithm::kBfs;
  std::string graph;              // the .fmg file
  std::vector<uint32_t> sources;  // bfs: one; bc: one or more; none: a vertex of max degree
  uint32_t trials = 3;
  uint32_t threads = 2;
  uint64_t seed = 1;  // radii: the seed of the 64 sampled sources
  GraphBackend backend = GraphBackend::kLocal;
  std::string local_memory;  // BYTES or PCT% of the footprint ("" = unlimited)
  MmapGraphAdvice advice = MmapGraphAdvice::kDefault;  // mmap
  std::string mmap_dir = "/tmp";                       // mmap: the vertex arrays' files
  // far: the paged regions (page sizes, huge pages, sparse view, advice, pinning, install
  // threads; its budget and sources are the run's).
  graph::FarGraphOptions far;
  HugePagesMode far_huge_pages = HugePagesMode::kAuto;  // decides far.huge_pages
  std::string agent = "none";                           // far: ADDR of a farmem-agent
  AgentCache cache = AgentCache::kOff;
  uint32_t pr_iterations = 20;  // pr: the most iterations
  double pr_tolerance = 1e-4;   // pr: stop below this L1 change (0: run every iteration)
  graph::PageRankConvention pr_convention = graph::PageRankConvention::kNetworkx;
  graph::BcNormalization bc_normalize = graph::BcNormalization::kNone;
  std::string output;      // one "vertex value" line per vertex
  std::string json_out;    // FILE.json or FILE.csv, appended
  ClusterOptions cluster;  // far
};

// Each: 0, or the error printed and 1 (run: 86 when far memory fails under a trial).
int run_graph_generate(const GraphGenerateOptions& options);
int run_graph_convert(const GraphConvertOptions& options);
int run_graph(const GraphRunOptions& options);

}  // namespace farmem::bench
