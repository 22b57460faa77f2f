// Unit tests for memnode::RootTable.
#include "farmem/memnode/root_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "farmem/client/global_address.h"
#include "farmem/fabric/wire.h"

namespace farmem::memnode {
namespace {

TEST(RootTableTest, PublishedNameCanBeLookedUp) {
  RootTable t;
  uint64_t addr = GlobalAddress(2, 4096).pack();
  ASSERT_TRUE(t.publish("btree", addr, false).ok());
  Result<uint64_t> r = t.lookup("btree");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, addr);
  EXPECT_EQ(t.size(), 1u);
}

TEST(RootTableTest, LookupOfUnknownNameIsNotFound) {
  RootTable t;
  ASSERT_TRUE(t.publish("a", 1, false).ok());
  Result<uint64_t> r = t.lookup("b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("'b'"), std::string_view::npos);
}

TEST(RootTableTest, PublishingATakenNameWithoutReplaceIsAlreadyExists) {
  RootTable t;
  ASSERT_TRUE(t.publish("queue", 100, false).ok());
  Status s = t.publish("queue", 200, false);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("queue"), std::string_view::npos);
  EXPECT_EQ(*t.lookup("queue"), 100u);  // the old value stays
  EXPECT_EQ(t.size(), 1u);
}

TEST(RootTableTest, ReplaceOverwritesAnExistingName) {
  RootTable t;
  ASSERT_TRUE(t.publish("queue", 100, false).ok());
  ASSERT_TRUE(t.publish("queue", 200, true).ok());
  EXPECT_EQ(*t.lookup("queue"), 200u);
  EXPECT_EQ(t.size(), 1u);
}

TEST(RootTableTest, ReplaceOfAMissingNameCreatesIt) {
  RootTable t;
  ASSERT_TRUE(t.publish("fresh", 7, true).ok());
  EXPECT_EQ(*t.lookup("fresh"), 7u);
}

TEST(RootTableTest, RemoveDeletesTheNameAndFreesItForReuse) {
  RootTable t;
  ASSERT_TRUE(t.publish("x", 1, false).ok());
  ASSERT_TRUE(t.publish("y", 2, false).ok());
  ASSERT_TRUE(t.remove("x").ok());
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.lookup("x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*t.lookup("y"), 2u);
  ASSERT_TRUE(t.publish("x", 3, false).ok());  // no AlreadyExists after removal
  EXPECT_EQ(*t.lookup("x"), 3u);
}

TEST(RootTableTest, RemovingAnUnknownNameIsNotFound) {
  RootTable t;
  EXPECT_EQ(t.remove("ghost").code(), StatusCode::kNotFound);
  ASSERT_TRUE(t.publish("ghost", 1, false).ok());
  ASSERT_TRUE(t.remove("ghost").ok());
  EXPECT_EQ(t.remove("ghost").code(), StatusCode::kNotFound);
}

TEST(RootTableTest, NamesOfOneTo128BytesAreAccepted) {
  ASSERT_EQ(wire::kMaxRootNameBytes, 128u);
  RootTable t;
  std::string longest(128, 'n');
  ASSERT_TRUE(t.publish("a", 1, false).ok());
  ASSERT_TRUE(t.publish(longest, 2, false).ok());
  EXPECT_EQ(*t.lookup("a"), 1u);
  EXPECT_EQ(*t.lookup(longest), 2u);
  EXPECT_TRUE(t.remove(longest).ok());
  EXPECT_TRUE(RootTable::check_name("a").ok());
  EXPECT_TRUE(RootTable::check_name(longest).ok());
}

TEST(RootTableTest, EmptyAndOverlongNamesAreInvalidEverywhere) {
  RootTable t;
  std::string too_long(129, 'n');
  for (const std::string& bad : {std::string(), too_long}) {
    SCOPED_TRACE(bad.size());
    EXPECT_EQ(RootTable::check_name(bad).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.publish(bad, 1, false).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.publish(bad, 1, true).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.lookup(bad).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.remove(bad).code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(t.size(), 0u);
  EXPECT_NE(RootTable::check_name(too_long).message().find("129"), std::string_view::npos);
}

TEST(RootTableTest, NamesAreComparedAsExactBytes) {
  RootTable t;
  ASSERT_TRUE(t.publish("Root", 1, false).ok());
  ASSERT_TRUE(t.publish("root", 2, false).ok());
  ASSERT_TRUE(t.publish("root ", 3, false).ok());
  std::string with_nul("ro\0ot", 5);
  ASSERT_TRUE(t.publish(with_nul, 4, false).ok());
  EXPECT_EQ(*t.lookup("Root"), 1u);
  EXPECT_EQ(*t.lookup("root"), 2u);
  EXPECT_EQ(*t.lookup("root "), 3u);
  EXPECT_EQ(*t.lookup(with_nul), 4u);
  EXPECT_EQ(t.lookup("ro").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.size(), 4u);
}

TEST(RootTableTest, TableIsBoundedAtMaxRoots) {
  RootTable t;
  for (size_t i = 0; i < RootTable::kMaxRoots; ++i) {
    ASSERT_TRUE(t.publish("r" + std::to_string(i), i, false).ok()) << i;
  }
  EXPECT_EQ(t.size(), RootTable::kMaxRoots);
  Status full = t.publish("one-too-many", 1, false);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  // Replacing an existing name still works when the table is full.
  EXPECT_TRUE(t.publish("r0", 42, true).ok());
  EXPECT_EQ(*t.lookup("r0"), 42u);
  // Removing one makes room for one.
  ASSERT_TRUE(t.remove("r1").ok());
  EXPECT_TRUE(t.publish("one-too-many", 1, false).ok());
  EXPECT_EQ(t.size(), RootTable::kMaxRoots);
}

}  // namespace
}  // namespace farmem::memnode
