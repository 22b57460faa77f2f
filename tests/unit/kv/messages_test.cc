// Unit tests of kv request parsing: exact lengths, zero reserved fields and padding, known
// flags (docs/formats/kv.md), and of the [kv] config table.
#include "kv/service/messages.h"

#include <gtest/gtest.h>

#include "farmem/kv/service.h"
#include "kv/kv_messages.h"

namespace farmem::kv::service {
namespace {

namespace w = farmem::kv::wire;
using kv::testing::OpSpec;

Payload payload(const std::string& s) { return Payload(s.begin(), s.end()); }

TEST(KvMessagesTest, OpsParseKeysValuesAndPadding) {
  auto p = payload(kv::testing::ops_request(
      77, {{w::KvOp::kPut, w::kPutDontOverwrite, "key", "value!"}, {w::KvOp::kGet, 0, "k2", ""}}));
  w::KvOpsHeader h;
  std::vector<OpView> ops;
  ASSERT_TRUE(parse_ops(p, &h, &ops).ok());
  EXPECT_EQ(h.pool, 77u);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].key, "key");
  EXPECT_EQ(ops[0].value, "value!");
  EXPECT_EQ(ops[0].op.flags, w::kPutDontOverwrite);
  EXPECT_EQ(ops[1].key, "k2");
  EXPECT_EQ(ops[1].value, "");
  EXPECT_EQ(p.size(), 16u + 16 + 16 + 16 + 8);
}

TEST(KvMessagesTest, MalformedOpsAreRefusedWhole) {
  const auto good = payload(kv::testing::ops_request(1, {{w::KvOp::kPut, 0, "abc", "de"}}));
  w::KvOpsHeader h;
  std::vector<OpView> ops;
  auto refused = [&](Payload p) {
    return parse_ops(p, &h, &ops).code() == StatusCode::kInvalidArgument;
  };
  ASSERT_FALSE(refused(good));
  EXPECT_TRUE(refused(Payload(good.begin(), good.begin() + 15)));  // short header
  for (size_t at : {size_t{12}, size_t{18}, size_t{28}}) {         // reserved fields
    auto p = good;
    p[at] = 1;
    EXPECT_TRUE(refused(p)) << at;
  }
  auto p = good;
  p[8] = 0;  // count 0
  EXPECT_TRUE(refused(p));
  p = good;
  p[8] = 2;  // count 2, one op
  EXPECT_TRUE(refused(p));
  p = good;
  p[8] = 0;
  p[9] = 1;  // count 256 is the maximum; 256 with one op is short
  EXPECT_TRUE(refused(p));
  p = good;
  p[10] = 1;  // count 65536
  EXPECT_TRUE(refused(p));
  p = good;
  p[16] = 4;  // op
  EXPECT_TRUE(refused(p));
  p = good;
  p[17] = 3;  // both put flags
  EXPECT_TRUE(refused(p));
  p = good;
  p[17] = 4;  // unknown flag
  EXPECT_TRUE(refused(p));
  p = good;
  p.back() = 7;  // padding
  EXPECT_TRUE(refused(p));
  p = good;
  p.insert(p.end(), 8, 0);  // trailing bytes
  EXPECT_TRUE(refused(p));
  p = good;
  p.resize(p.size() - 8);  // key and value cut
  EXPECT_TRUE(refused(p));
  p = good;
  p[24] = 0xF8;  // value_bytes runs past the end
  p[25] = 0xFF;
  p[26] = 0xFF;
  p[27] = 0xFF;
  EXPECT_TRUE(refused(p));
  EXPECT_TRUE(refused(payload(kv::testing::ops_request(1, {{w::KvOp::kGet, 0, "", ""}}))));
  EXPECT_TRUE(refused(payload(kv::testing::ops_request(1, {{w::KvOp::kErase, 0, "k", "v"}}))));
  EXPECT_TRUE(refused(payload(kv::testing::ops_request(1, {{w::KvOp::kGet, 1, "k", ""}}))));
  std::vector<OpSpec> many(w::kMaxOpsPerMessage + 1, {w::KvOp::kGet, 0, "k", ""});
  EXPECT_TRUE(refused(payload(kv::testing::ops_request(1, many))));
  many.pop_back();
  EXPECT_FALSE(refused(payload(kv::testing::ops_request(1, many))));
}

