// A coordinator's local state (src/txn/log_slots.h, recovery.h, slot_cache.h): the log slots'
// addresses and the transitions of their states, the bound on liveness questions, the address
// cache. The transitions a coordinator must never make abort (FARMEM_ASSERT).
#include <gtest/gtest.h>

#include "txn/log_slots.h"
#include "txn/recovery.h"
#include "txn/slot_cache.h"

namespace farmem::txn {
namespace {

TEST(TxnLogSlots, AddressesAndTheRecoverySlotFollowTheBase) {
  LogSlots slots(GlobalAddress(3, 1 << 20), 4, 8192);
  EXPECT_EQ(slots.address(0), GlobalAddress(3, 1 << 20));
  EXPECT_EQ(slots.address(2), GlobalAddress(3, (1 << 20) + 2 * 8192));
  EXPECT_EQ(slots.recovery_slot(), GlobalAddress(3, (1 << 20) + 4 * 8192));
}

TEST(TxnLogSlots, SlotsAreTakenLowestFirstAndReusedOnlyWhenGivenBack) {
  LogSlots slots(GlobalAddress(1, 4096), 3, 256);
  EXPECT_EQ(slots.take(), 0u);
  EXPECT_EQ(slots.take(), 1u);
  slots.set_committing(1);
  slots.set_cleared(1);
  slots.give(1);
  EXPECT_EQ(slots.take(), 1u);
  slots.retire(0);  // never comes back
  EXPECT_EQ(slots.take(), 2u);
  EXPECT_FALSE(slots.take().has_value());
  slots.give(2);
  slots.close();  // freed on their node: none is taken any more
  EXPECT_FALSE(slots.take().has_value());
  EXPECT_TRUE(slots.base().is_null());
}

TEST(TxnLogSlotsDeathTest, TransitionsTheCoordinatorNeverMakesAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  LogSlots slots(GlobalAddress(1, 4096), 2, 256);
  const uint32_t i = *slots.take();
  slots.give(i);
  EXPECT_DEATH(slots.give(i), "given back once");
  const uint32_t j = *slots.take();
  slots.set_committing(j);
  EXPECT_DEATH(slots.give(j), "given back once");
  EXPECT_DEATH(slots.set_committing(j), "written once");
  slots.set_cleared(j);
  EXPECT_DEATH(slots.set_cleared(j), "only a committing log");
  EXPECT_DEATH(slots.address(3), "log slot of this coordinator");
}

TEST(TxnHolderChecks, LiveHoldersAreAskedAboutOncePerInterval) {
  HolderChecks checks;
  bool dead = true;
  EXPECT_TRUE(checks.admit(7, 1000, 100, &dead));
  EXPECT_FALSE(dead);
  checks.record(7, false);
  EXPECT_FALSE(checks.admit(7, 1050, 100, &dead));  // asked 50 ns ago
  EXPECT_TRUE(checks.admit(7, 1100, 100, &dead));
}

TEST(TxnHolderChecks, DeadHoldersStayDeadWithoutNewQuestions) {
  HolderChecks checks;
  bool dead = false;
  ASSERT_TRUE(checks.admit(9, 1000, 100, &dead));
  checks.record(9, true);
  for (uint64_t h = 100; h < 100 + HolderChecks::kRecent - 1; ++h) {
    ASSERT_TRUE(checks.admit(h, 1001, 100, &dead));  // fills the window's questions
  }
  EXPECT_FALSE(checks.admit(500, 1002, 100, &dead));  // no question left in this interval
  EXPECT_TRUE(checks.admit(9, 1003, 100, &dead));     // known dead: admitted at once
  EXPECT_TRUE(dead);
}

TEST(TxnHolderChecks, AtMostKRecentQuestionsPerInterval) {
  HolderChecks checks;
  bool dead = false;
  for (uint64_t h = 1; h <= HolderChecks::kRecent; ++h) {
    EXPECT_TRUE(checks.admit(h, 10, 1000, &dead));
  }
  EXPECT_FALSE(checks.admit(HolderChecks::kRecent + 1, 20, 1000, &dead));
  EXPECT_TRUE(checks.admit(HolderChecks::kRecent + 1, 1010, 1000, &dead));  // a new interval
}

TEST(TxnSlotCache, RemembersForgetsAndKnowsNothingWhenDisabled) {
  const Table t;  // tag 0
  SlotCache cache(4);
  EXPECT_EQ(cache.find(t, 5), kSlotsPerBucket);
  cache.remember(t, 5, 0);
  EXPECT_EQ(cache.find(t, 5), 0u);
  cache.remember(t, 5, 15);
  EXPECT_EQ(cache.find(t, 5), 15u);
  cache.forget(t, 6);  // another key: leaves the entry
  EXPECT_EQ(cache.find(t, 5), 15u);
  cache.forget(t, 5);
  EXPECT_EQ(cache.find(t, 5), kSlotsPerBucket);

  SlotCache none(-1);
  none.remember(t, 5, 3);
  EXPECT_EQ(none.find(t, 5), kSlotsPerBucket);
}

}  // namespace
}  // namespace farmem::txn
