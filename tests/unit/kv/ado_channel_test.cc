// The ADO channel codec (src/kv/ado/channel.h): every message round-trips, and every malformed
// message is refused with kProtocolError, never read past its end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <iterator>
#include <random>
#include <string>

#include "kv/ado/channel.h"
#include "test_seed.h"

namespace farmem::kv::ado {
namespace {

Message parse_ok(const std::string& bytes) {
  auto m = parse_message(bytes);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? *m : Message{};
}

template <typename T>
void poke(std::string* msg, size_t offset, T value) {
  std::memcpy(msg->data() + offset, &value, sizeof(T));
}

std::string reply_with(std::initializer_list<std::string> items, int32_t status = 0) {
  std::string r;
  wire::KvAdoReply head{status, static_cast<uint32_t>(items.size())};
  r.append(reinterpret_cast<const char*>(&head), sizeof(head));
  uint32_t layer = 0;
  for (const auto& item : items) {
    wire::KvAdoResponse resp{static_cast<uint32_t>(item.size()), layer++};
    r.append(reinterpret_cast<const char*>(&resp), sizeof(resp));
    r += item;
    r.append((8 - item.size() % 8) % 8, '\0');
  }
  return r;
}

TEST(AdoChannelTest, LaunchRoundTrips) {
  Launch l;
  l.flags = FARMEM_ADO_LAUNCH_NEW_POOL | kLaunchDurableNode;
  l.undo = {1 << 20, 256 << 10};
  l.pool_capacity_bytes = 1 << 20;
  l.region_bytes = 1ull << 30;
  l.node_id = 7;
  l.timeout_ms = 1234;
  l.pool_name = "orders";
  l.plugin_paths = {"/p/liba.so", "/p/libb.so"};
  l.params = {{"k1", "v1"}, {"empty", ""}};
  auto d = decode_launch(parse_ok(encode_launch(l)));
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->flags, l.flags);
  EXPECT_EQ(d->undo.offset, l.undo.offset);
  EXPECT_EQ(d->undo.bytes, l.undo.bytes);
  EXPECT_EQ(d->pool_capacity_bytes, l.pool_capacity_bytes);
  EXPECT_EQ(d->region_bytes, l.region_bytes);
  EXPECT_EQ(d->node_id, 7);
  EXPECT_EQ(d->timeout_ms, 1234u);
  EXPECT_EQ(d->pool_name, "orders");
  EXPECT_EQ(d->plugin_paths, l.plugin_paths);
  EXPECT_EQ(d->params, l.params);
}

TEST(AdoChannelTest, LaunchRefusesBadFields) {
  Launch l;
  l.pool_name = "p";
  l.plugin_paths = {"/x.so"};
  std::string good = encode_launch(l);
  std::string version = good;
  poke<uint32_t>(&version, sizeof(MsgHeader), FARMEM_ADO_ABI_VERSION + 1);
  EXPECT_EQ(decode_launch(parse_ok(version)).status().code(), StatusCode::kVersionMismatch);
  std::string no_plugins = good;
  poke<uint16_t>(&no_plugins, sizeof(MsgHeader) + offsetof(LaunchMsg, plugin_count), 0);
  EXPECT_EQ(decode_launch(parse_ok(no_plugins)).status().code(), StatusCode::kProtocolError);
  std::string long_name = good;
  poke<uint16_t>(&long_name, sizeof(MsgHeader) + offsetof(LaunchMsg, pool_name_bytes), 500);
  EXPECT_EQ(decode_launch(parse_ok(long_name)).status().code(), StatusCode::kProtocolError);
  std::string trailing = good + "x";
  poke<uint32_t>(&trailing, offsetof(MsgHeader, bytes), static_cast<uint32_t>(trailing.size()));
  EXPECT_EQ(decode_launch(parse_ok(trailing)).status().code(), StatusCode::kProtocolError);
  std::string half_undo = good;  // a block with no size
  poke<uint64_t>(&half_undo, sizeof(MsgHeader) + offsetof(LaunchMsg, undo_offset), 4096);
  EXPECT_EQ(decode_launch(parse_ok(half_undo)).status().code(), StatusCode::kProtocolError);
  std::string flags = good;
  poke<uint32_t>(&flags, sizeof(MsgHeader) + offsetof(LaunchMsg, flags), 4);
  EXPECT_EQ(decode_launch(parse_ok(flags)).status().code(), StatusCode::kProtocolError);
}

TEST(AdoChannelTest, WorkRoundTripsAndChecksValues) {
  Work w;
  w.work_id = 99;
  w.flags = FARMEM_ADO_WORK_NEW_VALUE;
  w.key = "key";
  w.request = std::string("req\0uest", 8);
  w.value_count = 2;
  w.values[0] = {4096, 64};
  w.values[1] = {8192, 8};
  auto d = decode_work(parse_ok(encode_work(w)));
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->work_id, 99u);
  EXPECT_EQ(d->key, "key");
  EXPECT_EQ(d->request, w.request);
  EXPECT_EQ(d->values[1].offset, 8192u);
  // A value range beyond value_count must be zero.
  std::string bad = encode_work(w);
  poke<uint32_t>(&bad, sizeof(MsgHeader) + offsetof(WorkMsg, value_count), 1);
  EXPECT_EQ(decode_work(parse_ok(bad)).status().code(), StatusCode::kProtocolError);
  std::string oversized = encode_work(w);
  poke<uint32_t>(&oversized, sizeof(MsgHeader) + offsetof(WorkMsg, request_bytes), 1 << 20);
  EXPECT_EQ(decode_work(parse_ok(oversized)).status().code(), StatusCode::kProtocolError);
}

