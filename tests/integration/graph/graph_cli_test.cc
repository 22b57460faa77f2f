// `farmem graph`: generate, convert and run through the real command (its embedded memory node
// for --backend far): outputs agree across backends, the JSON record has the fields,
// bad input gets a clear error and exit status 1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "harness.h"

namespace farmem::testing {
namespace {

class GraphCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("farmem-graph-cli-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  int farmem(const std::string& args, std::string* out) {
    out->clear();
    return run_command(std::string(FARMEM_CLI_BIN) + " graph " + args, out);
  }
  static std::string slurp(const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  std::filesystem::path dir_;
};

TEST_F(GraphCliTest, GenerateThenRunEveryAlgorithmOnEveryBackendAgrees) {
  std::string out;
  ASSERT_EQ(farmem("generate --kron 9 --degree 8 --seed 3 --out " + path("g.fmg"), &out), 0) << out;
  EXPECT_NE(out.find("symmetric=true"), std::string::npos) << out;
  for (const char* algorithm : {"bfs", "pr", "cc", "radii", "bc"}) {
    std::string reference;
    for (const char* backend : {"local", "mmap", "far"}) {
      const std::string values = path(std::string(algorithm) + "-" + backend + ".txt");
      std::string args = std::string("run ") + algorithm + " --graph " + path("g.fmg") +
                         " --trials 2 --backend " + backend + " --output " + values + " --out " +
                         path("runs.json") + " --mmap-dir " + dir_.string();
      if (std::string(backend) == "far") args += " --local-memory 25% --page-bytes 4KiB";
      ASSERT_EQ(farmem(args, &out), 0) << args << "\n" << out;
      // --far-huge-pages auto says which pages the graph got (and how to get huge ones).
      if (std::string(backend) == "far") {
        EXPECT_NE(out.find("graph: far: the graph's region on"), std::string::npos) << out;
      }
      EXPECT_NE(out.find("trial 2/2"), std::string::npos) << out;
      const std::string got = slurp(values);
      EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 512) << algorithm << " " << backend;
      if (reference.empty()) {
        reference = got;
      } else {
        EXPECT_EQ(got, reference) << algorithm << " on " << backend << " differs from local";
      }
    }
  }
  std::ifstream runs(path("runs.json"));
  std::string line;
  int records = 0;
  while (std::getline(runs, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* key :
         {"algorithm", "backend", "vertices", "edges", "trial_seconds", "median_seconds",
          "local_memory_bytes", "footprint_bytes", "bytes_fetched", "bytes_written_back", "faults",
          "agent_cache_hit_rate", "traffic"}) {
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << line;
    }
    EXPECT_EQ(j["vertices"], 512);
    EXPECT_EQ(j["trial_seconds"].size(), 2u);
    if (j["backend"] == "far") {
      EXPECT_GT(j["faults"].get<uint64_t>(), 0u) << line;
      EXPECT_GT(j["local_memory_bytes"].get<uint64_t>(), 0u) << line;
    }
    ++records;
  }
  EXPECT_EQ(records, 15);
}

// Reads "id value" lines into a map.
std::map<uint64_t, std::string> values_by_id(const std::string& text) {
  std::map<uint64_t, std::string> out;
  std::istringstream in(text);
  uint64_t id;
  std::string value;
  while (in >> id >> value) out[id] = value;
  return out;
}

TEST_F(GraphCliTest, DegreeOrderRelabelsAndTheMapLeadsBackToTheSameDepths) {
  std::string out;
  ASSERT_EQ(farmem("generate --kron 9 --degree 8 --seed 5 --out " + path("in.fmg"), &out), 0)
      << out;
  ASSERT_EQ(farmem("generate --kron 9 --degree 8 --seed 5 --order degree --order-map " +
                       path("map.txt") + " --out " + path("deg.fmg"),
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("relabelled by descending degree"), std::string::npos) << out;
  const auto new_to_old = values_by_id(slurp(path("map.txt")));
  ASSERT_EQ(new_to_old.size(), 512u);
  // Default source: the max-degree vertex, which the degree order makes vertex 0.
  for (const char* g : {"in", "deg"}) {
    const std::string args = std::string("run bfs --trials 1 --graph ") + path(g) + ".fmg" +
                             " --backend far --local-memory 25% --page-bytes 4KiB --output " +
                             path(std::string(g) + ".txt");
    ASSERT_EQ(farmem(args, &out), 0) << args << "\n" << out;
    if (std::string(g) == "deg") {
      EXPECT_NE(out.find("source 0"), std::string::npos) << out;
    }
  }
  const auto by_old = values_by_id(slurp(path("in.txt")));
  const auto by_new = values_by_id(slurp(path("deg.txt")));
  ASSERT_EQ(by_old.size(), 512u);
  ASSERT_EQ(by_new.size(), 512u);
  for (const auto& [id, depth] : by_new) {
    const uint64_t old = std::stoull(new_to_old.at(id));
    EXPECT_EQ(depth, by_old.at(old)) << "new vertex " << id << " = old vertex " << old;
  }
  EXPECT_NE(farmem("generate --kron 9 --order hubs --out " + path("x.fmg"), &out), 0);
}

TEST_F(GraphCliTest, ConvertReadsEdgeListsAndRefusesMalformedInput) {
  std::ofstream(path("a.el")) << "0 1\n1 2\n2 0\n";
  std::string out;
  ASSERT_EQ(
      farmem("convert --input " + path("a.el") + " --symmetrize --out " + path("a.fmg"), &out), 0)
      << out;
  EXPECT_NE(out.find("vertices=3 edges=6 symmetric=true"), std::string::npos) << out;
  ASSERT_EQ(farmem("run cc --graph " + path("a.fmg") + " --output " + path("cc.txt"), &out), 0)
      << out;
  EXPECT_EQ(slurp(path("cc.txt")), "0 0\n1 0\n2 0\n");
  std::ofstream(path("bad.mtx")) << "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n"
                                    "1 5\n";
  EXPECT_EQ(farmem("convert --input " + path("bad.mtx") + " --out " + path("b.fmg"), &out), 1);
  EXPECT_NE(out.find("bad.mtx:3:"), std::string::npos) << out;
  std::ofstream(path("junk.fmg")) << "not a graph";
  EXPECT_EQ(farmem("run bfs --graph " + path("junk.fmg"), &out), 1);
  EXPECT_NE(out.find("header"), std::string::npos) << out;
  EXPECT_EQ(farmem("run bfs --graph " + path("a.fmg") + " --source 7", &out), 1);
  EXPECT_NE(out.find("source 7 is not a vertex"), std::string::npos) << out;
  EXPECT_EQ(farmem("run pr --graph " + path("a.fmg") + " --backend far --agent 127.0.0.1:1", &out),
            1);
  EXPECT_NE(out.find("--agent needs the memory nodes"), std::string::npos) << out;
  EXPECT_NE(farmem("generate --out " + path("x.fmg"), &out), 0);
  EXPECT_NE(out.find("exactly one of"), std::string::npos) << out;
}

// A symmetric edge list (both directions present, as GAPBS's .el of an undirected graph) with a
// self loop and a repeated edge: convert drops both and says so, and --symmetrize adds nothing.
TEST_F(GraphCliTest, ConvertDropsDuplicatesAndSelfLoopsAndSymmetrizingAddsNone) {
  std::ofstream(path("s.el")) << "0 1\n1 0\n1 2\n2 1\n2 2\n0 1\n";
  std::string out;
  ASSERT_EQ(farmem("convert --input " + path("s.el") + " --out " + path("s.fmg"), &out), 0) << out;
  EXPECT_NE(out.find("self_loops_dropped=1 duplicates_dropped=1"), std::string::npos) << out;
  EXPECT_NE(out.find("vertices=3 edges=4 symmetric=true"), std::string::npos) << out;
  ASSERT_EQ(
      farmem("convert --input " + path("s.el") + " --symmetrize --out " + path("t.fmg"), &out), 0)
      << out;
  EXPECT_NE(out.find("vertices=3 edges=4 symmetric=true"), std::string::npos) << out;
  // Kept on request; symmetrizing then mirrors only the edges that lack a reverse.
  ASSERT_EQ(
      farmem("convert --input " + path("s.el") + " --keep-duplicates --out " + path("k.fmg"), &out),
      0)
      << out;
  EXPECT_NE(out.find("vertices=3 edges=6 symmetric=true"), std::string::npos) << out;
  std::ofstream(path("d.el")) << "0 1\n1 2\n2 1\n";
  ASSERT_EQ(farmem("convert --input " + path("d.el") + " --keep-duplicates --symmetrize --out " +
                       path("m.fmg"),
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("reverse_added=1"), std::string::npos) << out;
  EXPECT_NE(out.find("vertices=3 edges=4 symmetric=true"), std::string::npos) << out;
}

// A GAPBS .sg (undirected: directed byte, arc count, vertex count, i64 offsets, i32 ids) is
// read by run and convert; a truncated one is refused naming the layout.
TEST_F(GraphCliTest, RunAndConvertReadGapbsSerializedGraphs) {
  {
    std::ofstream sg(path("p.sg"), std::ios::binary);
    const bool directed = false;
    const int64_t arcs = 4, vertices = 3;
    const int64_t offsets[] = {0, 1, 3, 4};
    const int32_t ids[] = {1, 0, 2, 1};
    sg.write(reinterpret_cast<const char*>(&directed), 1);
    sg.write(reinterpret_cast<const char*>(&arcs), 8);
    sg.write(reinterpret_cast<const char*>(&vertices), 8);
    sg.write(reinterpret_cast<const char*>(offsets), sizeof(offsets));
    sg.write(reinterpret_cast<const char*>(ids), sizeof(ids));
  }
  std::string out;
  ASSERT_EQ(farmem("run bfs --graph " + path("p.sg") + " --source 0 --mmap-dir " + dir_.string() +
                       " --output " + path("bfs.txt"),
                   &out),
            0)
      << out;
  EXPECT_EQ(slurp(path("bfs.txt")), "0 0\n1 1\n2 2\n");
  ASSERT_EQ(farmem("convert --input " + path("p.sg") + " --out " + path("p.fmg"), &out), 0) << out;
  EXPECT_NE(out.find("vertices=3 edges=4 symmetric=true"), std::string::npos) << out;
  std::filesystem::resize_file(path("p.sg"), 40);
  EXPECT_EQ(farmem("run bfs --graph " + path("p.sg") + " --mmap-dir " + dir_.string(), &out), 1);
  EXPECT_NE(out.find("GAPBS layout"), std::string::npos) << out;
  // The temporary .fmg of the good run is gone.
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().rfind("farmem-", 0), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace farmem::testing
