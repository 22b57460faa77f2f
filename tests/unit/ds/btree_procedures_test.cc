// Unit tests for the B+tree's served scan (ds/btree/served.h) on a region image built here: a
// walk from an internal page down to the leaf covering `from` and along the leaves returns the
// records in order up to `to` or the limit, with the level-1 page it passed; a pointer to another
// node, a full reply slot and the page budget stop it with where to go on; torn, mid-write (on a
// durable node), dead and foreign pages and unreadable value blocks send the client back with the
// key to resume from; malformed arguments are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "farmem/client/global_address.h"
#include "farmem/ds/btree/layout.h"
#include "farmem/ds/btree/served.h"
#include "farmem/ds/common/kv_block.h"
#include "farmem/ds/service.h"
#include "farmem/fabric/wire.h"

namespace farmem::ds::btree {
namespace {

constexpr uint64_t kRegionBytes = 1 << 20;
constexpr uint32_t kPage = 1024;
constexpr uint64_t kTree = 0x5EED;
constexpr uint16_t kNode = 3;
constexpr uint64_t kRoot = 8192;  // level 1: [-inf, "m") -> kLeftLeaf, ["m", +inf) -> kRightLeaf
constexpr uint64_t kLeftLeaf = 16384;
constexpr uint64_t kRightLeaf = 24576;
constexpr uint64_t kBlockAt = 65536;

uint64_t here(uint64_t offset) { return GlobalAddress(kNode, offset).pack(); }

struct Reply {
  ServedScanResult r{};
  std::vector<std::pair<std::string, std::string>> records;
  std::string next_key;
  std::string index;  // the level-1 image, if any
};

class BtreeProceduresTest : public ::testing::Test {
 protected:
  BtreeProceduresTest() {
    for (const auto& p : make_ds_service()->procedures()) EXPECT_TRUE(table_.add(p).ok());
    std::vector<std::string> left, right;
    for (char c = 'a'; c < 'm'; ++c) left.push_back(leaf_entry(std::string(1, c), value_of(c)));
    for (char c = 'm'; c <= 'z'; ++c) right.push_back(leaf_entry(std::string(1, c), value_of(c)));
    write_leaf(kLeftLeaf, left, "", "m", here(kRightLeaf));
    write_leaf(kRightLeaf, right, "m", "", 0);
    PageDraft root;
    root.level = 1;
    root.tree_id = kTree;
    root.child0 = here(kLeftLeaf);
    const std::string sep = internal_entry("m", here(kRightLeaf));
    root.entries = {sep};
    write(kRoot, root);
  }
  static std::string value_of(char c) { return std::string(3, c); }
  void write(uint64_t at, const PageDraft& d) {
    d.encode(reinterpret_cast<char*>(region_.data() + at), kPage);
  }
  void write_leaf(uint64_t at, const std::vector<std::string>& entries, std::string_view low,
                  std::string_view high, uint64_t sibling, uint8_t flags = 0) {
    PageDraft d;
    d.tree_id = kTree;
    d.flags = flags;
    d.sibling = sibling;
    d.low_infinite = low.empty();
    d.high_infinite = high.empty();
    d.low = low;
    d.high = high;
    for (const auto& e : entries) d.entries.push_back(e);
    write(at, d);
  }
  Result<Reply> scan(uint64_t page, std::string_view from, std::string_view to, uint32_t limit,
                     uint16_t flags = 0, bool durable = false) {
    ServedScanArgs a{page,
                     kTree,
                     kPage,
                     limit,
                     kNode,
                     static_cast<uint16_t>(from.size()),
                     static_cast<uint16_t>(to.size()),
                     flags};
    args_.assign(reinterpret_cast<const char*>(&a), sizeof(a));
    args_.append(from);
    args_.append(to);
    out_.assign(out_.size(), 0);
    memnode::ProcedureCall c{region_.data(), kRegionBytes,
                             durable,        reinterpret_cast<const uint8_t*>(args_.data()),
                             args_.size(),   reinterpret_cast<uint8_t*>(out_.data()),
                             capacity_};
    auto n = table_.find(kProcBtreeScan)->fn(c);
    if (!n.ok()) return n.status();
    return parse(*n);
  }
  Reply parse(size_t n) const {
    const char* p = reinterpret_cast<const char*>(out_.data());
    Reply rep;
    std::memcpy(&rep.r, p, sizeof(rep.r));
    size_t at = sizeof(rep.r);
    for (uint32_t i = 0; i < rep.r.records; ++i) {
      ServedRecordHeader h;
      std::memcpy(&h, p + at, sizeof(h));
      at += sizeof(h);
      rep.records.emplace_back(std::string(p + at, h.key_bytes),
                               std::string(p + at + h.key_bytes, h.value_bytes));
      at += h.key_bytes + h.value_bytes;
    }
    rep.next_key.assign(p + at, rep.r.next_key_bytes);
    at += rep.r.next_key_bytes;
    if (rep.r.index_page != 0) {
      rep.index.assign(p + at, kPage);
      at += kPage;
    }
    EXPECT_EQ(at, n);
    return rep;
  }
  static std::string keys(const Reply& r) {
    std::string k;
    for (const auto& [key, value] : r.records) {
      EXPECT_EQ(value, value_of(key[0]));
      k += key;
    }
    return k;
  }
  ServedScanOutcome outcome(const Reply& r) const {
    return static_cast<ServedScanOutcome>(r.r.outcome);
  }

