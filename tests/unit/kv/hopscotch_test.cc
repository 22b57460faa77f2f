// Unit tests of the pool's primary index (hopscotch hashing in region memory) and of ServerPool's
// key operations against std::unordered_map, with seeded random operations.
#include "kv/service/hopscotch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <unordered_map>

#include "kv/service/record.h"
#include "kv/service/server_pool.h"
#include "kv_test_region.h"
#include "test_seed.h"

namespace farmem::kv::service {
namespace {

namespace w = farmem::kv::wire;
using testing::TestRegion;

// Every entry lies within the neighbourhood of its home and is named by exactly its home's bit.
void check_neighbourhoods(const HopscotchIndex& index) {
  const uint64_t n = index.slots();
  std::vector<uint32_t> expect(n, 0);
  for (uint64_t i = 0; i < n; ++i) {
    const IndexBucket& b = index.bucket(i);
    if (b.record == 0) continue;
    const uint64_t home = b.hash & (n - 1);
    const uint64_t dist = (i - home) & (n - 1);
    ASSERT_LT(dist, HopscotchIndex::kNeighbourhood) << "bucket " << i;
    expect[home] |= 1u << dist;
  }
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(index.bucket(i).hop, expect[i]) << "bucket " << i;
}

TEST(KvHopscotchTest, MatchesAnUnorderedMapAndGrowsByDoubling) {
  const uint64_t seed = farmem::testing::test_seed();
  std::mt19937_64 rng(seed);
  TestRegion region(64 << 20);
  TestRegion::Source source(region);
  PoolAllocator alloc(source, 48 << 20, 0);
  HopscotchIndex index(region.view(), alloc);
  ASSERT_TRUE(index.init(0, 0).ok());
  EXPECT_EQ(index.slots(), HopscotchIndex::kMinSlots);
  std::unordered_map<std::string, uint64_t> model;  // key -> record
  uint64_t version = 1;
  for (int i = 0; i < 30000; ++i) {
    const std::string key = "k" + std::to_string(rng() % 5000);
    const uint64_t hash = HopscotchIndex::hash_key(key);
    const uint64_t at = index.find(hash, key);
    auto it = model.find(key);
    ASSERT_EQ(at != HopscotchIndex::kNotFound, it != model.end()) << key << " seed " << seed;
    if (it != model.end()) {
      ASSERT_EQ(index.bucket(at).record, it->second);
    }
    if (rng() % 3 != 0) {
      if (it != model.end()) continue;
      auto rec = alloc.allocate(record_alloc_bytes(key.size(), 0), 0);
      ASSERT_TRUE(rec.ok());
      write_record(region.view().at(*rec), version++, key, "", 0);
      auto placed = index.insert(hash, *rec, 0, 0);
      ASSERT_TRUE(placed.ok()) << placed.status().to_string();
      ASSERT_EQ(index.bucket(*placed).record, *rec);
      model[key] = *rec;
    } else if (it != model.end()) {
      index.erase(at);
      alloc.free_now(it->second, record_alloc_bytes(key.size(), 0));
      model.erase(it);
    }
    ASSERT_EQ(index.size(), model.size());
    if (i % 5000 == 0) check_neighbourhoods(index);
  }
  check_neighbourhoods(index);
  EXPECT_GE(index.slots(), 4096u);
  uint64_t seen = 0;
  index.for_each([&](const IndexBucket& b) {
    ++seen;
    EXPECT_EQ(model.at(std::string(index.key_of(b.record))), b.record);
  });
  EXPECT_EQ(seen, model.size());
}

TEST(KvHopscotchTest, CollidingHomesAreDisplacedWithinTheNeighbourhood) {
  TestRegion region(16 << 20);
  TestRegion::Source source(region);
  PoolAllocator alloc(source, 8 << 20, 0);
  HopscotchIndex index(region.view(), alloc);
  ASSERT_TRUE(index.init(1000, 0).ok());
  const uint64_t slots = index.slots();
  ASSERT_EQ(slots, 2048u);
  // 40 keys whose hashes share one home in 2048 slots: at most 32 fit its neighbourhood, so the
  // table grows until bit 12 parts them.
  auto hash_of = [](int i) { return uint64_t{7} | (uint64_t(i) << 12); };
  for (int i = 0; i < 40; ++i) {
    const std::string key = "c" + std::to_string(i);
    auto rec = alloc.allocate(64, 0);
    ASSERT_TRUE(rec.ok());
    write_record(region.view().at(*rec), i + 1, key, "", 0);
    ASSERT_TRUE(index.insert(hash_of(i), *rec, 0, 0).ok());
  }
  EXPECT_EQ(index.slots(), 8192u);
  check_neighbourhoods(index);
  for (int i = 0; i < 40; ++i) {
    EXPECT_NE(index.find(hash_of(i), "c" + std::to_string(i)), HopscotchIndex::kNotFound);
  }
  // Keys no table size can part: the 33rd is an error once the pool cannot hold a bigger table.
  Status s;
  for (int i = 0; i < 40 && s.ok(); ++i) {
    auto rec = alloc.allocate(64, 0);
    ASSERT_TRUE(rec.ok());
    write_record(region.view().at(*rec), 100 + i, "same" + std::to_string(i), "", 0);
    s = index.insert(99, *rec, 0, 0).status();
  }
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  check_neighbourhoods(index);
}

TEST(KvHopscotchTest, JunkInTheTableIsNeverTrustedIntoACrash) {
  TestRegion region(1 << 20);
  TestRegion::Source source(region);
  PoolAllocator alloc(source, 512 << 10, 0);
  HopscotchIndex index(region.view(), alloc);
  ASSERT_TRUE(index.init(0, 0).ok());
  // A client scribbles over the bucket array (it lives in the exported region).
  auto* b = reinterpret_cast<IndexBucket*>(region.view().at(index.table_offset()));
  for (uint64_t i = 0; i < index.slots(); ++i) {
    b[i].record = (i % 3 == 0) ? ~0ull - i : (1ull << 40) + i;
    b[i].hop = 0xFFFFFFFF;
    b[i].hash = i;
  }
  EXPECT_EQ(index.find(3, "key"), HopscotchIndex::kNotFound);
  EXPECT_TRUE(index.key_of(~0ull - 3).empty());
  for (uint64_t i = 0; i < index.slots(); ++i) b[i].record = 0;
  auto rec = alloc.allocate(64, 0);
  ASSERT_TRUE(rec.ok());
  write_record(region.view().at(*rec), 1, "key", "", 0);
  ASSERT_TRUE(index.insert(HopscotchIndex::hash_key("key"), *rec, 0, 0).ok());
  EXPECT_NE(index.find(HopscotchIndex::hash_key("key"), "key"), HopscotchIndex::kNotFound);
}

TEST(KvHopscotchDeathTest, ABucketOutsideTheTableIsAnInvariantFailure) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TestRegion region(1 << 20);
  TestRegion::Source source(region);
  PoolAllocator alloc(source, 512 << 10, 0);
  HopscotchIndex index(region.view(), alloc);
  ASSERT_TRUE(index.init(0, 0).ok());
  EXPECT_DEATH((void)index.bucket(index.slots()), "bucket positions are inside the table");
  EXPECT_DEATH(index.erase(index.slots() + 5), "bucket positions are inside the table");
}

// ServerPool: the key operations a shard runs, against a model, with every published record valid.
TEST(KvPoolTest, PutGetEraseMatchAnUnorderedMapAndRecordsStayValid) {
  const uint64_t seed = farmem::testing::test_seed();
  std::mt19937_64 rng(seed);
  TestRegion region(64 << 20);
  std::atomic<uint64_t> next_version{1};
  Versions versions(next_version);
  ServerPool pool("p", 1, 1, 32 << 20, region.view(), std::make_unique<TestRegion::Source>(region),
                  versions, /*grace_ns=*/0, std::make_shared<PoolSummary>());
  ASSERT_TRUE(pool.init(0, 0).ok());
  std::unordered_map<std::string, std::string> model;
  uint64_t last_version = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string key = "key-" + std::to_string(rng() % 2000);
    const int op = static_cast<int>(rng() % 4);
    if (op <= 1) {
      const std::string value(rng() % 500, static_cast<char>('a' + rng() % 26));
      const uint8_t flags = rng() % 4 == 0 ? w::kPutDontOverwrite : 0;
      KeyInfo info;
      bool existed = false;
      ASSERT_TRUE(pool.put(key, value.data(), static_cast<uint32_t>(value.size()), flags, i, &info,
                           &existed)
                      .ok());
      ASSERT_EQ(existed, (flags != 0) && model.count(key) != 0);
      if (!existed) {
        model[key] = value;
        ASSERT_GT(info.version, last_version);
        last_version = info.version;
      }
    } else if (op == 2) {
      const Status s = pool.erase(key, i);
      ASSERT_EQ(s.ok(), model.erase(key) == 1) << s.to_string();
    } else {
      auto k = pool.lookup(key);
      auto it = model.find(key);
      ASSERT_EQ(k.ok(), it != model.end());
      if (!k.ok()) continue;
      const uint8_t* rec = region.view().at(k->record);
      ASSERT_TRUE(record_valid(rec, k->record_bytes(), key)) << "seed " << seed;
      ASSERT_EQ(
          std::string(reinterpret_cast<const char*>(region.view().at(k->value)), k->value_bytes),
          it->second);
    }
  }
  EXPECT_EQ(pool.count(), model.size());
  uint64_t walked = 0;
  pool.for_each_key([&](std::string_view key, const KeyInfo& info) {
    ++walked;
    EXPECT_EQ(model.count(std::string(key)), 1u);
  });
  EXPECT_EQ(walked, model.size());
}

