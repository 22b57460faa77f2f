// Unit tests for storage::Journal: recovery of a region and an owner's metadata after a restart,
// across checkpoints, after a power loss at every sync boundary (SimulatedDisk), with a checkpoint
// cut short, and refusals (another region size, a full disk).
#include "farmem/storage/journal.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "farmem/storage/simulated_disk.h"
#include "test_seed.h"

namespace farmem::storage {
namespace {

constexpr uint64_t kRegionBytes = 1 << 20;

// An owner whose metadata is a map; a record "key=value" sets one entry.
class MapOwner final : public JournalOwner {
 public:
  Status load_snapshot(std::string_view bytes) override {
    map.clear();
    size_t at = 0;
    while (at < bytes.size()) {
      const size_t end = bytes.find('\n', at);
      FARMEM_TRY(apply(bytes.substr(at, end - at)));
      at = end + 1;
    }
    ++snapshots_loaded;
    return OkStatus();
  }
  Status apply(std::string_view record) override {
    const size_t eq = record.find('=');
    if (eq == std::string_view::npos) return Internal("bad record");
    map[std::string(record.substr(0, eq))] = std::string(record.substr(eq + 1));
    return OkStatus();
  }
  std::string snapshot(const std::function<void()>& rotate) override {
    std::lock_guard<std::mutex> lock(mu);
    rotate();
    std::string out;
    for (const auto& [k, v] : map) out.append(k).append("=").append(v).append("\n");
    return out;
  }
  // A change and its record, atomic with respect to snapshots (as the node's mutations are).
  Result<uint64_t> set(Journal& j, const std::string& k, const std::string& v) {
    std::lock_guard<std::mutex> lock(mu);
    map[k] = v;
    return j.append(k + "=" + v);
  }

  std::mutex mu;
  std::map<std::string, std::string> map;
  int snapshots_loaded = 0;
};

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("farmem-journal-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    auto d = DataDir::open(path_);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    dir_ = std::make_unique<DataDir>(std::move(*d));
  }
  void TearDown() override {
    dir_.reset();
    std::filesystem::remove_all(path_);
  }

  struct Node {
    std::vector<uint8_t> region = std::vector<uint8_t>(kRegionBytes, 0);
    MapOwner owner;
    Journal::Report report;
    std::unique_ptr<Journal> journal;
  };
  // Recovers a node from `disk` (the region starts zeroed, as a fresh UCX region does).
  std::unique_ptr<Node> open(Disk& disk, Durability durability = Durability::kPower,
                             uint64_t checkpoint_log_bytes = 1 << 30) {
    auto n = std::make_unique<Node>();
    JournalOptions o;
    o.durability = durability;
    o.disk = &disk;
    o.checkpoint_log_bytes = checkpoint_log_bytes;
    auto j = Journal::open(*dir_, n->region, o, n->owner, &n->report);
    EXPECT_TRUE(j.ok()) << j.status().to_string();
    if (!j.ok()) return nullptr;
    n->journal = std::move(*j);
    n->journal->start();
    return n;
  }
  static void wait_stable(Journal& j, uint64_t lsn) {
    while (j.stable_lsn() < lsn && j.health().ok()) std::this_thread::yield();
  }
  // Writes `bytes` at `offset` in the region and persists them.
  static uint64_t persist(Node& n, uint64_t offset, const std::string& bytes) {
    std::memcpy(&n.region[offset], bytes.data(), bytes.size());
    auto lsn = n.journal->append_range(offset, bytes.size());
    EXPECT_TRUE(lsn.ok()) << lsn.status().to_string();
    return lsn.ok() ? *lsn : 0;
  }
  static std::string read(const Node& n, uint64_t offset, size_t bytes) {
    return std::string(reinterpret_cast<const char*>(&n.region[offset]), bytes);
  }

  std::string path_;
  std::unique_ptr<DataDir> dir_;
};

TEST_F(JournalTest, RangesAndRecordsComeBackAfterARestart) {
  SimulatedDisk disk;
  {
    auto n = open(disk, Durability::kProcess);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->report.records, 0u);
    persist(*n, 4096, "hello");
    persist(*n, kRegionBytes - 3, "end");
    ASSERT_TRUE(n->owner.set(*n->journal, "a", "1").ok());
    ASSERT_TRUE(n->owner.set(*n->journal, "a", "2").ok());
    EXPECT_EQ(n->journal->stable_lsn(), 4u);  // process: stable once written
  }
  auto n = open(disk, Durability::kProcess);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(read(*n, 4096, 5), "hello");
  EXPECT_EQ(read(*n, kRegionBytes - 3, 3), "end");
  EXPECT_EQ(n->owner.map["a"], "2");
  EXPECT_EQ(n->report.records, 4u);
  EXPECT_EQ(n->report.ranges, 2u);
  EXPECT_EQ(n->journal->stats().appended_lsn, 4u);
}