  std::vector<uint8_t> region_ = std::vector<uint8_t>(kRegionBytes, 0);
  memnode::ProcedureTable table_;
  std::string args_;
  std::vector<uint64_t> out_ = std::vector<uint64_t>(1024);
  size_t capacity_ = 1024 * 8;
};

TEST_F(BtreeProceduresTest, WalksDownAndAlongTheLeavesReturningTheLevelOnePage) {
  auto rep = scan(kRoot, "", "", 0, kScanWantIndex);
  ASSERT_TRUE(rep.ok()) << rep.status().to_string();
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kDone);
  EXPECT_EQ(keys(*rep), "abcdefghijklmnopqrstuvwxyz");
  EXPECT_EQ(rep->r.pages, 3u);
  EXPECT_EQ(rep->r.hops, 0u);
  EXPECT_EQ(rep->r.index_page, here(kRoot));
  EXPECT_EQ(std::memcmp(rep->index.data(), region_.data() + kRoot, kPage), 0);
  // From a key, to a bound, under a limit; without kScanWantIndex no image comes back.
  rep = scan(kRoot, "k", "p", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(keys(*rep), "klmno");
  EXPECT_EQ(rep->r.index_page, 0u);
  rep = scan(kLeftLeaf, "j", "", 4);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kDone);
  EXPECT_EQ(keys(*rep), "jklm");
  // A start page that split since the hint was taken: moved right, counted as a hop.
  rep = scan(kLeftLeaf, "q", "s", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(keys(*rep), "qr");
  EXPECT_EQ(rep->r.hops, 1u);
  // Past the last key.
  rep = scan(kRoot, "zz", "", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kDone);
  EXPECT_TRUE(rep->records.empty());
}

TEST_F(BtreeProceduresTest, APageOnAnotherNodeEndsTheWalkWithWhereToGoOn) {
  const uint64_t elsewhere = GlobalAddress(kNode + 1, 4096).pack();
  write_leaf(kLeftLeaf, {leaf_entry("a", value_of('a')), leaf_entry("b", value_of('b'))}, "", "m",
             elsewhere);
  auto rep = scan(kRoot, "", "", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kElsewhere);
  EXPECT_EQ(keys(*rep), "ab");
  EXPECT_EQ(rep->next_key, "m");
  EXPECT_EQ(rep->r.next_page, elsewhere);
}

TEST_F(BtreeProceduresTest, AFullSlotStopsAtTheFirstRecordItCouldNotTake) {
  // Room for the result, the reserve (a largest key) and three 8-byte records.
  capacity_ = sizeof(ServedScanResult) + kMaxKeyBytes + 3 * 8;
  auto rep = scan(kLeftLeaf, "c", "", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kFull);
  EXPECT_EQ(keys(*rep), "cde");
  EXPECT_EQ(rep->next_key, "f");
  EXPECT_EQ(rep->r.next_page, here(kLeftLeaf));
  // A slot that cannot hold the reserve is refused.
  capacity_ = sizeof(ServedScanResult) + kMaxKeyBytes - 8;
  EXPECT_EQ(scan(kLeftLeaf, "c", "", 0).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(BtreeProceduresTest, PagesTheNodeCannotTrustSendTheClientBack) {
  // Torn: the checksum fails.
  region_[kRightLeaf + 100] ^= 0xFF;
  auto rep = scan(kRoot, "c", "", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kTorn);
  EXPECT_EQ(keys(*rep), "cdefghijkl");
  EXPECT_EQ(rep->next_key, "m");
  region_[kRightLeaf + 100] ^= 0xFF;
  // Mid-write (redo word set): fine on a volatile node, handed back on a durable one.
  uint64_t redo = here(kBlockAt);
  std::memcpy(region_.data() + kRightLeaf + kRedoWordAt, &redo, 8);
  rep = scan(kRightLeaf, "x", "", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(keys(*rep), "xyz");
  rep = scan(kRightLeaf, "x", "", 0, 0, /*durable=*/true);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kTorn);
  EXPECT_EQ(rep->next_key, "x");
  // Dead, of another tree, or not covering the key (a stale pointer): locate again.
  write_leaf(kRightLeaf, {}, "m", "", 0, kPageDead);
  rep = scan(kRightLeaf, "x", "", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kRestart);
  EXPECT_EQ(rep->next_key, "x");
  rep = scan(kLeftLeaf + 1024, "x", "", 0);  // zeros: no page of this tree
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kRestart);
  write_leaf(kRightLeaf, {leaf_entry("x", value_of('x'))}, "w", "", 0);
  rep = scan(kRightLeaf, "m", "", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kRestart);
}

TEST_F(BtreeProceduresTest, OutOfPlaceValuesAreReadWhereTheyLie) {
  std::string block;
  encode_kv_block("b", "a long value", 1, &block);
  std::memcpy(region_.data() + kBlockAt, block.data(), block.size());
  const std::string big = out_of_place_entry("b", here(kBlockAt), 12);
  write_leaf(kLeftLeaf, {leaf_entry("a", value_of('a')), big, leaf_entry("c", value_of('c'))}, "",
             "m", here(kRightLeaf));
  auto rep = scan(kLeftLeaf, "", "d", 0);
  ASSERT_TRUE(rep.ok());
  ASSERT_EQ(rep->records.size(), 3u);
  EXPECT_EQ(rep->records[1], std::make_pair(std::string("b"), std::string("a long value")));
  // A block reused by another key since (or on another node): the client reads from "b".
  encode_kv_block("q", "a long value", 1, &block);
  std::memcpy(region_.data() + kBlockAt, block.data(), block.size());
  rep = scan(kLeftLeaf, "", "d", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kTorn);
  EXPECT_EQ(rep->records.size(), 1u);
  EXPECT_EQ(rep->next_key, "b");
}

TEST_F(BtreeProceduresTest, TheWalkIsBoundedByItsPageBudget) {
  // A chain of single-key leaves longer than one call may read.
  const uint32_t n = kMaxServedScanPages + 6;
  std::vector<std::string> keys_at(n);
  for (uint32_t i = 0; i < n; ++i) keys_at[i] = "k" + std::to_string(1000 + i);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t at = kBlockAt + uint64_t{i} * kPage;
    write_leaf(at, {leaf_entry(keys_at[i], "v")}, i == 0 ? "" : keys_at[i],
               i + 1 == n ? "" : keys_at[i + 1], i + 1 == n ? 0 : here(at + kPage));
  }
  auto rep = scan(kBlockAt, "", "", 0);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(outcome(*rep), ServedScanOutcome::kFull);
  EXPECT_EQ(rep->r.pages, kMaxServedScanPages);
  EXPECT_EQ(rep->records.size(), kMaxServedScanPages);
  EXPECT_EQ(rep->next_key, keys_at[kMaxServedScanPages]);
  EXPECT_EQ(rep->r.next_page, here(kBlockAt + uint64_t{kMaxServedScanPages} * kPage));
}

TEST_F(BtreeProceduresTest, MalformedArgumentsAreRefused) {
  EXPECT_EQ(scan(100, "", "", 0).status().code(), StatusCode::kOutOfRange);  // in the header
  EXPECT_EQ(scan(kRegionBytes - 512, "", "", 0).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(scan(kRoot + 4, "", "", 0).status().code(), StatusCode::kOutOfRange);  // unaligned
  EXPECT_EQ(scan(kRoot, "", "", 0, 0x80).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scan(kRoot, std::string(kMaxKeyBytes + 1, 'k'), "", 0).status().code(),
            StatusCode::kInvalidArgument);
  ServedScanArgs a{kRoot, kTree, 1000, 0, kNode, 0, 0, 0};  // not a power of two
  memnode::ProcedureCall c{region_.data(), kRegionBytes,
                           false,          reinterpret_cast<const uint8_t*>(&a),
                           sizeof(a),      reinterpret_cast<uint8_t*>(out_.data()),
                           capacity_};
  EXPECT_EQ(table_.find(kProcBtreeScan)->fn(c).status().code(), StatusCode::kInvalidArgument);
  c.args_bytes = sizeof(a) - 1;
  EXPECT_EQ(table_.find(kProcBtreeScan)->fn(c).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farmem::ds::btree
