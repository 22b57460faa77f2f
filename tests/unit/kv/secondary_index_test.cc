// Unit tests of the secondary index and find (docs/formats/kv.md "Find").
#include "kv/service/secondary_index.h"

#include <gtest/gtest.h>

#include <string>

namespace farmem::kv::service {
namespace {

TEST(KvSecondaryIndexTest, FindsExactPrefixRegexAndNextFromAPosition) {
  SecondaryIndex s;
  for (const char* k : {"b", "a", "ab", "abc", "b2", "c"}) s.insert(k);  // a ab abc b b2 c
  EXPECT_EQ(s.size(), 6u);
  auto f = s.find("next:", 2);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->key, "abc");
  EXPECT_EQ(f->position, 2u);
  EXPECT_EQ(s.find("next:", 6).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.find("exact:b2", 0)->position, 4u);
  EXPECT_EQ(s.find("exact:b2", 5).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.find("exact:zz", 0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.find("prefix:ab", 0)->key, "ab");
  EXPECT_EQ(s.find("prefix:ab", 2)->key, "abc");
  EXPECT_EQ(s.find("prefix:ab", 3).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.find("prefix:", 5)->key, "c");
  EXPECT_EQ(s.find("regex:b.*", 0)->key, "b");
  EXPECT_EQ(s.find("regex:b.*", 4)->key, "b2");
  EXPECT_EQ(s.find("regex:b", 0)->position, 3u);  // whole-key match: not "b2"
  EXPECT_EQ(s.find("regex:[", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.find("other:x", 0).status().code(), StatusCode::kInvalidArgument);
  s.erase("ab");
  EXPECT_EQ(s.find("prefix:ab", 0)->key, "abc");
  EXPECT_EQ(s.find("prefix:ab", 0)->position, 1u);
}

TEST(KvSecondaryIndexTest, ARegexScanStopsAfterItsBudgetAndSaysWhereToGoOn) {
  SecondaryIndex s;
  for (int i = 0; i < 10000; ++i) s.insert("key" + std::to_string(100000 + i));
  s.insert("zzz-match");
  uint64_t pos = 0;
  int calls = 0;
  while (true) {
    auto f = s.find("regex:zzz-.*", pos);
    ASSERT_TRUE(f.ok());
    ++calls;
    if (!f->more) {
      EXPECT_EQ(f->key, "zzz-match");
      EXPECT_EQ(f->position, 10000u);
      break;
    }
    EXPECT_TRUE(f->key.empty());
    EXPECT_EQ(f->position, pos + SecondaryIndex::kMaxExamined);
    pos = f->position;
  }
  EXPECT_EQ(calls, 3);
  // Pathological patterns are linear-time in RE2; a too-big automaton is refused.
  auto p = s.find("regex:(a*)*b", 0);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->more);
  EXPECT_EQ(s.find("regex:((((a{100}){100}){100}){100})", 0).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farmem::kv::service
