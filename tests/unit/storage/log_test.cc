// Unit tests for storage::Log over the real file system and over SimulatedDisk (power loss at
// every sync boundary, torn tails, flipped bits, a full disk).
#include "farmem/storage/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "farmem/storage/simulated_disk.h"
#include "test_seed.h"

namespace farmem::storage {
namespace {

struct Opened {
  Log log;
  Log::Recovery recovery;
  std::vector<std::string> payloads;  // visited, in order
  std::vector<uint64_t> lsns;
};

Opened open_log(Disk& disk, const std::string& path, uint64_t start_lsn = 1) {
  auto file = disk.open(path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  std::vector<std::string> payloads;
  std::vector<uint64_t> lsns;
  Log::Recovery r;
  auto log = Log::open(
      std::move(*file), start_lsn,
      [&](uint64_t lsn, std::string_view p) {
        lsns.push_back(lsn);
        payloads.emplace_back(p);
        return OkStatus();
      },
      &r);
  if (!log.ok()) {
    ADD_FAILURE() << log.status().to_string();
    std::abort();  // the tests below cannot go on without the log
  }
  return Opened{std::move(*log), r, std::move(payloads), std::move(lsns)};
}

std::string payload_of(uint64_t i, std::mt19937_64& rng) {
  std::string p(rng() % 40, '\0');
  for (char& c : p) c = static_cast<char>(rng());
  return std::to_string(i) + ":" + p;
}

TEST(LogTest, RecordsComeBackInOrderAfterAReopenOnTheFileSystem) {
  const std::string path =
      std::filesystem::temp_directory_path() / ("farmem-log-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  {
    Opened o = open_log(posix_disk(), path);
    EXPECT_EQ(o.recovery.records, 0u);
    for (int i = 0; i < 100; ++i) {
      auto lsn = o.log.append("record " + std::to_string(i));
      ASSERT_TRUE(lsn.ok());
      EXPECT_EQ(*lsn, static_cast<uint64_t>(i + 1));
    }
    ASSERT_TRUE(o.log.sync().ok());
    EXPECT_EQ(o.log.synced_lsn(), 100u);
  }
  Opened o = open_log(posix_disk(), path);
  ASSERT_EQ(o.payloads.size(), 100u);
  EXPECT_EQ(o.payloads[42], "record 42");
  EXPECT_EQ(o.lsns.back(), 100u);
  EXPECT_EQ(o.recovery.dropped_bytes, 0u);
  EXPECT_EQ(o.log.next_lsn(), 101u);
  EXPECT_EQ(o.log.bytes(), std::filesystem::file_size(path));
  std::filesystem::remove(path);
}

// Power lost at every sync boundary of a run (syncs every 3 appends, 2 more appends in flight):
// every synced record is back, nothing beyond it, and the log goes on from there.
TEST(LogTest, PowerLossAtEverySyncBoundaryKeepsExactlyWhatWasSynced) {
  const uint64_t seed = testing::test_seed();
  constexpr int kSyncs = 40;
  for (int boundary = 0; boundary <= kSyncs; ++boundary) {
    SimulatedDisk disk;
    std::mt19937_64 rng(seed + boundary);
    std::vector<std::string> appended;
    {
      Opened o = open_log(disk, "/d/log");
      for (int s = 0; s < boundary; ++s) {
        for (int k = 0; k < 3; ++k) {
          appended.push_back(payload_of(appended.size(), rng));
          ASSERT_TRUE(o.log.append(appended.back()).ok());
        }
        ASSERT_TRUE(o.log.sync().ok());
      }
      for (int k = 0; k < 2; ++k) ASSERT_TRUE(o.log.append("unsynced").ok());
    }
    disk.power_loss();
    Opened o = open_log(disk, "/d/log");
    ASSERT_EQ(o.payloads.size(), static_cast<size_t>(3 * boundary)) << "boundary " << boundary;
    for (size_t i = 0; i < o.payloads.size(); ++i) ASSERT_EQ(o.payloads[i], appended[i]);
    EXPECT_EQ(o.recovery.dropped_bytes, 0u);
    auto lsn = o.log.append("after");
    ASSERT_TRUE(lsn.ok());
    EXPECT_EQ(*lsn, static_cast<uint64_t>(3 * boundary + 1));
  }
}

// Power lost while the disk had written part of what was pending (a seeded prefix, the last
// write torn): recovery keeps a prefix of the appended records that holds every synced one.
TEST(LogTest, TornTailsAreCutAtTheLastWholeRecord) {
  const uint64_t seed = testing::test_seed();
  for (int round = 0; round < 200; ++round) {
    SimulatedDisk disk;
    std::mt19937_64 rng(seed * 31 + round);
    std::vector<std::string> appended;
    size_t synced = 0;
    {
      Opened o = open_log(disk, "/d/log");
      const int n = 1 + static_cast<int>(rng() % 30);
      for (int i = 0; i < n; ++i) {
        appended.push_back(payload_of(i, rng));
        ASSERT_TRUE(o.log.append(appended.back()).ok());
        if (rng() % 4 == 0) {
          ASSERT_TRUE(o.log.sync().ok());
          synced = appended.size();
        }
      }
    }
    disk.power_loss_torn(seed + round);
    Opened o = open_log(disk, "/d/log");
    ASSERT_GE(o.payloads.size(), synced) << "round " << round;
    ASSERT_LE(o.payloads.size(), appended.size());
    for (size_t i = 0; i < o.payloads.size(); ++i) ASSERT_EQ(o.payloads[i], appended[i]);
    EXPECT_EQ(disk.contents("/d/log").size(), o.log.bytes());
  }
}

TEST(LogTest, AFlippedBitEndsTheLogAndTheDropIsCounted) {
  SimulatedDisk disk;
  {
    Opened o = open_log(disk, "/d/log");
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(o.log.append(std::string(16, 'a' + i)).ok());
    ASSERT_TRUE(o.log.sync().ok());
  }
  // Record 4 (0-based) starts at 4 * 40 bytes; flip a bit in its payload.
  auto f = disk.open("/d/log");
  ASSERT_TRUE(f.ok());
  std::string bytes = disk.contents("/d/log");
  bytes[4 * 40 + kLogHeaderBytes + 3] ^= 0x10;
  ASSERT_TRUE((*f)->write_at(0, bytes).ok());
  Opened o = open_log(disk, "/d/log");
  EXPECT_EQ(o.payloads.size(), 4u);
  EXPECT_EQ(o.recovery.records, 4u);
  EXPECT_EQ(o.recovery.dropped_bytes, 6u * 40);
  EXPECT_EQ(o.recovery.dropped_records, 5u);  // the flipped one no longer parses
  EXPECT_EQ(disk.contents("/d/log").size(), 4u * 40);
  EXPECT_EQ(o.log.next_lsn(), 5u);
}

TEST(LogTest, AFullDiskIsAClearErrorAndLosesNothing) {
  SimulatedDisk disk;
  Opened o = open_log(disk, "/data/log");
  ASSERT_TRUE(o.log.append("first").ok());
  disk.set_capacity(o.log.bytes() + 16);
  auto full = o.log.append(std::string(64, 'x'));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.status().message().find("/data/log"), std::string::npos);
  EXPECT_EQ(o.log.next_lsn(), 2u);
  disk.set_capacity(0);
  ASSERT_TRUE(o.log.append("second").ok());
  ASSERT_TRUE(o.log.sync().ok());
  Opened again = open_log(disk, "/data/log");
  EXPECT_EQ(again.payloads, (std::vector<std::string>{"first", "second"}));
}

TEST(LogTest, ResetKeepsNumberingAndACheckpointedPrefixIsNotReplayed) {
  SimulatedDisk disk;
  {
    Opened o = open_log(disk, "/d/log");
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(o.log.append("r" + std::to_string(i)).ok());
    ASSERT_TRUE(o.log.sync().ok());
  }
  // A checkpoint holding LSNs 1..3 was written but the log not yet reset: 4 and 5 are replayed.
  Opened o = open_log(disk, "/d/log", 4);
  EXPECT_EQ(o.lsns, (std::vector<uint64_t>{4, 5}));
  EXPECT_EQ(o.recovery.records, 5u);
  ASSERT_TRUE(o.log.reset().ok());
  EXPECT_EQ(o.log.bytes(), 0u);
  auto lsn = o.log.append("r5");
  ASSERT_TRUE(lsn.ok());
  EXPECT_EQ(*lsn, 6u);
  ASSERT_TRUE(o.log.sync().ok());
  Opened after = open_log(disk, "/d/log", 6);
  EXPECT_EQ(after.lsns, (std::vector<uint64_t>{6}));
  EXPECT_EQ(after.log.next_lsn(), 7u);
  Opened fresh = open_log(disk, "/d/other", 9);  // an empty log starts where it is told
  EXPECT_EQ(fresh.log.next_lsn(), 9u);
}

}  // namespace
}  // namespace farmem::storage
