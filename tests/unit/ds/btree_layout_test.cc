// The B+tree's page format (drafts, validation, search), its index cache and the local level of
// its page locks, without any memory node.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "farmem/ds/btree/index_cache.h"
#include "farmem/ds/btree/layout.h"
#include "farmem/ds/btree/local_locks.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/task.h"

namespace farmem::ds::btree {
namespace {

constexpr uint32_t kPage = 1024;
constexpr uint64_t kTree = 0x1234;

// A leaf over [a, i) with keys b, d, f (values "vb", ...) and h (out of place).
std::string leaf_image(std::vector<std::string>* keep) {
  *keep = {leaf_entry("b", "vb"), leaf_entry("d", "vd"), leaf_entry("f", "vf"),
           out_of_place_entry("h", 0xABCDEF, 5000)};
  PageDraft d;
  d.tree_id = kTree;
  d.low_infinite = false;
  d.low = "a";
  d.high_infinite = false;
  d.high = "i";
  d.sibling = 77;
  for (const auto& e : *keep) d.entries.push_back(e);
  std::string image(kPage, '\0');
  d.encode(image.data(), kPage);
  return image;
}

TEST(BTreeLayoutTest, DraftRoundTripsThroughTheImage) {
  std::vector<std::string> keep;
  std::string image = leaf_image(&keep);
  PageView v;
  ASSERT_EQ(v.parse(image.data(), kPage, kTree), PageView::Check::kWhole);
  EXPECT_TRUE(v.check_entries());
  EXPECT_TRUE(v.leaf());
  EXPECT_FALSE(v.dead());
  EXPECT_EQ(v.count(), 4u);
  EXPECT_EQ(v.low(), "a");
  EXPECT_EQ(v.high(), "i");
  EXPECT_EQ(v.sibling(), 77u);
  EXPECT_EQ(v.key(1), "d");
  EXPECT_EQ(v.inline_value(1), "vd");
  EXPECT_TRUE(v.out_of_place(3));
  EXPECT_EQ(v.block(3), 0xABCDEFu);
  EXPECT_EQ(v.block_value_bytes(3), 5000u);
  EXPECT_EQ(v.lower_bound("c"), 1u);
  EXPECT_EQ(v.lower_bound("d"), 1u);
  EXPECT_EQ(v.lower_bound("z"), 4u);
  EXPECT_TRUE(v.below("0"));
  EXPECT_TRUE(v.beyond("i"));
  EXPECT_FALSE(v.beyond("h\xff"));
  // A draft from the view encodes to the same bytes.
  PageDraft again = PageDraft::from(v);
  std::string image2(kPage, '\0');
  again.encode(image2.data(), kPage);
  EXPECT_EQ(image, image2);
  PageHeader h;
  std::memcpy(&h, image.data(), sizeof(h));
  EXPECT_EQ(h.lock, 0u);
  EXPECT_EQ(h.redo, 0u);
  EXPECT_EQ(h.magic, kPageMagic);
  EXPECT_EQ(h.used, again.used());
}

TEST(BTreeLayoutTest, WriteBackCoversTheImageFromItsChecksumOn) {
  static_assert(kLockWordAt == offsetof(PageHeader, lock));
  static_assert(kRedoWordAt == offsetof(PageHeader, redo));
  static_assert(kWriteBackFrom == offsetof(PageHeader, checksum));
  static_assert(kWriteBackFrom < kChecksumFrom);
  std::vector<std::string> keep;
  const std::string image = leaf_image(&keep);
  PageHeader h;
  std::memcpy(&h, image.data(), sizeof(h));
  // Up to the end of the used bytes: everything the checksum covers, and the checksum.
  EXPECT_EQ(kWriteBackFrom + write_back_bytes(h.used), sizeof(PageHeader) + h.used);
  EXPECT_EQ(write_back_bytes(0), sizeof(PageHeader) - kWriteBackFrom);
}

TEST(BTreeLayoutTest, TornAndForeignImagesAreRecognised) {
  std::vector<std::string> keep;
  const std::string image = leaf_image(&keep);
  PageHeader h;
  std::memcpy(&h, image.data(), sizeof(h));
  PageView v;
  // Any changed byte the checksum covers reads as torn; the lock and redo words do not count.
  for (uint32_t i = 0; i < sizeof(PageHeader) + h.used; ++i) {
    if (i >= offsetof(PageHeader, magic) && i < offsetof(PageHeader, magic) + 4) continue;
    if (i >= offsetof(PageHeader, tree_id)) {
      if (i < sizeof(PageHeader)) continue;
    }
    std::string bad = image;
    bad[i] = static_cast<char>(bad[i] ^ 0x5A);
    const auto c = v.parse(bad.data(), kPage, kTree);
    if (i < kChecksumFrom) {
      if (i >= offsetof(PageHeader, checksum)) {
        EXPECT_EQ(c, PageView::Check::kTorn) << i;
      } else {
        EXPECT_EQ(c, PageView::Check::kWhole) << i;
      }
    } else {
      EXPECT_EQ(c, PageView::Check::kTorn) << i;
    }
  }
  EXPECT_EQ(v.parse(image.data(), kPage, kTree + 1), PageView::Check::kForeign);
  std::string zero(kPage, '\0');
  EXPECT_EQ(v.parse(zero.data(), kPage, kTree), PageView::Check::kForeign);
  // Half old, half new: torn.
  keep.push_back(leaf_entry("e", "ve"));
  ASSERT_EQ(v.parse(image.data(), kPage, kTree), PageView::Check::kWhole);
  PageDraft d = PageDraft::from(v);
  d.entries.insert(d.entries.begin() + 2, keep.back());
  std::string next(kPage, '\0');
  d.encode(next.data(), kPage);
  std::string mixed = image.substr(0, 90) + next.substr(90);  // inside the entries
  EXPECT_EQ(v.parse(mixed.data(), kPage, kTree), PageView::Check::kTorn);
}

TEST(BTreeLayoutTest, InternalPagesRouteKeysToChildren) {
  std::vector<std::string> keep = {internal_entry("c", 200), internal_entry("e", 300)};
  PageDraft d;
  d.level = 1;
  d.tree_id = kTree;
  d.child0 = 100;
  for (const auto& e : keep) d.entries.push_back(e);
  std::string image(kPage, '\0');
  d.encode(image.data(), kPage);
  PageView v;
  ASSERT_EQ(v.parse(image.data(), kPage, kTree), PageView::Check::kWhole);
  EXPECT_TRUE(v.low_infinite());
  EXPECT_TRUE(v.high_infinite());
  EXPECT_EQ(v.child_for("a"), 100u);
  EXPECT_EQ(v.child_for("c"), 200u);
  EXPECT_EQ(v.child_for("d"), 200u);
  EXPECT_EQ(v.child_for("e"), 300u);
  EXPECT_EQ(v.child_for("zz"), 300u);
  EXPECT_EQ(entry_key(keep[1]), "e");
}

TEST(BTreeLayoutTest, TheLargestEntriesFitBesideTheLargestFences) {
  const std::string k(kMaxKeyBytes, 'k');
  const std::string e = leaf_entry(k, std::string(max_inline_value_bytes(kPage), 'v'));
  PageDraft d;
  d.low_infinite = d.high_infinite = false;
  d.low = k;
  d.high = k;
  d.entries.push_back(e);
  EXPECT_TRUE(d.fits(kPage));
  d.entries.push_back(e);
  EXPECT_FALSE(d.fits(kPage));
}

std::string level1_image(const char* low, const char* high, uint64_t child0,
                         std::vector<std::string>* keep, const char* sep, uint64_t child) {
  keep->assign({internal_entry(sep, child)});
  PageDraft d;
  d.level = 1;
  d.tree_id = kTree;
  d.child0 = child0;
  d.low_infinite = low == nullptr;
  if (low) d.low = low;
  d.high_infinite = high == nullptr;
  if (high) d.high = high;
  d.entries.push_back((*keep)[0]);
  std::string image(kPage, '\0');
  d.encode(image.data(), kPage);
  return image;
}

TEST(BTreeIndexCacheTest, FindsTheCoveringPageReplacesOverlapsAndEvicts) {
  IndexCache cache(kPage, kTree, 3 * (kPage + 128));
  std::vector<std::string> keep;
  cache.insert(GlobalAddress(1, 4096), level1_image(nullptr, "m", 10, &keep, "f", 11).data());
  cache.insert(GlobalAddress(1, 8192), level1_image("m", nullptr, 20, &keep, "t", 21).data());
  EXPECT_EQ(cache.leaf_for("a").pack(), 10u);
  EXPECT_EQ(cache.leaf_for("g").pack(), 11u);
  EXPECT_EQ(cache.leaf_for("m").pack(), 20u);
  EXPECT_EQ(cache.leaf_for("zz").pack(), 21u);
  EXPECT_EQ(cache.entries(), 2u);
  // A split of [m, +inf) into [m, r) and [r, +inf): the new copy replaces the old one.
  cache.insert(GlobalAddress(1, 8192), level1_image("m", "r", 20, &keep, "p", 22).data());
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_TRUE(cache.leaf_for("s").is_null());  // not covered any more
  cache.insert(GlobalAddress(2, 4096), level1_image("r", nullptr, 30, &keep, "x", 31).data());
  EXPECT_EQ(cache.leaf_for("s").pack(), 30u);
  EXPECT_EQ(cache.entries(), 3u);
  cache.invalidate("q");
  EXPECT_TRUE(cache.leaf_for("q").is_null());
  EXPECT_EQ(cache.stats().invalidations, 1u);
  // Over the budget the least recently used page goes.
  EXPECT_EQ(cache.leaf_for("a").pack(), 10u);
  cache.insert(GlobalAddress(1, 4096), level1_image("m", "r", 40, &keep, "p", 41).data());
  cache.insert(GlobalAddress(2, 4096), level1_image("r", "u", 50, &keep, "s", 51).data());
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(cache.leaf_for("a").pack(), 10u);
  cache.insert(GlobalAddress(2, 8192), level1_image("u", nullptr, 60, &keep, "w", 61).data());
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(cache.leaf_for("a").pack(), 10u);  // recently used: kept
  EXPECT_TRUE(cache.leaf_for("n").is_null());  // the least recently used: evicted
  EXPECT_EQ(cache.leaf_for("v").pack(), 60u);
  IndexCache off(kPage, kTree, 0);
  off.insert(GlobalAddress(1, 4096), level1_image(nullptr, nullptr, 10, &keep, "f", 11).data());
  EXPECT_EQ(off.entries(), 0u);
  EXPECT_TRUE(off.leaf_for("a").is_null());
}

runtime::Task<void> take_and_release(LocalLocks* locks, uint64_t word, int id,
                                     std::vector<std::string>* log) {
  const bool handed = co_await locks->enter(word);
  log->push_back(std::to_string(id) + (handed ? "h" : "r"));
  co_await runtime::Scheduler::current()->yield();
  const bool hand = locks->will_hand_over(word);
  locks->leave(word, hand);
}

TEST(BTreeLocalLocksTest, WaitersGetTheLockInOrderWithBoundedHandOver) {
  runtime::Scheduler s;
  s.install();
  LocalLocks locks(&s, 2);
  std::vector<std::string> log;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s.spawn(take_and_release(&locks, 64, i, &log)).ok());
  ASSERT_TRUE(s.spawn(take_and_release(&locks, 128, 9, &log)).ok());
  s.run_until_idle();
  // 0 takes the remote lock; 1 and 2 get it handed over; 3 must take it remotely again (the
  // bound), 4 gets it from 3. Another word never waits behind them.
  EXPECT_EQ(log, (std::vector<std::string>{"0r", "9r", "1h", "2h", "3r", "4h"}));
  EXPECT_EQ(locks.handovers(), 3u);
  EXPECT_EQ(locks.waits(), 4u);
  EXPECT_EQ(locks.active(), 0u);
}

}  // namespace
}  // namespace farmem::ds::btree
