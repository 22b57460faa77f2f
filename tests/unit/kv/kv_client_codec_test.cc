// The kv client's wire codec (kv/codec.h) against docs/formats/kv.md: kOps requests byte by
// byte, kOps replies (values, kReplyNeedsLocate, malformed replies), the other replies.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "farmem/kv/codec.h"

namespace farmem::kv {
namespace {

namespace w = wire;

template <typename T>
void put_struct(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void put_padded(std::string* out, std::string_view bytes) {
  out->append(bytes);
  out->append(pad8(bytes.size()) - bytes.size(), '\0');
}
const uint8_t* u8(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

TEST(KvClientCodecTest, OpsRequestLaysOutEveryOperationAsKvMdSays) {
  OpsRequest r;
  r.reset(0x0100000200000003ull);
  EXPECT_EQ(r.bytes(), sizeof(w::KvOpsHeader));
  r.add(w::KvOp::kGet, 0, "abc", "ignored for gets");
  r.add(w::KvOp::kPut, w::kPutCreateOnly, "key1", "value");
  r.add(w::KvOp::kErase, 0, "12345678", "");
  ASSERT_EQ(r.count(), 3u);
  ASSERT_EQ(r.bytes(), 16u + (16 + 8) + (16 + 16) + (16 + 8));
  const uint8_t* p = r.data();
  w::KvOpsHeader h;
  std::memcpy(&h, p, sizeof(h));
  EXPECT_EQ(h.pool, 0x0100000200000003ull);
  EXPECT_EQ(h.count, 3u);
  EXPECT_EQ(h.reserved, 0u);
  w::KvOpRequest op;
  std::memcpy(&op, p + 16, sizeof(op));
  EXPECT_EQ(op.op, static_cast<uint8_t>(w::KvOp::kGet));
  EXPECT_EQ(op.key_bytes, 3u);
  EXPECT_EQ(op.value_bytes, 0u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(p + 32), 8), std::string("abc\0\0\0\0\0", 8));
  std::memcpy(&op, p + 40, sizeof(op));
  EXPECT_EQ(op.op, static_cast<uint8_t>(w::KvOp::kPut));
  EXPECT_EQ(op.flags, w::kPutCreateOnly);
  EXPECT_EQ(op.key_bytes, 4u);
  EXPECT_EQ(op.value_bytes, 5u);
  EXPECT_EQ(op.reserved, 0u);
  EXPECT_EQ(op.reserved2, 0u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(p + 56), 16),
            std::string("key1value\0\0\0\0\0\0\0", 16));
  std::memcpy(&op, p + 72, sizeof(op));
  EXPECT_EQ(op.op, static_cast<uint8_t>(w::KvOp::kErase));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(p + 88), 8), "12345678");
  r.reset(7);  // reusable
  EXPECT_EQ(r.count(), 0u);
  EXPECT_EQ(r.bytes(), sizeof(w::KvOpsHeader));
}

TEST(KvClientCodecTest, OpsRequestStopsAtTheOperationAndByteLimits) {
  OpsRequest r;
  r.reset(1);
  uint32_t n = 0;
  while (r.fits(8, 0, UINT32_MAX)) {
    r.add(w::KvOp::kGet, 0, "12345678", "");
    ++n;
  }
  EXPECT_EQ(n, w::kMaxOpsPerMessage);
  r.reset(1);
  EXPECT_FALSE(r.fits(8, 0, 0));  // max_ops 0: coalescing off after one op
  EXPECT_TRUE(r.fits(8, 0, 1));
  // One put as large as a message can carry, then nothing more.
  const size_t key = 100;
  const size_t value = w::kMaxRpcPayloadBytes - 16 - 16 - key;
  EXPECT_TRUE(put_fits_message(key, value));
  EXPECT_FALSE(put_fits_message(key, value + 1));
  EXPECT_TRUE(r.fits(key, value, UINT32_MAX));
  r.add(w::KvOp::kPut, 0, std::string(key, 'k'), std::string(value, 'v'));
  EXPECT_EQ(r.bytes(), w::kMaxRpcPayloadBytes);
  EXPECT_FALSE(r.fits(1, 0, UINT32_MAX));
}

