// Unit tests for storage::DataDir (the data directory's lock and format stamp) and Durability.
#include "farmem/storage/data_dir.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "farmem/storage/durability.h"
#include "farmem/storage/file.h"

namespace farmem::storage {
namespace {

namespace fs = std::filesystem;

class DataDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("farmem-datadir-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string dir(const std::string& name) const { return (root_ / name).string(); }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
  }

  fs::path root_;
};

TEST_F(DataDirTest, CreatesAndStampsAMissingDirectoryThenReopensIt) {
  {
    auto d = DataDir::open(dir("a/b"));
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_TRUE(d->fresh());
    EXPECT_EQ(d->file("log"), dir("a/b") + "/log");
    std::ifstream format(d->file(DataDir::kFormatFile));
    std::string line;
    std::getline(format, line);
    EXPECT_EQ(line, "farmem-data-dir 2");
    EXPECT_FALSE(fs::exists(d->file("FORMAT.tmp")));
  }
  auto again = DataDir::open(dir("a/b"));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_FALSE(again->fresh());
}

TEST_F(DataDirTest, ASecondHolderIsRefusedUntilTheFirstLetsGo) {
  auto first = DataDir::open(dir("d"));
  ASSERT_TRUE(first.ok());
  auto second = DataDir::open(dir("d"));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  EXPECT_NE(second.status().message().find("in use by another memory node (pid " +
                                           std::to_string(::getpid()) + ")"),
            std::string::npos)
      << second.status().message();
  DataDir moved = std::move(*first);  // moving keeps the lock
  EXPECT_FALSE(DataDir::open(dir("d")).ok());
  { DataDir gone = std::move(moved); }
  EXPECT_TRUE(DataDir::open(dir("d")).ok());
}

TEST_F(DataDirTest, AKilledHolderLeavesTheDirectoryFree) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto d = DataDir::open(dir("k"));
    const char ok = d.ok() ? 'y' : 'n';
    if (::write(ready[1], &ok, 1) != 1) ::_exit(2);
    ::pause();  // holds the lock until killed
    ::_exit(0);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  auto refused = DataDir::open(dir("k"));
  EXPECT_EQ(refused.status().code(), StatusCode::kBusy);
  EXPECT_NE(refused.status().message().find("pid " + std::to_string(child)), std::string::npos);
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::close(ready[0]);
  ::close(ready[1]);
  auto taken = DataDir::open(dir("k"));
  ASSERT_TRUE(taken.ok()) << taken.status().to_string();
  EXPECT_FALSE(taken->fresh());
}

TEST_F(DataDirTest, AnotherFormatVersionIsRefusedInOneLine) {
  fs::create_directories(dir("v"));
  write(dir("v") + "/FORMAT", "farmem-data-dir 7\n");
  auto d = DataDir::open(dir("v"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kVersionMismatch);
  EXPECT_EQ(d.status().message(), "data directory " + dir("v") +
                                      " was written by format version 7; this farmem reads "
                                      "version 2");
}

// Version 1 logs hold only range and owner records, which version 2 replays: such a directory
// opens, stamped with version 2 (a version-1 node then refuses it rather than misread it).
TEST_F(DataDirTest, AVersionOneDirectoryOpensAndIsStampedTwo) {
  fs::create_directories(dir("old"));
  write(dir("old") + "/FORMAT", "farmem-data-dir 1\n");
  write(dir("old") + "/log.0", "");
  auto d = DataDir::open(dir("old"));
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_FALSE(d->fresh());
  std::ifstream format(d->file(DataDir::kFormatFile));
  std::string line;
  std::getline(format, line);
  EXPECT_EQ(line, "farmem-data-dir 2");
}

TEST_F(DataDirTest, ForeignFilesAreNotTakenForADataDirectory) {
  fs::create_directories(dir("f"));
  write(dir("f") + "/notes.txt", "mine\n");
  auto d = DataDir::open(dir("f"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("not a farmem data directory"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir("f") + "/notes.txt"));  // nothing touched but LOCK

  write(dir("f") + "/FORMAT", "something else\n");
  d = DataDir::open(dir("f"));
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("is not a farmem format file"), std::string::npos);
  EXPECT_EQ(DataDir::open("").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DataDirTest, AFileWhereTheDirectoryShouldBeIsAClearError) {
  write(dir("plain"), "x");
  auto d = DataDir::open(dir("plain"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInternal);
  EXPECT_NE(d.status().message().find(dir("plain")), std::string::npos);
}

TEST_F(DataDirTest, NoSpaceIsResourceExhaustedAndOtherErrorsInternal) {
  EXPECT_EQ(io_error("write", "/x/log", ENOSPC).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(io_error("write", "/x/log", ENOSPC).message(), "write /x/log: No space left on device");
  EXPECT_EQ(io_error("sync", "/x/log", EIO).code(), StatusCode::kInternal);
}

TEST(DurabilityTest, NamesRoundTripAndNonsenseIsRefused) {
  for (Durability d : {Durability::kVolatile, Durability::kProcess, Durability::kPower}) {
    auto parsed = parse_durability(durability_name(d));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, d);
  }
  auto bad = parse_durability("disk");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "durability must be volatile, process or power, not 'disk'");
}

}  // namespace
}  // namespace farmem::storage