TEST(AdoChannelTest, CallbacksAndRepliesRoundTrip) {
  Callback c{5, CallbackOp::kIterate, "", 17, 1024};
  auto d = decode_callback(parse_ok(encode_callback(c)));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->op, CallbackOp::kIterate);
  EXPECT_EQ(d->arg0, 17u);
  EXPECT_EQ(d->arg1, 1024u);
  std::string unknown = encode_callback(c);
  poke<uint32_t>(&unknown, sizeof(MsgHeader), 77);
  EXPECT_FALSE(decode_callback(parse_ok(unknown)).ok());

  std::string_view payload;  // a view into the message: keep the message alive
  const std::string reply = encode_callback_reply(5, OkStatus(), "abc");
  EXPECT_TRUE(decode_status(parse_ok(reply), &payload).ok());
  EXPECT_EQ(payload, "abc");
  Status err = decode_status(parse_ok(encode_callback_reply(5, Busy("key locked"))), &payload);
  EXPECT_EQ(err.code(), StatusCode::kBusy);
  EXPECT_EQ(err.message(), "key locked");
  auto e = decode_event(parse_ok(encode_event(FARMEM_ADO_EVENT_ERASE, "k")));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->first, FARMEM_ADO_EVENT_ERASE);
  EXPECT_EQ(e->second, "k");
  EXPECT_FALSE(decode_event(parse_ok(encode_event(99, ""))).ok());
}

TEST(AdoChannelTest, DoneChecksTheReplyLikeAClient) {
  Done done{3, kDoneEraseTarget, reply_with({"hello", "12345678", ""}, -7)};
  auto d = decode_done(parse_ok(encode_done(done)));
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->flags, kDoneEraseTarget);
  EXPECT_EQ(d->reply, done.reply);
  std::string dirty = reply_with({"hello"});
  dirty[sizeof(wire::KvAdoReply) + sizeof(wire::KvAdoResponse) + 6] = 'x';  // padding
  EXPECT_FALSE(validate_reply(dirty).ok());
  std::string too_many = reply_with({});
  poke<uint32_t>(&too_many, 4, wire::kMaxAdoResponses + 1);
  EXPECT_FALSE(validate_reply(too_many).ok());
  std::string cut = reply_with({"hello"});
  cut.pop_back();
  EXPECT_FALSE(validate_reply(cut).ok());
  EXPECT_FALSE(validate_reply(std::string(kMaxReplyBytes + 8, '\0')).ok());
}

TEST(AdoChannelTest, HeaderChecks) {
  std::string m = encode_shutdown();
  EXPECT_TRUE(parse_message(m).ok());
  EXPECT_FALSE(parse_message(m.substr(0, 10)).ok());
  std::string magic = m;
  poke<uint32_t>(&magic, 0, 0);
  EXPECT_FALSE(parse_message(magic).ok());
  std::string type = m;
  poke<uint16_t>(&type, 4, 99);
  EXPECT_FALSE(parse_message(type).ok());
  std::string reserved = m;
  poke<uint16_t>(&reserved, 6, 1);
  EXPECT_FALSE(parse_message(reserved).ok());
  EXPECT_FALSE(parse_message(m + "x").ok());  // length disagrees
}

// Random bytes never crash a decoder.
TEST(AdoChannelTest, RandomMutationsAreRefusedOrDecoded) {
  uint64_t seed = farmem::testing::test_seed();
  std::mt19937_64 rng(seed);
  Launch l;
  l.pool_name = "pool";
  l.plugin_paths = {"/a.so"};
  l.params = {{"a", "b"}};
  Work w;
  w.work_id = 1;
  w.key = "k";
  w.value_count = 1;
  w.values[0] = {64, 8};
  std::string seeds[] = {encode_launch(l), encode_work(w),
                         encode_callback({1, CallbackOp::kFind, "prefix:x", 0, 0}),
                         encode_done({1, 0, reply_with({"abc"})}), encode_event(1, "k")};
  for (int i = 0; i < 20000; ++i) {
    std::string m = seeds[rng() % std::size(seeds)];
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) m[rng() % m.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0) m.resize(rng() % m.size());
    auto parsed = parse_message(m);
    if (!parsed.ok()) continue;
    (void)decode_launch(*parsed);
    (void)decode_work(*parsed);
    (void)decode_callback(*parsed);
    (void)decode_done(*parsed);
    (void)decode_event(*parsed);
    std::string_view payload;
    (void)decode_status(*parsed, &payload);
  }
}

TEST(AdoChannelTest, SocketCarriesWholeMessagesAndReportsEof) {
  auto pair = make_channel();
  ASSERT_TRUE(pair.ok()) << pair.status().to_string();
  auto [a, b] = *pair;
  std::string big(kMaxMessageBytes, 'x');
  ASSERT_TRUE(send_message(a, "one").ok());
  ASSERT_TRUE(send_message(a, big).ok());
  std::string buffer;
  auto r = receive_message(b, &buffer);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "one");
  r = receive_message(b, &buffer);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), kMaxMessageBytes);
  r = receive_message(b, &buffer);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());  // nothing waiting: no block
  std::string huge(kMaxMessageBytes + 100, 'y');
  if (send_message(a, huge).ok()) {
    EXPECT_EQ(receive_message(b, &buffer).status().code(), StatusCode::kProtocolError);
  }
  close(a);
  EXPECT_EQ(receive_message(b, &buffer).status().code(), StatusCode::kPeerFailed);
  EXPECT_EQ(send_message(b, "x").code(), StatusCode::kPeerFailed);
  close(b);
}

}  // namespace
}  // namespace farmem::kv::ado
