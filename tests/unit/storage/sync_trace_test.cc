// Unit tests for the sync trace: what the writer appends comes back in order, a torn last entry
// (the writer killed inside it) is left out, junk is an error, and applying the entries in order
// rebuilds what sync_only_disk() wrote to its real files at each sync.
#include "farmem/storage/sync_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "farmem/storage/sync_only_disk.h"

namespace farmem::storage {
namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/farmem-sync-trace-XXXXXX";
  EXPECT_NE(mkdtemp(tmpl), nullptr);
  return tmpl;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(SyncTrace, EntriesComeBackInOrderAndATornTailIsLeftOut) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/trace";
  {
    auto w = SyncTraceWriter::open(path);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    ASSERT_TRUE((*w)->append("log.0", 0, 5, {{0, "hello"}}).ok());
    ASSERT_TRUE((*w)->append("CHECKPOINT", 3, 10, {{1, "ab"}, {8, "cd"}}).ok());
  }
  const uint64_t whole = std::filesystem::file_size(path);
  auto entries = read_sync_trace(path);
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].file, "log.0");
  EXPECT_EQ((*entries)[0].ranges.at(0).bytes, "hello");
  EXPECT_EQ((*entries)[1].file, "CHECKPOINT");
  EXPECT_EQ((*entries)[1].cut_bytes, 3u);
  EXPECT_EQ((*entries)[1].size_bytes, 10u);
  ASSERT_EQ((*entries)[1].ranges.size(), 2u);
  EXPECT_EQ((*entries)[1].ranges[1].offset, 8u);
  EXPECT_LE((*entries)[0].steady_ns, (*entries)[1].steady_ns);

  for (uint64_t cut : {whole - 1, whole - 3, whole - 20}) {
    std::filesystem::resize_file(path, cut);
    auto torn = read_sync_trace(path);
    ASSERT_TRUE(torn.ok()) << torn.status().to_string();
    EXPECT_EQ(torn->size(), 1u) << "cut at " << cut;
  }
  std::filesystem::resize_file(path, 40 + 5 + 16 + 5);  // the first entry, whole
  std::ofstream(path, std::ios::app) << std::string(64, 'x');
  auto junk = read_sync_trace(path);
  EXPECT_EQ(junk.status().code(), StatusCode::kInternal);
  std::filesystem::remove_all(dir);
}

TEST(SyncTrace, ApplyingEntriesInOrderRebuildsWhatTheDiskSynced) {
  const std::string dir = temp_dir();
  const std::string real = dir + "/real", rebuilt = dir + "/rebuilt";
  std::filesystem::create_directories(real);
  std::filesystem::create_directories(rebuilt);
  ASSERT_TRUE(start_sync_trace(dir + "/trace").ok());
  EXPECT_EQ(start_sync_trace(dir + "/again").code(), StatusCode::kInvalidArgument);
  std::vector<std::string> after_sync;  // the real file after each sync
  {
    auto f = sync_only_disk().open(real + "/log.0");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->write_at(0, "0123456789").ok());
    ASSERT_TRUE((*f)->sync().ok());
    after_sync.push_back(slurp(real + "/log.0"));
    ASSERT_TRUE((*f)->truncate(4).ok());
    ASSERT_TRUE((*f)->write_at(6, "ab").ok());  // past the end: a hole of zeros
    ASSERT_TRUE((*f)->sync().ok());
    after_sync.push_back(slurp(real + "/log.0"));
    ASSERT_TRUE((*f)->write_at(2, "XY").ok());
    ASSERT_TRUE((*f)->truncate(3).ok());
    ASSERT_TRUE((*f)->sync().ok());
    after_sync.push_back(slurp(real + "/log.0"));
    ASSERT_TRUE((*f)->write_at(0, "unsynced").ok());  // never in the trace
  }
  auto entries = read_sync_trace(dir + "/trace");
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), after_sync.size());
  EXPECT_EQ(after_sync[1], std::string("0123\0\0ab", 8));
  for (size_t i = 0; i < entries->size(); ++i) {
    ASSERT_TRUE(apply_sync_trace_entry(rebuilt, (*entries)[i]).ok());
    EXPECT_EQ(slurp(rebuilt + "/log.0"), after_sync[i]) << "after sync " << i;
  }
  SyncTraceEntry bad;
  bad.file = "../escape";
  EXPECT_EQ(apply_sync_trace_entry(rebuilt, bad).code(), StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace farmem::storage