struct ReplyOp {
  w::KvOpReply reply;
  std::string value;
  bool carries = false;  // an OK get's value follows
};

std::string reply_of(const std::vector<ReplyOp>& ops) {
  std::string out;
  put_struct(&out, w::KvOpsReplyHeader{static_cast<uint32_t>(ops.size()), 0});
  for (const auto& o : ops) {
    put_struct(&out, o.reply);
    if (o.carries) put_padded(&out, o.value);
  }
  return out;
}

w::KvOpReply op_reply(int32_t status, uint32_t flags, uint64_t value_bytes, uint64_t record = 0) {
  w::KvOpReply r{};
  r.status = status;
  r.flags = flags;
  r.value_bytes = value_bytes;
  r.record = record;
  r.version = record ? 9 : 0;
  r.record_bytes = record ? 64 : 0;
  return r;
}

TEST(KvClientCodecTest, OpsReplyReaderWalksValuesNeedsLocateAndErrors) {
  const std::string reply = reply_of({
      {op_reply(0, 0, 11, 4096), "hello world", true},
      {op_reply(0, w::kReplyNeedsLocate, 1 << 20, 8192), "", false},
      {op_reply(static_cast<int32_t>(StatusCode::kNotFound), 0, 0), "", false},
      {op_reply(0, w::kReplyExisted, 0, 4096), "", false},  // a put
      {op_reply(0, 0, 0, 128), "", true},                   // a get of an empty value
  });
  OpsReplyReader rd(u8(reply), reply.size());
  ASSERT_TRUE(rd.begin(5).ok());
  w::KvOpReply r;
  std::string_view v;
  ASSERT_TRUE(rd.next(w::KvOp::kGet, &r, &v).ok());
  EXPECT_EQ(v, "hello world");
  EXPECT_EQ(r.record, 4096u);
  ASSERT_TRUE(rd.next(w::KvOp::kGet, &r, &v).ok());
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(r.flags, w::kReplyNeedsLocate);
  EXPECT_EQ(r.value_bytes, 1u << 20);
  ASSERT_TRUE(rd.next(w::KvOp::kGet, &r, &v).ok());
  EXPECT_EQ(r.status, static_cast<int32_t>(StatusCode::kNotFound));
  ASSERT_TRUE(rd.next(w::KvOp::kPut, &r, &v).ok());
  EXPECT_EQ(r.flags, w::kReplyExisted);
  ASSERT_TRUE(rd.next(w::KvOp::kGet, &r, &v).ok());
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(r.record, 128u);

  OpsReplyReader wrong_count(u8(reply), reply.size());
  EXPECT_EQ(wrong_count.begin(4).code(), StatusCode::kProtocolError);
  // A value that runs past the end of the reply.
  const std::string cut = reply.substr(0, 8 + 40 + 4);
  OpsReplyReader short_value(u8(cut), cut.size());
  ASSERT_TRUE(short_value.begin(5).ok());
  EXPECT_EQ(short_value.next(w::KvOp::kGet, &r, &v).code(), StatusCode::kProtocolError);
  OpsReplyReader no_header(u8(reply), 4);
  EXPECT_EQ(no_header.begin(5).code(), StatusCode::kProtocolError);
  // More replies asked for than the message holds.
  const std::string one = reply_of({{op_reply(0, w::kReplyExisted, 0), "", false}});
  OpsReplyReader past(u8(one), one.size());
  ASSERT_TRUE(past.begin(1).ok());
  ASSERT_TRUE(past.next(w::KvOp::kPut, &r, &v).ok());
  EXPECT_EQ(past.next(w::KvOp::kPut, &r, &v).code(), StatusCode::kProtocolError);
}