// append_ranges puts a request's copies in one ranges record: they come back in order (a later
// copy of the same bytes wins), as one record, and a power loss before its sync takes all of it.
TEST_F(JournalTest, CopiesOfSeveralRangesAreOneRecord) {
  SimulatedDisk disk;
  {
    auto n = open(disk, Durability::kPower);
    ASSERT_NE(n, nullptr);
    const std::string a = "first", b(3000, 'b'), c = "second!";
    const Journal::RangeCopy copies[] = {{100, a}, {8192, b}, {100, c}, {kRegionBytes - 1, "z"}};
    auto lsn = n->journal->append_ranges(copies);
    ASSERT_TRUE(lsn.ok()) << lsn.status().to_string();
    EXPECT_EQ(*lsn, 1u) << "one record";
    wait_stable(*n->journal, *lsn);
    const Journal::RangeCopy lost[] = {{200, "unsynced"}, {300, "too"}};
    ASSERT_TRUE(n->journal->append_ranges(lost).ok());
    n->journal.reset();  // (its syncer may or may not have synced the second record)
    disk.power_loss();
  }
  auto n = open(disk, Durability::kPower);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(read(*n, 100, 7), "second!");
  EXPECT_EQ(read(*n, 8192, 3000), std::string(3000, 'b'));
  EXPECT_EQ(read(*n, kRegionBytes - 1, 1), "z");
  const std::string second = read(*n, 200, 8) + read(*n, 300, 3);
  EXPECT_TRUE(second == std::string(11, '\0') || second == "unsyncedtoo")
      << "a record is whole or absent";
  EXPECT_EQ(n->report.ranges % 2, 0u);
  EXPECT_GE(n->report.ranges, 4u);
}