TEST(KvPoolTest, LocksFollowTheirModesAndSessionEnds) {
  TestRegion region(8 << 20);
  std::atomic<uint64_t> next_version{1};
  Versions versions(next_version);
  ServerPool pool("p", 1, 1, 4 << 20, region.view(), std::make_unique<TestRegion::Source>(region),
                  versions, 0, std::make_shared<PoolSummary>());
  ASSERT_TRUE(pool.init(0, 0).ok());
  KeyInfo info;
  bool existed;
  ASSERT_TRUE(pool.put("k", "value", 5, 0, 1, &info, &existed).ok());
  auto r1 = pool.lock(10, "k", w::LocateMode::kRead, 0, 0, 0, 2);
  auto r2 = pool.lock(11, "k", w::LocateMode::kRead, 1, 2, 0, 2);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r2->address, info.value + 1);
  EXPECT_EQ(r2->length, 2u);
  EXPECT_EQ(pool.lock(12, "k", w::LocateMode::kWrite, 0, 0, 0, 2).status().code(),
            StatusCode::kBusy);
  EXPECT_EQ(pool.put("k", "x", 1, 0, 3, &info, &existed).code(), StatusCode::kBusy);
  EXPECT_EQ(pool.erase("k", 3).code(), StatusCode::kBusy);
  EXPECT_TRUE(pool.check_readable("k", 12).ok());
  EXPECT_EQ(pool.release(11, r1->token, 0, 4).code(), StatusCode::kNotFound);
  pool.release_all(10, 4);
  pool.release_all(11, 4);
  EXPECT_EQ(pool.locks_held(), 0u);
  // A write lock: other owners cannot read; its end publishes a new version.
  auto wl = pool.lock(12, "k", w::LocateMode::kWrite, 0, 0, 0, 5);
  ASSERT_TRUE(wl.ok());
  EXPECT_EQ(pool.check_readable("k", 13).code(), StatusCode::kBusy);
  EXPECT_TRUE(pool.check_readable("k", 12).ok());
  std::memcpy(region.view().at(wl->address), "VALUE", 5);
  const uint32_t junk = 0xFFFFFFF0;  // a writer scribbles over the header's lengths
  std::memcpy(region.view().at(wl->record) + 20, &junk, 4);
  pool.release_all(12, 6);  // session end: published as is, with the server's own lengths
  auto k = pool.lookup("k");
  ASSERT_TRUE(k.ok());
  EXPECT_GT(k->version, info.version);
  EXPECT_EQ(k->write_epoch_ns, 6u);
  EXPECT_TRUE(record_valid(region.view().at(k->record), k->record_bytes(), "k"));
  // An ADO's resize under its write lock: a new record, invisible until release.
  const uint64_t ado = kAdoOwnerBit | 1;
  auto al = pool.lock(ado, "k", w::LocateMode::kWrite, 0, 0, 0, 7);
  ASSERT_TRUE(al.ok());
  EXPECT_EQ(pool.grant(ado, al->token)->record, k->record);
  EXPECT_EQ(pool.grant(12, al->token), nullptr);
  auto grown = pool.resize(ado, al->token, 3000, 7);
  ASSERT_TRUE(grown.ok()) << grown.status().to_string();
  EXPECT_NE(grown->record, k->record);
  EXPECT_EQ(grown->length, 3000u);
  EXPECT_FALSE(record_valid(region.view().at(k->record), k->record_bytes(), "k"));  // dead
  EXPECT_EQ(std::string(reinterpret_cast<char*>(region.view().at(grown->address)), 5), "VALUE");
  EXPECT_EQ(region.view().at(grown->address)[2999], 0);
  EXPECT_EQ(pool.lookup("k")->record, grown->record);
  EXPECT_FALSE(record_valid(region.view().at(grown->record), 32 + 1 + 3000, "k"));  // locked
  ASSERT_TRUE(pool.release(ado, al->token, 0, 8).ok());
  auto resized = pool.lookup("k");
  EXPECT_EQ(resized->value_bytes, 3000u);
  EXPECT_TRUE(record_valid(region.view().at(resized->record), resized->record_bytes(), "k"));
  EXPECT_EQ(pool.resize(ado, al->token, 10, 9).status().code(), StatusCode::kNotFound);
  // A put-new dropped at session end leaves nothing.
  auto pn = pool.lock(14, "new", w::LocateMode::kPutNew, 0, 1000, 0, 7);
  ASSERT_TRUE(pn.ok());
  EXPECT_EQ(pool.lookup("new").status().code(), StatusCode::kNotFound);
  pool.release_all(14, 8);
  EXPECT_EQ(pool.lookup("new").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(pool.put("new", "x", 1, 0, 9, &info, &existed).code(), StatusCode::kOk);
}

}  // namespace
}  // namespace farmem::kv::service
