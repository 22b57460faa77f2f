// Unit tests for storage::sync_only_disk(): reads see every write at once, the real file only
// what sync() wrote out, so dropping a file unsynced (a kill -9 of its process) loses exactly
// the writes and truncations since the last sync.
#include "farmem/storage/sync_only_disk.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace farmem::storage {
namespace {

namespace fs = std::filesystem;

class SyncOnlyDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("farmem-synconly-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    path_ = (root_ / "log").string();
  }
  void TearDown() override { fs::remove_all(root_); }
  // What the real file holds (what a power loss would leave).
  std::string on_disk() const {
    std::ifstream f(path_, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  static std::string read_all(File& f) {
    std::string out(*f.size(), '\0');
    EXPECT_EQ(*f.read_at(0, out.data(), out.size()), out.size());
    return out;
  }

  fs::path root_;
  std::string path_;
};

TEST_F(SyncOnlyDiskTest, WritesReachTheFileOnlyAtSync) {
  auto f = sync_only_disk().open(path_);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_TRUE((*f)->write_at(0, "hello").ok());
  ASSERT_TRUE((*f)->write_at(8, "world").ok());  // a hole of zeros between
  EXPECT_EQ(read_all(**f), std::string("hello\0\0\0world", 13));
  EXPECT_EQ(on_disk(), "");
  ASSERT_TRUE((*f)->sync().ok());
  EXPECT_EQ(on_disk(), std::string("hello\0\0\0world", 13));
}

TEST_F(SyncOnlyDiskTest, AFileDroppedUnsyncedLosesWhatCameAfterItsLastSync) {
  {
    auto f = sync_only_disk().open(path_);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->write_at(0, "stable").ok());
    ASSERT_TRUE((*f)->sync().ok());
    ASSERT_TRUE((*f)->write_at(6, "-lost").ok());
    ASSERT_TRUE((*f)->write_at(0, "S").ok());
  }
  auto again = sync_only_disk().open(path_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(read_all(**again), "stable");
}

TEST_F(SyncOnlyDiskTest, TruncationsAreStableAtSyncToo) {
  auto f = sync_only_disk().open(path_);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->write_at(0, "0123456789").ok());
  ASSERT_TRUE((*f)->sync().ok());
  ASSERT_TRUE((*f)->truncate(4).ok());
  ASSERT_TRUE((*f)->write_at(6, "ab").ok());  // past the cut: zeros between
  EXPECT_EQ(read_all(**f), std::string("0123\0\0ab", 8));
  EXPECT_EQ(on_disk(), "0123456789");
  ASSERT_TRUE((*f)->sync().ok());
  EXPECT_EQ(on_disk(), std::string("0123\0\0ab", 8));
  ASSERT_TRUE((*f)->truncate(2).ok());
  ASSERT_TRUE((*f)->sync().ok());
  EXPECT_EQ(on_disk(), "01");
}

}  // namespace
}  // namespace farmem::storage
