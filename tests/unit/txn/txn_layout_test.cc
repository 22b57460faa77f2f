// The transactional tables' remote layout (txn/layout.h, docs/formats/txn.md): sizes, the
// bucket hash and the placement of replicas.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <string_view>

#include "farmem/txn/layout.h"
#include "test_seed.h"

namespace farmem::txn {
namespace {

TEST(TxnLayout, SizesFollowTheRecordSize) {
  EXPECT_EQ(slot_bytes(8), 40u);
  EXPECT_EQ(slot_bytes(9), 48u);
  EXPECT_EQ(bucket_bytes(8), 704u);  // 16 + 16 x 40 = 656, padded to 64
  EXPECT_EQ(bucket_bytes(40) % 64, 0u);
  EXPECT_GE(bucket_bytes(kMaxRecordBytes),
            sizeof(BucketHeader) + kSlotsPerBucket * slot_bytes(kMaxRecordBytes));
}

// The most keys of 0..keys-1 that land in one of `buckets` buckets under a table name's seed.
uint32_t fullest_bucket(std::string_view name, uint64_t keys, uint64_t buckets) {
  const uint64_t seed = XXH3_64bits(name.data(), name.size());  // as Table::create
  std::vector<uint32_t> count(buckets);
  for (uint64_t k = 0; k < keys; ++k) ++count[bucket_of(k, seed, buckets)];
  return *std::max_element(count.begin(), count.end());
}

TEST(TxnLayout, BucketCountLeavesRoomAtCapacity) {
  EXPECT_EQ(bucket_count(1024, 1), 256u);  // small tables: 4 records per bucket
  EXPECT_EQ(bucket_count(1, 3), 3u);       // at least one bucket per node
  uint64_t last = 0;
  for (uint64_t cap : {1000ull, 100'000ull, 1'000'000ull, 10'000'000ull}) {
    const uint64_t b = bucket_count(cap, 1);
    EXPECT_GE(b, (cap + 3) / 4);
    EXPECT_LT(b, cap);  // still several records per bucket
    EXPECT_GT(b, last);
    last = b;
  }
  EXPECT_GT(bucket_count(1'000'000, 1), 1'000'000u / 3.2);  // ~2.95 per bucket
  // SmallBank's 1M accounts (keys 0..999,999) in 'smallbank.checking': at 4 per bucket one
  // bucket gets 17 keys and the load failed; with bucket_count's sizing none is full.
  EXPECT_GT(fullest_bucket("smallbank.checking", 1'000'000, 250'000), kSlotsPerBucket);
  EXPECT_LE(fullest_bucket("smallbank.checking", 1'000'000, bucket_count(1'000'000, 1)),
            kSlotsPerBucket);
}

TEST(TxnLayout, BucketOfStaysInRangeAndSpreads) {
  const uint64_t seed = testing::test_seed();
  std::mt19937_64 rng(seed);
  const uint64_t buckets = 97;
  std::vector<int> hits(buckets);
  for (int i = 0; i < 97 * 200; ++i) {
    const uint64_t b = bucket_of(rng(), 0x1234, buckets);
    ASSERT_LT(b, buckets);
    ++hits[b];
  }
  for (int h : hits) EXPECT_GT(h, 100);  // ~200 each: no bucket starved
  // Sequential keys (SmallBank's accounts) spread too.
  std::set<uint64_t> seen;
  for (uint64_t k = 0; k < 64; ++k) seen.insert(bucket_of(k, 7, 1 << 20));
  EXPECT_EQ(seen.size(), 64u);
}

TEST(TxnLayout, ReplicasOfABucketAreOnDistinctNodesAndNeverShareALocalBucket) {
  for (uint32_t nodes : {1u, 2u, 3u, 5u}) {
    for (uint32_t replicas = 1; replicas <= nodes && replicas <= 3; ++replicas) {
      const uint64_t buckets = 50;
      const uint64_t per_node = (buckets + nodes - 1) / nodes;
      std::set<std::pair<uint32_t, uint64_t>> used;
      for (uint64_t b = 0; b < buckets; ++b) {
        std::set<uint32_t> on;
        for (uint32_t r = 0; r < replicas; ++r) {
          const Placement p = placement(b, r, nodes, per_node);
          EXPECT_LT(p.node_index, nodes);
          EXPECT_LT(p.local_bucket, uint64_t{replicas} * per_node);
          on.insert(p.node_index);
          EXPECT_TRUE(used.insert({p.node_index, p.local_bucket}).second)
              << "bucket " << b << " rank " << r << " over " << nodes << " nodes";
        }
        EXPECT_EQ(on.size(), replicas);
      }
    }
  }
}

}  // namespace
}  // namespace farmem::txn
