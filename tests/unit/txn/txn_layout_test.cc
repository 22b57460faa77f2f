// The transactional tables' remote layout (txn/layout.h, docs/formats/txn.md): sizes, the
// bucket hash and the placement of replicas.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

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
