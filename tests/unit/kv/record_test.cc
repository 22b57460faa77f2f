// Unit tests of the record format (docs/formats/kv.md "Records") as the server writes it
// (kv/service/record.h) and a one-sided reader checks it (farmem/kv/record.h, shared with the
// client library).
#include "kv/service/record.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <string>
#include <vector>

namespace farmem::kv::service {
namespace {

namespace w = farmem::kv::wire;

std::vector<uint8_t> make(uint64_t version, const std::string& key, const std::string& value) {
  std::vector<uint8_t> r(record_alloc_bytes(key.size(), value.size()), 0xEE);
  write_record(r.data(), version, key, value.data(), static_cast<uint32_t>(value.size()));
  return r;
}

TEST(KvRecordTest, RecordsAreSixtyFourByteUnits) {
  EXPECT_EQ(record_alloc_bytes(1, 0), 64u);
  EXPECT_EQ(record_alloc_bytes(32, 0), 64u);
  EXPECT_EQ(record_alloc_bytes(32, 1), 128u);
  EXPECT_EQ(record_alloc_bytes(8, 1000), 1088u);
}

TEST(KvRecordTest, AWrittenRecordIsWritingUntilPublished) {
  auto r = make(42, "key", "value");
  w::KvRecordHeader h;
  std::memcpy(&h, r.data(), sizeof(h));
  EXPECT_EQ(h.state, w::record_state(42, w::kRecordWriting));
  EXPECT_EQ(h.version, 42u);
  EXPECT_EQ(h.key_bytes, 3u);
  EXPECT_EQ(h.value_bytes, 5u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(r.data()) + 32, 8), "keyvalue");
  EXPECT_FALSE(record_valid(r.data(), r.size(), "key"));
  store_state(r.data(), w::record_state(42, w::kRecordLive));
  EXPECT_TRUE(record_valid(r.data(), r.size(), "key"));
  EXPECT_TRUE(record_valid(r.data(), 32 + 8, "key"));   // exactly header + key + value
  EXPECT_FALSE(record_valid(r.data(), 32 + 7, "key"));  // a short copy
  EXPECT_EQ(state_kind(load_state(r.data())), w::kRecordLive);
}

TEST(KvRecordTest, TheChecksumIsXxh3OverVersionLengthsKeyAndValue) {
  auto r = make(7, "ab", "cde");
  std::vector<uint8_t> in(r.begin() + 8, r.begin() + 24);
  in.insert(in.end(), {'a', 'b', 'c', 'd', 'e'});
  w::KvRecordHeader h;
  std::memcpy(&h, r.data(), sizeof(h));
  EXPECT_EQ(h.checksum, XXH3_64bits(in.data(), in.size()));
}

TEST(KvRecordTest, TornWrongOrDeadCopiesAreRejected) {
  auto r = make(9, "key", std::string(200, 'v'));
  store_state(r.data(), w::record_state(9, w::kRecordLive));
  ASSERT_TRUE(record_valid(r.data(), r.size(), "key"));
  EXPECT_FALSE(record_valid(r.data(), r.size(), "kez"));
  EXPECT_FALSE(record_valid(r.data(), r.size(), "keys"));
  for (size_t at :
       {size_t{8}, size_t{16}, size_t{20}, size_t{24}, size_t{33}, size_t{100}, size_t{234}}) {
    auto t = r;
    t[at] ^= 0x10;
    EXPECT_FALSE(record_valid(t.data(), t.size(), "key")) << "byte " << at;
  }
  // A live state of another version (a body of one incarnation, a state of another).
  auto t = r;
  store_state(t.data(), w::record_state(10, w::kRecordLive));
  EXPECT_FALSE(record_valid(t.data(), t.size(), "key"));
  for (auto s : {w::kRecordWriting, w::kRecordLocked, w::kRecordDead}) {
    store_state(t.data(), w::record_state(9, s));
    EXPECT_FALSE(record_valid(t.data(), t.size(), "key"));
  }
  // Lengths that run past the copy.
  t = r;
  const uint32_t huge = 1u << 30;
  std::memcpy(t.data() + 20, &huge, 4);
  EXPECT_FALSE(record_valid(t.data(), t.size(), "key"));
}

TEST(KvRecordTest, SealTakesANewVersionAfterAnInPlaceWrite) {
  auto r = make(11, "key", "hello");
  store_state(r.data(), w::record_state(11, w::kRecordLocked));
  std::memcpy(r.data() + 32 + 3, "HELLO", 5);
  EXPECT_FALSE(record_valid(r.data(), r.size(), "key"));
  seal(r.data(), 12, 3, 5);
  store_state(r.data(), w::record_state(12, w::kRecordLive));
  EXPECT_TRUE(record_valid(r.data(), r.size(), "key"));
  w::KvRecordHeader h;
  std::memcpy(&h, r.data(), sizeof(h));
  EXPECT_EQ(h.version, 12u);
}

TEST(KvRecordTest, TheClientsCheckAcceptsWhatTheServerWrote) {
  auto r = make(21, "key", std::string(100, 'v'));
  store_state(r.data(), w::record_state(21, w::kRecordLive));
  const size_t exact = record_bytes(3, 100);
  std::vector<uint8_t> copy(r.begin(), r.begin() + exact);
  uint64_t value_bytes = 0;
  EXPECT_EQ(check_record_copy(copy.data(), copy.size(), "key", 21, &value_bytes), 32u + 3);
  EXPECT_EQ(value_bytes, 100u);
  copy.assign(r.begin(), r.begin() + exact);
  EXPECT_EQ(check_record_copy(copy.data(), copy.size(), "key", 22, &value_bytes), 0u);
}

TEST(KvRecordTest, AValueLeftForTheWriterIsZeroed) {
  std::vector<uint8_t> r(record_alloc_bytes(3, 100), 0xEE);
  write_record(r.data(), 5, "key", nullptr, 100);
  for (size_t i = 35; i < 135; ++i) ASSERT_EQ(r[i], 0) << i;
  seal(r.data(), 5, 3, 100);
  store_state(r.data(), w::record_state(5, w::kRecordLive));
  EXPECT_TRUE(record_valid(r.data(), r.size(), "key"));
}

// The header's covered bytes are the named span, and the checksum is the hash of exactly them,
// then key and value.
TEST(KvRecordTest, TheChecksumCoversTheNamedHeaderSpan) {
  const auto r = make(9, "key", "value");
  EXPECT_EQ(w::kRecordSummedBegin, offsetof(w::KvRecordHeader, version));
  EXPECT_EQ(w::kRecordSummedEnd, offsetof(w::KvRecordHeader, checksum));
  std::vector<uint8_t> summed(r.begin() + w::kRecordSummedBegin, r.begin() + w::kRecordSummedEnd);
  summed.insert(summed.end(), r.begin() + sizeof(w::KvRecordHeader),
                r.begin() + record_bytes(3, 5));
  w::KvRecordHeader h;
  std::memcpy(&h, r.data(), sizeof(h));
  EXPECT_EQ(XXH3_64bits(summed.data(), summed.size()), h.checksum);
  EXPECT_EQ(state_kind(h.state), w::kRecordWriting);
  EXPECT_EQ(h.state >> w::kRecordStateBits, 9u);
}

TEST(KvRecordDeathTest, AVersionAStateWordCannotCarryIsAnInvariantFailure) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint8_t> r(record_alloc_bytes(3, 0), 0);
  EXPECT_DEATH(write_record(r.data(), 0, "key", "", 0), "record versions");
  EXPECT_DEATH(write_record(r.data(), w::kMaxRecordVersion + 1, "key", "", 0), "record versions");
  EXPECT_DEATH(seal(r.data(), 0, 3, 0), "record versions");
}

}  // namespace
}  // namespace farmem::kv::service