TEST(KvClientCodecTest, RequestsCarryTheirFixedStructThenTheVariableParts) {
  std::string pr = encode_pool_request("users", 1 << 20, 1000, w::kPoolCreateOnly);
  ASSERT_EQ(pr.size(), sizeof(w::KvPoolRequest) + 5);
  w::KvPoolRequest p;
  std::memcpy(&p, pr.data(), sizeof(p));
  EXPECT_EQ(p.capacity_bytes, 1u << 20);
  EXPECT_EQ(p.expected_count, 1000u);
  EXPECT_EQ(p.flags, w::kPoolCreateOnly);
  EXPECT_EQ(p.name_bytes, 5u);
  EXPECT_EQ(pr.substr(sizeof(p)), "users");

  std::string loc = encode_locate(42, w::LocateMode::kWrite, 0, 10, 20, "k");
  w::KvLocateRequest l;
  ASSERT_EQ(loc.size(), sizeof(l) + 1);
  std::memcpy(&l, loc.data(), sizeof(l));
  EXPECT_EQ(l.pool, 42u);
  EXPECT_EQ(l.offset, 10u);
  EXPECT_EQ(l.length, 20u);
  EXPECT_EQ(l.key_bytes, 1u);
  EXPECT_EQ(l.mode, static_cast<uint8_t>(w::LocateMode::kWrite));
  EXPECT_EQ(l.reserved, 0u);

  std::string ado = encode_ado(3, w::kAdoCreateOnDemand, 64, "key", "val", "req!");
  w::KvAdoRequest a;
  ASSERT_EQ(ado.size(), sizeof(a) + 10);
  std::memcpy(&a, ado.data(), sizeof(a));
  EXPECT_EQ(a.flags, w::kAdoCreateOnDemand);
  EXPECT_EQ(a.value_size, 64u);
  EXPECT_EQ(a.key_bytes, 3u);
  EXPECT_EQ(a.value_bytes, 3u);
  EXPECT_EQ(a.request_bytes, 4u);
  EXPECT_EQ(ado.substr(sizeof(a)), "keyvalreq!");

  std::string f = encode_find(5, 77, "prefix:a");
  w::KvFindRequest fr;
  std::memcpy(&fr, f.data(), sizeof(fr));
  EXPECT_EQ(fr.start, 77u);
  EXPECT_EQ(fr.expression_bytes, 8u);
  EXPECT_EQ(f.substr(sizeof(fr)), "prefix:a");

  std::string at = encode_attribute(5, w::Attribute::kCrc32, "kk");
  w::KvAttributeRequest ar;
  std::memcpy(&ar, at.data(), sizeof(ar));
  EXPECT_EQ(ar.attribute, static_cast<uint32_t>(w::Attribute::kCrc32));
  EXPECT_EQ(ar.key_bytes, 2u);

  std::string c = encode_configure(5, "AddIndex::VolatileTree");
  w::KvConfigureRequest cr;
  std::memcpy(&cr, c.data(), sizeof(cr));
  EXPECT_EQ(cr.command_bytes, 22u);
  EXPECT_EQ(c.substr(sizeof(cr)), "AddIndex::VolatileTree");
}