TEST_F(JournalTest, ACheckpointEmptiesTheLogAndRecoveryStartsFromIt) {
  SimulatedDisk disk;
  {
    auto n = open(disk);
    ASSERT_NE(n, nullptr);
    for (int i = 0; i < 50; ++i) {
      persist(*n, 100'000 + 8 * i, std::to_string(1000 + i).substr(0, 4) + "abcd");
      ASSERT_TRUE(n->owner.set(*n->journal, "k" + std::to_string(i), std::to_string(i)).ok());
    }
    ASSERT_TRUE(n->journal->checkpoint().ok());
    EXPECT_EQ(n->journal->stats().log_bytes, 0u);
    EXPECT_EQ(n->journal->stats().generation, 1u);
    wait_stable(*n->journal, persist(*n, 200'000, "after"));
    ASSERT_TRUE(n->journal->checkpoint().ok());
    const uint64_t lsn = persist(*n, 300'000, "last");
    wait_stable(*n->journal, lsn);
  }
  auto n = open(disk);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->report.generation, 2u);
  EXPECT_EQ(n->report.records, 1u);  // only what followed the checkpoint
  EXPECT_EQ(n->owner.snapshots_loaded, 1);
  EXPECT_EQ(n->owner.map.size(), 50u);
  EXPECT_EQ(n->owner.map["k49"], "49");
  EXPECT_EQ(read(*n, 100'000 + 8 * 49, 8), "1049abcd");
  EXPECT_EQ(read(*n, 200'000, 5), "after");
  EXPECT_EQ(read(*n, 300'000, 4), "last");
  // Chunks 1 and 3 went to the image; "last" (chunk 4) is only in the log.
  EXPECT_EQ(n->report.image_bytes, 2 * Journal::kChunkBytes);
}

TEST_F(JournalTest, BackgroundCheckpointsKeepTheLogBounded) {
  SimulatedDisk disk;
  {
    auto n = open(disk, Durability::kPower, /*checkpoint_log_bytes=*/4096);
    ASSERT_NE(n, nullptr);
    uint64_t lsn = 0;
    for (int i = 0; i < 2000; ++i) {
      lsn = persist(*n, 8 * (i % 1000), std::string(8, static_cast<char>('a' + i % 26)));
    }
    wait_stable(*n->journal, lsn);
    while (n->journal->stats().checkpoints == 0) std::this_thread::yield();
    EXPECT_TRUE(n->journal->health().ok());
  }
  auto n = open(disk);
  ASSERT_NE(n, nullptr);
  EXPECT_GE(n->report.generation, 1u);
  EXPECT_LT(n->report.records, 2000u);
  for (int i = 1000; i < 2000; ++i) {
    ASSERT_EQ(read(*n, 8 * (i % 1000), 8), std::string(8, static_cast<char>('a' + i % 26))) << i;
  }
}

// Runs `ops` single-writer operations on a power node, taking a power-loss copy of the disk at
// every sync boundary (and a torn one between), and checks that each copy recovers with every
// operation acknowledged before it.
TEST_F(JournalTest, PowerLossAtEverySyncBoundaryKeepsWhatWasAcknowledged) {
  const uint64_t seed = farmem::testing::test_seed();
  std::mt19937_64 rng(seed);
  SimulatedDisk disk;
  auto n = open(disk, Durability::kPower, /*checkpoint_log_bytes=*/16 << 10);
  ASSERT_NE(n, nullptr);
  std::vector<std::pair<uint64_t, uint64_t>> acked;  // (slot, value) in order
  int boundaries = 0;
  uint64_t syncs_seen = disk.syncs();
  for (uint64_t i = 1; i <= 600; ++i) {
    const uint64_t slot = rng() % 4096;
    uint64_t lsn = 0;
    if (i % 3 == 0) {
      auto r = n->owner.set(*n->journal, "s" + std::to_string(slot), std::to_string(i));
      ASSERT_TRUE(r.ok());
      lsn = *r;
    } else {
      std::string v(8, '\0');
      std::memcpy(v.data(), &i, 8);
      lsn = persist(*n, 8 * slot, v);
    }
    wait_stable(*n->journal, lsn);
    acked.emplace_back(slot, i);
    if (disk.syncs() == syncs_seen) continue;
    syncs_seen = disk.syncs();
    ++boundaries;
    auto copy = disk.crash_copy(i % 7 == 0 ? rng() | 1 : 0);
    auto r = open(*copy);
    ASSERT_NE(r, nullptr) << "seed " << seed << " op " << i;
    std::map<uint64_t, uint64_t> want_region;
    std::map<std::string, std::string> want_map;
    for (const auto& [s, v] : acked) {
      if (v % 3 == 0) {
        want_map["s" + std::to_string(s)] = std::to_string(v);
      } else {
        want_region[s] = v;
      }
    }
    for (const auto& [s, v] : want_region) {
      uint64_t got = 0;
      std::memcpy(&got, &r->region[8 * s], 8);
      ASSERT_EQ(got, v) << "seed " << seed << " op " << i << " slot " << s;
    }
    ASSERT_EQ(r->owner.map, want_map) << "seed " << seed << " op " << i;
  }
  EXPECT_GT(boundaries, 100);
  EXPECT_GE(n->journal->stats().checkpoints, 1u);
}

TEST_F(JournalTest, ARegionOfAnotherSizeIsRefused) {
  SimulatedDisk disk;
  {
    auto n = open(disk);
    ASSERT_NE(n, nullptr);
    persist(*n, 0, "x");
    ASSERT_TRUE(n->journal->checkpoint().ok());
  }
  std::vector<uint8_t> small(kRegionBytes / 2);
  MapOwner owner;
  Journal::Report report;
  JournalOptions o;
  o.disk = &disk;
  auto j = Journal::open(*dir_, small, o, owner, &report);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(j.status().message().find("capacity"), std::string::npos);
}

TEST_F(JournalTest, AFullDiskFailsTheAppendAndKeepsWhatWasThere) {
  SimulatedDisk disk;
  auto n = open(disk, Durability::kProcess);
  ASSERT_NE(n, nullptr);
  persist(*n, 0, "kept");
  disk.set_capacity(disk.contents(dir_->file("log.0")).size() + 64);
  auto r = n->journal->append_range(0, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find(path_), std::string::npos) << r.status().message();
  n.reset();
  disk.set_capacity(0);
  auto again = open(disk);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(read(*again, 0, 4), "kept");
  EXPECT_EQ(again->report.records, 1u);
}

TEST_F(JournalTest, ListenersHearWhenRecordsBecomeStable) {
  SimulatedDisk disk;
  auto n = open(disk, Durability::kPower);
  ASSERT_NE(n, nullptr);
  const int fd = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  n->journal->add_listener(fd);
  const uint64_t lsn = persist(*n, 0, "x");
  uint64_t count = 0;
  ASSERT_EQ(::read(fd, &count, sizeof(count)), static_cast<ssize_t>(sizeof(count)));  // blocks
  EXPECT_GE(count, 1u);
  wait_stable(*n->journal, lsn);
  EXPECT_GE(n->journal->stats().syncs, 1u);
  n->journal->remove_listener(fd);
  ::close(fd);
}

}  // namespace
}  // namespace farmem::storage