// The longest key fills a 64 KiB request exactly, in kOps and in kLocate; one byte more is
// refused everywhere (and would not fit a message anyway).
TEST(KvMessagesTest, TheKeyLimitIsWhatFitsOneRequest) {
  const std::string longest(w::kMaxKeyBytes, 'k'), longer(w::kMaxKeyBytes + 1, 'k');
  auto ops = payload(kv::testing::ops_request(1, {{w::KvOp::kGet, 0, longest, ""}}));
  EXPECT_EQ(ops.size(), w::kMaxRpcPayloadBytes);
  w::KvOpsHeader h;
  std::vector<OpView> list;
  EXPECT_TRUE(parse_ops(ops, &h, &list).ok());
  EXPECT_FALSE(
      parse_ops(payload(kv::testing::ops_request(1, {{w::KvOp::kGet, 0, longer, ""}})), &h, &list)
          .ok());
  auto locate = payload(kv::encode_locate(1, w::LocateMode::kRead, 0, 0, 0, longest));
  EXPECT_EQ(locate.size(), w::kMaxRpcPayloadBytes);
  EXPECT_TRUE(parse_locate(locate).ok());
  EXPECT_FALSE(
      parse_locate(payload(kv::encode_locate(1, w::LocateMode::kRead, 0, 0, 0, longer))).ok());
  EXPECT_TRUE(
      parse_attribute(payload(kv::encode_attribute(1, w::Attribute::kCrc32, longest))).ok());
  EXPECT_FALSE(
      parse_attribute(payload(kv::encode_attribute(1, w::Attribute::kCrc32, longer))).ok());
}

TEST(KvMessagesTest, PoolRequestsFollowTheirOpcodesRules) {
  using O = w::KvOpcode;
  EXPECT_TRUE(
      parse_pool_request(payload(kv::encode_pool_request("p", 1 << 20, 0, 3)), O::kPoolCreate)
          .ok());
  EXPECT_FALSE(
      parse_pool_request(payload(kv::encode_pool_request("p", 1 << 20, 0, 8)), O::kPoolCreate)
          .ok());
  EXPECT_FALSE(
      parse_pool_request(payload(kv::encode_pool_request("p", 100, 0, 0)), O::kPoolCreate).ok());
  EXPECT_FALSE(parse_pool_request(payload(kv::encode_pool_request("p", 1 << 20, 1ull << 40, 0)),
                                  O::kPoolCreate)
                   .ok());
  EXPECT_TRUE(parse_pool_request(payload(kv::encode_pool_request("p", 0, 0, w::kPoolReadOnly)),
                                 O::kPoolOpen)
                  .ok());
  EXPECT_FALSE(parse_pool_request(payload(kv::encode_pool_request("p", 0, 0, w::kPoolCreateOnly)),
                                  O::kPoolOpen)
                   .ok());
  EXPECT_FALSE(parse_pool_request(payload(kv::encode_pool_request("p", 0, 0, w::kPoolReadOnly)),
                                  O::kPoolDelete)
                   .ok());
  EXPECT_FALSE(
      parse_pool_request(payload(kv::encode_pool_request("p", 1, 0, 0)), O::kPoolDelete).ok());
  EXPECT_FALSE(
      parse_pool_request(payload(kv::encode_pool_request("a\nb", 0, 0, 0)), O::kPoolOpen).ok());
  EXPECT_TRUE(parse_pool_request(payload(kv::encode_pool_request(std::string(120, 'x'), 0, 0, 0)),
                                 O::kPoolOpen)
                  .ok());
  EXPECT_FALSE(parse_pool_request(payload(kv::encode_pool_request(std::string(121, 'x'), 0, 0, 0)),
                                  O::kPoolOpen)
                   .ok());
  auto p = payload(kv::encode_pool_request("pool", 0, 0, 0));
  p.pop_back();
  EXPECT_FALSE(parse_pool_request(p, O::kPoolOpen).ok());
  // kPoolTemporary is a create flag.
  EXPECT_TRUE(
      parse_pool_request(payload(kv::encode_pool_request("p", 1 << 20, 0, w::kPoolTemporary)),
                         O::kPoolCreate)
          .ok());
  EXPECT_FALSE(parse_pool_request(payload(kv::encode_pool_request("p", 0, 0, w::kPoolTemporary)),
                                  O::kPoolOpen)
                   .ok());
}