TEST(KvClientCodecTest, ListFindStatsAndAdoRepliesAreCheckedAgainstTheirLengths) {
  std::string list;
  put_struct(&list, w::KvListReply{2, 5});
  put_struct(&list, w::KvListEntry{1 << 20, 4096, 3, 1, 5});
  put_padded(&list, "alpha");
  put_struct(&list, w::KvListEntry{2 << 20, 0, 0, 0, 8});
  put_padded(&list, "beta1234");
  std::vector<PoolListing> pools;
  uint32_t entries = 0, total = 0;
  ASSERT_TRUE(decode_list(u8(list), list.size(), 7, &pools, &entries, &total).ok());
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(entries, 2u);
  EXPECT_EQ(total, 5u);
  EXPECT_EQ(pools[0].name, "alpha");
  EXPECT_EQ(pools[0].node, 7u);
  EXPECT_EQ(pools[0].count, 3u);
  EXPECT_EQ(pools[1].name, "beta1234");
  pools.clear();
  EXPECT_EQ(decode_list(u8(list), list.size() - 8, 7, &pools, &entries, &total).code(),
            StatusCode::kProtocolError);
  EXPECT_EQ(decode_list(u8(list), list.size() + 0, 7, &pools, &entries, &total).ok(), true);

  std::string find;
  put_struct(&find, w::KvFindReply{12, 3, 0});
  find += "abc";
  w::KvFindReply fr;
  std::string key;
  ASSERT_TRUE(decode_find(u8(find), find.size(), &fr, &key).ok());
  EXPECT_EQ(fr.position, 12u);
  EXPECT_EQ(key, "abc");
  EXPECT_EQ(decode_find(u8(find), find.size() - 1, &fr, &key).code(), StatusCode::kProtocolError);

  std::string stats;
  put_struct(&stats, w::KvShardStatsReply{2, 0});
  w::KvShardStats s{};
  s.gets = 5;
  put_struct(&stats, s);
  s.gets = 6;
  put_struct(&stats, s);
  std::vector<w::KvShardStats> shards;
  ASSERT_TRUE(decode_shard_stats(u8(stats), stats.size(), &shards).ok());
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[1].gets, 6u);
  EXPECT_EQ(decode_shard_stats(u8(stats), stats.size() - 1, &shards).code(),
            StatusCode::kProtocolError);

  std::string ado;
  put_struct(&ado, w::KvAdoReply{-3, 2});
  put_struct(&ado, w::KvAdoResponse{5, 1});
  put_padded(&ado, "first");
  put_struct(&ado, w::KvAdoResponse{0, 2});
  AdoResult ar;
  ASSERT_TRUE(decode_ado(u8(ado), ado.size(), &ar).ok());
  EXPECT_EQ(ar.plugin_status, -3);
  ASSERT_EQ(ar.responses.size(), 2u);
  EXPECT_EQ(ar.responses[0].data, "first");
  EXPECT_EQ(ar.responses[0].layer, 1u);
  EXPECT_EQ(ar.responses[1].data, "");
  EXPECT_EQ(decode_ado(u8(ado), ado.size() - 8, &ar).code(), StatusCode::kProtocolError);
  std::string too_many;
  put_struct(&too_many, w::KvAdoReply{0, w::kMaxAdoResponses + 1});
  EXPECT_EQ(decode_ado(u8(too_many), too_many.size(), &ar).code(), StatusCode::kProtocolError);

  w::KvPoolInfo info;
  std::string fixed(sizeof(info), '\0');
  EXPECT_TRUE(decode_fixed(fixed.data(), fixed.size(), &info).ok());
  EXPECT_EQ(decode_fixed(fixed.data(), fixed.size() - 1, &info).code(), StatusCode::kProtocolError);
}

TEST(KvClientCodecTest, OperationStatusesBecomeStatusesWithTheirCode) {
  EXPECT_TRUE(op_status(0, w::KvOp::kGet, "p", 3).ok());
  EXPECT_EQ(op_status(static_cast<int32_t>(StatusCode::kBusy), w::KvOp::kPut, "p", 3).code(),
            StatusCode::kBusy);
  Status full =
      op_status(static_cast<int32_t>(StatusCode::kResourceExhausted), w::KvOp::kPut, "users", 3);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("pool full"), std::string_view::npos);
  EXPECT_NE(full.message().find("users"), std::string_view::npos);
  EXPECT_EQ(op_status(999, w::KvOp::kErase, "p", 1).code(), StatusCode::kProtocolError);
  EXPECT_EQ(op_status(-1, w::KvOp::kErase, "p", 1).code(), StatusCode::kProtocolError);
}

}  // namespace
}  // namespace farmem::kv
