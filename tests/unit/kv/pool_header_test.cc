// The durable pool's header block (src/kv/service/pool_header.h): what is written is read back
// exactly, whatever bytes a client put in its ADO settings; another object's block, a damaged
// checksum or damaged settings are refused, and settings that do not fit are an error.
#include "kv/service/pool_header.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace farmem::kv::service {
namespace {

PoolMeta sample() {
  PoolMeta m;
  m.name = "pool-1";
  m.object_id = (uint64_t{1} << 63) | 7;
  m.capacity_bytes = 1 << 20;
  m.table_offset = 4096;
  m.table_slots = 64;
  m.sequence = 3;
  m.flags = kPoolHeaderIndex;
  m.ado.plugins = {"libfarmem_ado_counter.so", std::string("odd\xff\x80name", 10)};
  m.ado.params = {{"k", std::string("v\0\xfe", 3)}, {std::string("\xc3(", 2), ""}};
  m.ado.post_get = true;
  m.ado.post_erase = true;
  return m;
}

TEST(KvPoolHeaderTest, AnyBytesInTheSettingsComeBackExactly) {
  std::vector<uint8_t> block(kPoolHeaderBlockBytes, 0xA5);
  const PoolMeta m = sample();
  auto bytes = write_pool_header(block.data(), m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto r = read_pool_header(block.data(), m.object_id);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->name, m.name);
  EXPECT_EQ(r->capacity_bytes, m.capacity_bytes);
  EXPECT_EQ(r->table_offset, m.table_offset);
  EXPECT_EQ(r->table_slots, m.table_slots);
  EXPECT_EQ(r->sequence, m.sequence);
  EXPECT_EQ(r->flags, m.flags);
  EXPECT_EQ(r->ado.plugins, m.ado.plugins);
  EXPECT_EQ(r->ado.params, m.ado.params);
  EXPECT_FALSE(r->ado.post_put);
  EXPECT_TRUE(r->ado.post_get);
  EXPECT_TRUE(r->ado.post_erase);
}

TEST(KvPoolHeaderTest, DamageAndForeignBlocksAreRefused) {
  std::vector<uint8_t> block(kPoolHeaderBlockBytes, 0);
  const PoolMeta m = sample();
  auto bytes = write_pool_header(block.data(), m);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(read_pool_header(block.data(), m.object_id + 1).status().code(), StatusCode::kNotFound);
  for (uint64_t at : {uint64_t{24}, uint64_t{80}, *bytes - 1}) {  // fixed part, name, settings
    std::vector<uint8_t> bad = block;
    bad[at] ^= 1;
    EXPECT_EQ(read_pool_header(bad.data(), m.object_id).status().code(), StatusCode::kProtocolError)
        << "byte " << at;
  }
}

TEST(KvPoolHeaderTest, SettingsThatDoNotFitAreAnError) {
  std::vector<uint8_t> block(kPoolHeaderBlockBytes, 0);
  PoolMeta m = sample();
  m.ado.params["big"] = std::string(kPoolHeaderBlockBytes, 'x');
  EXPECT_EQ(write_pool_header(block.data(), m).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace farmem::kv::service
