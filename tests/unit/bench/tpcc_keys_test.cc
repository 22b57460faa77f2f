// The TPC-C benchmark's key packings (distinct, ordered by their fields, within their bits) and
// NURand (in range, as skewed as clause 2.1.6 makes it). src/bench/txn/tpcc_keys.h.
#include "bench/txn/tpcc_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "test_seed.h"

namespace farmem::bench::tpcc {
namespace {

TEST(TpccKeys, FieldsDoNotOverlap) {
  std::set<uint64_t> customers, lines, stock, names;
  for (uint64_t w : std::vector<uint64_t>{1ull, 2ull, 3ull, uint64_t{kMaxWarehouses}}) {
    for (uint64_t d = 1; d <= kDistricts; ++d) {
      for (uint64_t c :
           std::vector<uint64_t>{1ull, 2ull, 1000ull, 3000ull, uint64_t{kMaxCustomers}}) {
        EXPECT_TRUE(customers.insert(customer_key(w, d, c)).second);
      }
      for (uint64_t o : std::vector<uint64_t>{1ull, 3001ull, kMaxOrders}) {
        for (uint64_t ol = 1; ol <= kMaxOrderLines; ++ol) {
          EXPECT_TRUE(lines.insert(order_line_key(w, d, o, ol)).second);
        }
      }
      for (uint64_t n : std::vector<uint64_t>{0, 1, 999})
        EXPECT_TRUE(names.insert(name_key(w, d, n)).second);
    }
    for (uint64_t i : std::vector<uint64_t>{1ull, 100000ull, uint64_t{kMaxItems}}) {
      EXPECT_TRUE(stock.insert(stock_key(w, i)).second);
    }
  }
  // Ordered by (w, d, o, ol): the largest key of one district is below the next district's.
  EXPECT_LT(customer_key(1, 10, kMaxCustomers), customer_key(2, 1, 1));
  EXPECT_LT(order_line_key(1, 9, kMaxOrders, kMaxOrderLines), order_line_key(1, 10, 1, 1));
  EXPECT_LT(stock_key(1, kMaxItems), stock_key(2, 1));
  EXPECT_LT(order_line_key(kMaxWarehouses, kDistricts, kMaxOrders, kMaxOrderLines), 1ull << 48);
  // Loaded history rows use customer keys, the run's start at 2^40.
  EXPECT_LT(customer_key(kMaxWarehouses, kDistricts, kMaxCustomers), history_key(0, 0));
  EXPECT_NE(history_key(0, 1), history_key(1, 1));
  EXPECT_EQ(order_key(3, 4, 5), (3ull << 28) | (4ull << 24) | 5);
}

TEST(TpccKeys, NURandStaysInRangeAndIsSkewed) {
  workload::Rng rng(farmem::testing::test_seed());
  std::vector<uint32_t> names(1000), customers(3001);
  constexpr int kDraws = 200000;
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t n = nurand(rng, 255, 0, 999, kCLastRun);
    const uint64_t c = nurand(rng, 1023, 1, 3000, kCId);
    const uint64_t item = nurand(rng, 8191, 1, 100000, kCItem);
    ASSERT_LE(n, 999u);
    ASSERT_GE(c, 1u);
    ASSERT_LE(c, 3000u);
    ASSERT_GE(item, 1u);
    ASSERT_LE(item, 100000u);
    ++names[n];
    ++customers[c];
  }
  // Uniform would give 200 per name and ~67 per customer; NURand's OR makes some values several
  // times as likely (and some never drawn).
  EXPECT_GT(*std::max_element(names.begin(), names.end()), 3 * kDraws / 1000);
  EXPECT_GT(*std::max_element(customers.begin() + 1, customers.end()), 3 * kDraws / 3000);
  EXPECT_EQ(uniform_in(rng, 7, 7), 7u);
}

}  // namespace
}  // namespace farmem::bench::tpcc
