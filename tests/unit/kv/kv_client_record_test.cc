// One-sided record validation (kv/record.h, kv.md "Records"): a copy is accepted only as
// the live incarnation of the expected version with a matching checksum and key.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "farmem/kv/record.h"

namespace farmem::kv {
namespace {

namespace w = wire;

std::vector<uint8_t> make_record(std::string_view key, std::string_view value, uint64_t version,
                                 w::KvRecordState state = w::kRecordLive) {
  w::KvRecordHeader h{};
  h.state = w::record_state(version, state);
  h.version = version;
  h.key_bytes = static_cast<uint32_t>(key.size());
  h.value_bytes = static_cast<uint32_t>(value.size());
  h.checksum = record_checksum(version, h.key_bytes, h.value_bytes, key.data(), value.data());
  std::vector<uint8_t> r(record_bytes(key.size(), value.size()));
  std::memcpy(r.data(), &h, sizeof(h));
  std::memcpy(r.data() + sizeof(h), key.data(), key.size());
  if (!value.empty()) std::memcpy(r.data() + sizeof(h) + key.size(), value.data(), value.size());
  return r;
}

// Checks a copy of `rec` (the check clobbers its copy).
bool accepts(std::vector<uint8_t> rec, std::string_view key, uint64_t version,
             std::string* value = nullptr) {
  uint64_t vb = 0;
  size_t at = check_record_copy(rec.data(), rec.size(), key, version, &vb);
  if (at != 0 && value != nullptr)
    value->assign(reinterpret_cast<const char*>(rec.data() + at), vb);
  return at != 0;
}

TEST(KvClientRecordTest, AcceptsTheLiveIncarnationOfTheExpectedVersion) {
  std::string v;
  EXPECT_TRUE(accepts(make_record("apple", "red", 7), "apple", 7, &v));
  EXPECT_EQ(v, "red");
  EXPECT_TRUE(accepts(make_record("k", "", 1), "k", 1, &v));  // 0-byte value
  EXPECT_EQ(v, "");
  const std::string big_key(w::kMaxKeyBytes, 'k'), big_value(100000, 'v');
  EXPECT_TRUE(accepts(make_record(big_key, big_value, 1ull << 40), big_key, 1ull << 40, &v));
  EXPECT_EQ(v, big_value);
}

TEST(KvClientRecordTest, RejectsOtherStatesVersionsKeysAndSizes) {
  EXPECT_FALSE(accepts(make_record("apple", "red", 7, w::kRecordWriting), "apple", 7));
  EXPECT_FALSE(accepts(make_record("apple", "red", 7, w::kRecordLocked), "apple", 7));
  EXPECT_FALSE(accepts(make_record("apple", "red", 7, w::kRecordDead), "apple", 7));
  EXPECT_FALSE(accepts(make_record("apple", "red", 8), "apple", 7));   // a newer incarnation
  EXPECT_FALSE(accepts(make_record("apple", "red", 7), "apply", 7));   // same length, other key
  EXPECT_FALSE(accepts(make_record("apple", "red", 7), "apples", 7));  // other length
  auto rec = make_record("apple", "red", 7);
  rec.pop_back();  // the cached size does not match the record
  EXPECT_FALSE(accepts(rec, "apple", 7));
  rec = make_record("apple", "red", 7);
  rec.push_back(0);
  EXPECT_FALSE(accepts(rec, "apple", 7));
  EXPECT_FALSE(accepts(std::vector<uint8_t>(16, 0), "apple", 7));  // shorter than a header
  // Header version and state disagree (a state word of one incarnation, a body of another).
  rec = make_record("apple", "red", 7);
  uint64_t other = 9;
  std::memcpy(rec.data() + offsetof(w::KvRecordHeader, version), &other, 8);
  EXPECT_FALSE(accepts(rec, "apple", 7));
}

TEST(KvClientRecordTest, RejectsTornCopiesByChecksum) {
  auto rec = make_record("apple", "crimson", 7);
  rec.back() ^= 1;  // a value byte of a later write
  EXPECT_FALSE(accepts(rec, "apple", 7));
  // A copy taken while a value was rewritten (half old, half new bytes behind the old
  // header): the checksum catches the mix.
  auto a = make_record("apple", "AAAAAAAA", 7);
  auto b = make_record("apple", "BBBBBBBB", 7);
  std::vector<uint8_t> torn(a.begin(), a.begin() + 32 + 5 + 4);
  torn.insert(torn.end(), b.begin() + torn.size(), b.end());
  EXPECT_FALSE(accepts(torn, "apple", 7));
  // The checksum field itself torn.
  rec = make_record("apple", "crimson", 7);
  rec[24] ^= 0x80;
  EXPECT_FALSE(accepts(rec, "apple", 7));
}

TEST(KvClientRecordTest, ChecksumCoversVersionSizesKeyAndValue) {
  const uint64_t base = record_checksum(3, 1, 1, "k", "v");
  EXPECT_NE(base, record_checksum(3, 1, 1, "k", "w"));
  EXPECT_NE(base, record_checksum(3, 1, 1, "j", "v"));
  EXPECT_NE(base, record_checksum(4, 1, 1, "k", "v"));
  // The lengths are hashed as well as the bytes: "k"+"vv" is not "kv"+"v".
  EXPECT_NE(record_checksum(3, 1, 2, "k", "vv"), record_checksum(3, 2, 1, "kv", "v"));
}

}  // namespace
}  // namespace farmem::kv