TEST(KvMessagesTest, LocateReleaseFindAttributeConfigureAndListAreExact) {
  EXPECT_TRUE(parse_locate(payload(kv::encode_locate(1, w::LocateMode::kRead, 0, 5, 6, "k"))).ok());
  EXPECT_FALSE(parse_locate(payload(kv::encode_locate(1, w::LocateMode::kRead, 0, 0, 0, ""))).ok());
  EXPECT_FALSE(parse_locate(payload(kv::encode_locate(1, w::LocateMode(0), 0, 0, 0, "k"))).ok());
  EXPECT_FALSE(
      parse_locate(payload(kv::encode_locate(1, w::LocateMode::kPutNew, 0, 1, 6, "k"))).ok());
  EXPECT_FALSE(parse_locate(payload(kv::encode_locate(1, w::LocateMode::kPutNew, 0, 0,
                                                      w::kMaxValueBytes + 1, "k")))
                   .ok());
  EXPECT_TRUE(
      parse_locate(payload(kv::encode_locate(1, w::LocateMode::kPutNew, w::kLocateCreateOnly, 0,
                                             w::kMaxValueBytes, "k")))
          .ok());
  EXPECT_TRUE(parse_release(payload(kv::encode_release(1, 2, w::kReleaseAbort))).ok());
  EXPECT_FALSE(parse_release(payload(kv::encode_release(1, 2, 2))).ok());
  EXPECT_TRUE(parse_find(payload(kv::encode_find(1, 3, "next:"))).ok());
  EXPECT_FALSE(parse_find(payload(kv::encode_find(1, 3, ""))).ok());
  EXPECT_FALSE(parse_find(payload(kv::encode_find(1, 3, std::string(4097, 'x')))).ok());
  EXPECT_TRUE(parse_attribute(payload(kv::encode_attribute(1, w::Attribute::kCrc32, "k"))).ok());
  EXPECT_FALSE(parse_attribute(payload(kv::encode_attribute(1, w::Attribute::kCrc32, ""))).ok());
  EXPECT_FALSE(parse_attribute(payload(kv::encode_attribute(1, w::Attribute::kCount, "k"))).ok());
  EXPECT_FALSE(parse_attribute(payload(kv::encode_attribute(1, w::Attribute(0), ""))).ok());
  EXPECT_TRUE(parse_configure(payload(kv::encode_configure(1, "RemoveIndex"))).ok());
  EXPECT_FALSE(parse_configure(payload(kv::encode_configure(1, ""))).ok());
  EXPECT_TRUE(parse_list(payload(kv::encode_list(3))).ok());
  EXPECT_FALSE(parse_list(payload(kv::encode_list(3) + "x")).ok());
  EXPECT_FALSE(parse_pool_ref(Payload(7, 0), "close").ok());
  EXPECT_FALSE(parse_pool_ref(Payload(9, 0), "close").ok());
}

TEST(KvMessagesTest, ConfigureCommands) {
  using K = ConfigureCommand::Kind;
  EXPECT_EQ(parse_configure_command("AddIndex::VolatileTree")->kind, K::kAddIndex);
  EXPECT_EQ(parse_configure_command("RemoveIndex")->kind, K::kRemoveIndex);
  auto c = parse_configure_command("AdoPlugins::liba.so,libb.so");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->list, (std::vector<std::string>{"liba.so", "libb.so"}));
  EXPECT_TRUE(parse_configure_command("AdoPlugins::")->list.empty());
  EXPECT_FALSE(parse_configure_command("AdoPlugins::a.so,,b.so").ok());
  EXPECT_FALSE(parse_configure_command("AdoPlugins::/lib/a.so").ok());
  EXPECT_FALSE(parse_configure_command("AdoPlugins::..").ok());
  c = parse_configure_command("AdoParam::depth=3=4");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->key, "depth");
  EXPECT_EQ(c->value, "3=4");
  EXPECT_FALSE(parse_configure_command("AdoParam::=x").ok());
  EXPECT_FALSE(parse_configure_command("AdoParam::x").ok());
  EXPECT_EQ(parse_configure_command("AdoSignals::post-get,post-erase")->list.size(), 2u);
  EXPECT_FALSE(parse_configure_command("AdoSignals::post-lunch").ok());
  EXPECT_FALSE(parse_configure_command("addindex::volatiletree").ok());
}

TEST(KvConfigTest, TheKvTableIsReadStrictly) {
  auto o = KvServiceOptions::from_toml_string(
      "[memnode]\nport = 1\n[kv]\nrecord_grace_ms = 5\nado_plugin_dir = \"/p\"\n"
      "ado_binary = \"/b\"\nado_timeout_ms = 7\nado_launch_retry_ms = 0\n");
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->record_grace_ms, 5u);
  EXPECT_EQ(o->ado_plugin_dir, "/p");
  EXPECT_EQ(o->ado_binary, "/b");
  EXPECT_EQ(o->ado_timeout_ms, 7u);
  EXPECT_EQ(o->ado_launch_retry_ms, 0u);
  auto d = KvServiceOptions::from_toml_string("[memnode]\n");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->record_grace_ms, 1000u);
  EXPECT_EQ(d->ado_launch_retry_ms, 1000u);
  EXPECT_EQ(KvServiceOptions::from_toml_string("[kv]\nrecord_grace = 5\n").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(KvServiceOptions::from_toml_string("[kv]\nado_timeout_ms = 0\n").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(KvServiceOptions::from_toml_string("kv = 3\n").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farmem::kv::service
