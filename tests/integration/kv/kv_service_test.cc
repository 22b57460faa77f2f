// The memory node's kv service at the wire level (docs/formats/kv.md): pools, coalesced
// get/put/erase, records read one-sidedly, locate/release, find, attributes, statistics,
// forwarding between workers, session ends, malformed requests. Over shared memory and TCP,
// through ThreadClient::rpc and one-sided reads.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "farmem/kv/record.h"
#include "farmem/kv/wire.h"
#include "farmem/runtime/scheduler.h"
#include "harness.h"
#include "kv/kv_messages.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

namespace kw = farmem::kv::wire;
using client::Cluster;
using client::ThreadClient;
using kv::testing::OpSpec;
using kw::KvOp;
using kw::KvOpcode;

constexpr uint16_t kNode = 3;

// One session's view of the kv service: raw requests and decoded replies.
class KvSession {
 public:
  explicit KvSession(ThreadClient* c) : c_(c) {}

  Status call(KvOpcode op, const std::string& request, std::string* reply = nullptr) {
    std::string buf(kw::kMaxRpcPayloadBytes, '\0');
    uint32_t got = 0;
    Status s = c_->run(c_->rpc(kNode, static_cast<uint16_t>(op), request.data(), request.size(),
                               buf.data(), static_cast<uint32_t>(buf.size()), &got));
    if (reply != nullptr) reply->assign(buf.data(), s.ok() ? got : 0);
    return s;
  }
  template <typename T>
  Result<T> call_for(KvOpcode op, const std::string& request) {
    std::string reply;
    FARMEM_TRY(call(op, request, &reply));
    if (reply.size() < sizeof(T)) return Internal("short reply");
    T v;
    std::memcpy(&v, reply.data(), sizeof(T));
    return v;
  }

  Result<kw::KvPoolReply> create(const std::string& name, uint64_t capacity = 1 << 20,
                                 uint32_t flags = 0, uint64_t expected = 0) {
    return call_for<kw::KvPoolReply>(KvOpcode::kPoolCreate,
                                     kv::encode_pool_request(name, capacity, expected, flags));
  }
  Result<kw::KvPoolReply> open(const std::string& name, uint32_t flags = 0) {
    return call_for<kw::KvPoolReply>(KvOpcode::kPoolOpen,
                                     kv::encode_pool_request(name, 0, 0, flags));
  }
  Status close(uint64_t pool) { return call(KvOpcode::kPoolClose, kv::encode_pool_ref(pool)); }
  Status destroy(const std::string& name) {
    return call(KvOpcode::kPoolDelete, kv::encode_pool_request(name, 0, 0, 0));
  }
  Result<kw::KvPoolInfo> info(uint64_t pool) {
    return call_for<kw::KvPoolInfo>(KvOpcode::kPoolInfo, kv::encode_pool_ref(pool));
  }
  Status configure(uint64_t pool, const std::string& command) {
    return call(KvOpcode::kPoolConfigure, kv::encode_configure(pool, command));
  }

  struct OpResult {
    kw::KvOpReply reply{};
    std::string value;
    StatusCode code() const { return static_cast<StatusCode>(reply.status); }
  };
  Result<std::vector<OpResult>> ops(uint64_t pool, const std::vector<OpSpec>& list) {
    std::string reply;
    FARMEM_TRY(call(KvOpcode::kOps, kv::testing::ops_request(pool, list), &reply));
    kw::KvOpsReplyHeader h;
    if (reply.size() < sizeof(h)) return Internal("short ops reply");
    std::memcpy(&h, reply.data(), sizeof(h));
    if (h.count != list.size()) return Internal("ops reply count differs");
    std::vector<OpResult> out(h.count);
    size_t at = sizeof(h);
    for (uint32_t i = 0; i < h.count; ++i) {
      if (reply.size() - at < sizeof(kw::KvOpReply)) return Internal("short op reply");
      std::memcpy(&out[i].reply, reply.data() + at, sizeof(kw::KvOpReply));
      at += sizeof(kw::KvOpReply);
      const bool carries = list[i].op == KvOp::kGet && out[i].reply.status == 0 &&
                           (out[i].reply.flags & kw::kReplyNeedsLocate) == 0;
      if (carries) {
        const size_t n = out[i].reply.value_bytes;
        if (reply.size() - at < n) return Internal("short value");
        out[i].value = reply.substr(at, n);
        at += (n + 7) & ~size_t{7};
      }
    }
    if (at != reply.size()) return Internal("ops reply has trailing bytes");
    return out;
  }
  Result<OpResult> one(uint64_t pool, OpSpec op) {
    auto r = ops(pool, {std::move(op)});
    if (!r.ok()) return r.status();
    return (*r)[0];
  }
  StatusCode put(uint64_t pool, const std::string& key, const std::string& value,
                 uint8_t flags = 0) {
    auto r = one(pool, {KvOp::kPut, flags, key, value});
    return r.ok() ? r->code() : r.status().code();
  }
  Result<std::string> get(uint64_t pool, const std::string& key) {
    auto r = one(pool, {KvOp::kGet, 0, key, ""});
    if (!r.ok()) return r.status();
    if (r->code() != StatusCode::kOk) return Status(r->code(), "get failed");
    return r->value;
  }
  StatusCode erase(uint64_t pool, const std::string& key) {
    auto r = one(pool, {KvOp::kErase, 0, key, ""});
    return r.ok() ? r->code() : r.status().code();
  }
  Result<kw::KvLocateReply> locate(uint64_t pool, const std::string& key, kw::LocateMode mode,
                                   uint64_t offset = 0, uint64_t length = 0, uint8_t flags = 0) {
    return call_for<kw::KvLocateReply>(KvOpcode::kLocate,
                                       kv::encode_locate(pool, mode, flags, offset, length, key));
  }
  Status release(uint64_t pool, uint64_t token, uint32_t flags = 0) {
    return call(KvOpcode::kRelease, kv::encode_release(pool, token, flags));
  }
  Result<uint64_t> attribute(uint64_t pool, kw::Attribute a, const std::string& key = "") {
    auto r =
        call_for<kw::KvAttributeReply>(KvOpcode::kAttribute, kv::encode_attribute(pool, a, key));
    if (!r.ok()) return r.status();
    return r->value;
  }
  struct Found {
    uint64_t position = 0;
    std::string key;
    bool more = false;
  };
  Result<Found> find(uint64_t pool, const std::string& expression, uint64_t start) {
    std::string reply;
    FARMEM_TRY(call(KvOpcode::kFind, kv::encode_find(pool, start, expression), &reply));
    kw::KvFindReply r;
    if (reply.size() < sizeof(r)) return Internal("short find reply");
    std::memcpy(&r, reply.data(), sizeof(r));
    if (reply.size() != sizeof(r) + r.key_bytes) return Internal("find reply length");
    return Found{r.position, reply.substr(sizeof(r)), (r.flags & kw::kFindMore) != 0};
  }
  // The bytes of a record, read one-sidedly.
  std::string read_record(uint64_t record, uint32_t bytes) {
    std::string buf(bytes, '\0');
    Status s = sync_wait(c_->read(GlobalAddress(kNode, record), buf.data(), bytes));
    EXPECT_TRUE(s.ok()) << s.to_string();
    return buf;
  }
  uint64_t node_used_bytes() {
    auto st = c_->run(c_->stats(kNode));
    EXPECT_TRUE(st.ok());
    return st.ok() ? st->used_bytes : 0;
  }
  ThreadClient* client() { return c_; }

 private:
  ThreadClient* c_;
};

bool valid_record(const std::string& copy, const std::string& key) {
  return kv::record_valid(reinterpret_cast<const uint8_t*>(copy.data()), copy.size(), key);
}

class KvServiceTest : public ::testing::TestWithParam<Transport> {
 protected:
  void start(uint32_t workers = 1, uint32_t grace_ms = 1000) {
    ServerOptions o;
    o.tls = GetParam().tls;
    o.node_id = kNode;
    o.capacity_bytes = 64ull << 20;
    o.extra_args = {"--workers", std::to_string(workers), "--kv-record-grace-ms",
                    std::to_string(grace_ms)};
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    a_ = connect();
  }
  std::unique_ptr<KvSession> connect() {
    auto c = Cluster::connect(config_for({server_.get()}, GetParam().tls, 5000));
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    if (!c.ok()) return nullptr;
    clusters_.push_back(std::move(*c));
    auto tc = clusters_.back()->thread_client();
    EXPECT_TRUE(tc.ok());
    return std::make_unique<KvSession>(*tc);
  }
  // Ends the session of `s` (its cluster disconnects).
  void disconnect(std::unique_ptr<KvSession>& s) {
    for (auto it = clusters_.begin(); it != clusters_.end(); ++it) {
      auto tc = (*it)->thread_client();
      if (tc.ok() && *tc == s->client()) {
        clusters_.erase(it);
        break;
      }
    }
    s.reset();
  }
  void TearDown() override {
    a_.reset();
    clusters_.clear();
  }

  std::unique_ptr<ServerProcess> server_;
  std::vector<std::unique_ptr<Cluster>> clusters_;
  std::unique_ptr<KvSession> a_;
};

TEST_P(KvServiceTest, PoolsAreCreatedOpenedListedAndDeletedAndTheirMemoryComesBack) {
  start();
  const uint64_t used0 = a_->node_used_bytes();
  auto p = a_->create("alpha", 1 << 20, 0, 1000);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->flags, kw::kPoolReplyCreated);
  EXPECT_EQ(p->capacity_bytes, 1u << 20);
  EXPECT_NE(p->pool, 0u);
  auto again = a_->create("alpha", 4 << 20);  // opens the existing pool
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->flags, 0u);
  EXPECT_EQ(again->pool, p->pool);
  EXPECT_EQ(again->capacity_bytes, 1u << 20);
  EXPECT_EQ(a_->create("alpha", 1 << 20, kw::kPoolCreateOnly).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(a_->open("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(a_->create("tiny", 1000).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a_->create("huge", 1ull << 40).status().code(), StatusCode::kInvalidArgument);

  ASSERT_EQ(a_->put(p->pool, "k", "v"), StatusCode::kOk);
  auto info = a_->info(p->pool);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->count, 1u);
  EXPECT_EQ(info->capacity_bytes, 1u << 20);
  EXPECT_GE(info->index_slots, 1000u);
  EXPECT_EQ(info->open_handles, 2u);
  EXPECT_GT(info->used_bytes, 0u);
  EXPECT_GT(info->write_epoch_ns, 0u);
  EXPECT_EQ(a_->node_used_bytes(), used0 + info->used_bytes);

  std::string reply;
  ASSERT_TRUE(a_->call(KvOpcode::kPoolList, kv::encode_list(0), &reply).ok());
  kw::KvListReply lr;
  std::memcpy(&lr, reply.data(), sizeof(lr));
  EXPECT_EQ(lr.entries, 1u);
  EXPECT_EQ(lr.total, 1u);
  kw::KvListEntry e;
  std::memcpy(&e, reply.data() + sizeof(lr), sizeof(e));
  EXPECT_EQ(e.count, 1u);
  EXPECT_EQ(reply.substr(sizeof(lr) + sizeof(e), e.name_bytes), "alpha");
  EXPECT_EQ(reply.size(), sizeof(lr) + sizeof(e) + 8);

  // Another session cannot delete it while it is open here.
  auto b = connect();
  EXPECT_EQ(b->destroy("alpha").code(), StatusCode::kBusy);
  ASSERT_TRUE(a_->close(p->pool).ok());
  ASSERT_TRUE(a_->close(p->pool).ok());
  EXPECT_EQ(a_->close(p->pool).code(), StatusCode::kNotFound);
  EXPECT_EQ(a_->info(p->pool).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(b->destroy("alpha").ok());
  EXPECT_EQ(b->destroy("alpha").code(), StatusCode::kNotFound);
  EXPECT_EQ(a_->node_used_bytes(), used0);
  // The name can be used again; the old handle stays dead.
  auto p2 = a_->create("alpha");
  ASSERT_TRUE(p2.ok());
  EXPECT_NE(p2->pool, p->pool);
  EXPECT_EQ(a_->get(p->pool, "k").status().code(), StatusCode::kNotFound);
  // The session that has it open alone may delete it.
  ASSERT_TRUE(a_->destroy("alpha").ok());
  EXPECT_EQ(a_->get(p2->pool, "k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(a_->node_used_bytes(), used0);
}

TEST_P(KvServiceTest, PoolObjectsBelongToTheServiceNotToClients) {
  start();
  auto p = a_->create("pinned");
  ASSERT_TRUE(p.ok());
  auto id = a_->client()->run(a_->client()->object_open(kNode, "kv/pinned"));
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  EXPECT_EQ(a_->client()->run(a_->client()->object_destroy(kNode, *id)).code(),
            StatusCode::kPermissionDenied);
  ASSERT_EQ(a_->put(p->pool, "k", "still here"), StatusCode::kOk);
  EXPECT_EQ(*a_->get(p->pool, "k"), "still here");
}

TEST_P(KvServiceTest, GetPutEraseWithFlagsAndPerOpStatuses) {
  start();
  auto p = a_->create("ops");
  ASSERT_TRUE(p.ok());
  const uint64_t pool = p->pool;
  auto r = a_->ops(pool, {{KvOp::kPut, 0, "a", "1"},
                          {KvOp::kPut, kw::kPutCreateOnly, "a", "2"},
                          {KvOp::kPut, kw::kPutDontOverwrite, "a", "3"},
                          {KvOp::kGet, 0, "a", ""},
                          {KvOp::kGet, 0, "b", ""},
                          {KvOp::kErase, 0, "b", ""},
                          {KvOp::kPut, kw::kPutCreateOnly, "b", ""},
                          {KvOp::kGet, 0, "b", ""},
                          {KvOp::kErase, 0, "a", ""},
                          {KvOp::kGet, 0, "a", ""}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto& v = *r;
  EXPECT_EQ(v[0].code(), StatusCode::kOk);
  EXPECT_NE(v[0].reply.record, 0u);
  EXPECT_EQ(v[0].reply.record_bytes, sizeof(kw::KvRecordHeader) + 2);
  EXPECT_EQ(v[1].code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(v[2].code(), StatusCode::kOk);
  EXPECT_EQ(v[2].reply.flags, kw::kReplyExisted);
  EXPECT_EQ(v[2].reply.record, v[0].reply.record);
  EXPECT_EQ(v[2].reply.version, v[0].reply.version);
  EXPECT_EQ(v[3].code(), StatusCode::kOk);
  EXPECT_EQ(v[3].value, "1");
  EXPECT_EQ(v[3].reply.version, v[0].reply.version);
  EXPECT_EQ(v[4].code(), StatusCode::kNotFound);
  EXPECT_EQ(v[5].code(), StatusCode::kNotFound);
  EXPECT_EQ(v[6].code(), StatusCode::kOk);
  EXPECT_EQ(v[7].code(), StatusCode::kOk);
  EXPECT_EQ(v[7].value, "");
  EXPECT_EQ(v[8].code(), StatusCode::kOk);
  EXPECT_EQ(v[9].code(), StatusCode::kNotFound);

  // Boundary sizes: the largest key a message carries with a 1-byte value (a 64 KiB key does
  // not fit in a 64 KiB message with its headers); a value that fills a message; gets that do
  // not fit in the reply.
  const std::string big_key(
      kw::kMaxRpcPayloadBytes - sizeof(kw::KvOpsHeader) - sizeof(kw::KvOpRequest) - 8, 'k');
  ASSERT_EQ(a_->put(pool, big_key, "x"), StatusCode::kOk);
  EXPECT_EQ(*a_->get(pool, big_key), "x");
  const std::string value(60000, 'v');
  ASSERT_EQ(a_->put(pool, "big", value), StatusCode::kOk);
  EXPECT_EQ(*a_->get(pool, "big"), value);
  auto two = a_->ops(pool, {{KvOp::kGet, 0, "big", ""}, {KvOp::kGet, 0, "big", ""}});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ((*two)[0].value, value);
  EXPECT_EQ((*two)[1].code(), StatusCode::kOk);
  EXPECT_EQ((*two)[1].reply.flags, kw::kReplyNeedsLocate);
  EXPECT_EQ((*two)[1].reply.value_bytes, value.size());
  EXPECT_EQ((*two)[1].reply.record, (*two)[0].reply.record);

  // Read-only handles read but do not write.
  auto ro = a_->open("ops", kw::kPoolReadOnly);
  ASSERT_TRUE(ro.ok());
  auto b = connect();
  auto rob = b->open("ops", kw::kPoolReadOnly);
  ASSERT_TRUE(rob.ok());
  EXPECT_EQ(*b->get(rob->pool, "big"), value);
  EXPECT_EQ(b->put(rob->pool, "c", "1"), StatusCode::kPermissionDenied);
  EXPECT_EQ(b->erase(rob->pool, "big"), StatusCode::kPermissionDenied);
}

TEST_P(KvServiceTest, CoalescedMessagesKeepOrderAgainstAReferenceMap) {
  start();
  auto p = a_->create("model", 8 << 20);
  ASSERT_TRUE(p.ok());
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  std::map<std::string, std::string> model;
  for (int round = 0; round < 30; ++round) {
    std::vector<OpSpec> list;
    const int n = 1 + static_cast<int>(rng() % 64);
    for (int i = 0; i < n; ++i) {
      OpSpec o;
      o.key = "key" + std::to_string(rng() % 40);
      switch (rng() % 3) {
        case 0:
          o.op = KvOp::kGet;
          break;
        case 1:
          o.op = KvOp::kPut;
          o.value = std::string(rng() % 300, static_cast<char>('a' + rng() % 26));
          break;
        default:
          o.op = KvOp::kErase;
          break;
      }
      list.push_back(o);
    }
    auto r = a_->ops(p->pool, list);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    for (size_t i = 0; i < list.size(); ++i) {
      const OpSpec& o = list[i];
      auto it = model.find(o.key);
      if (o.op == KvOp::kGet) {
        if (it == model.end()) {
          EXPECT_EQ((*r)[i].code(), StatusCode::kNotFound);
        } else {
          EXPECT_EQ((*r)[i].code(), StatusCode::kOk);
          EXPECT_EQ((*r)[i].value, it->second);
        }
      } else if (o.op == KvOp::kPut) {
        EXPECT_EQ((*r)[i].code(), StatusCode::kOk);
        model[o.key] = o.value;
      } else {
        EXPECT_EQ((*r)[i].code(), it == model.end() ? StatusCode::kNotFound : StatusCode::kOk);
        model.erase(o.key);
      }
    }
  }
  EXPECT_EQ(*a_->attribute(p->pool, kw::Attribute::kCount), model.size());
}

TEST_P(KvServiceTest, RecordsReadOneSidedlyValidateUntilOverwrittenOrErased) {
  start();
  auto p = a_->create("records");
  ASSERT_TRUE(p.ok());
  auto first = a_->one(p->pool, {KvOp::kPut, 0, "key", "first value"});
  ASSERT_TRUE(first.ok());
  const kw::KvOpReply r1 = first->reply;
  std::string copy = a_->read_record(r1.record, r1.record_bytes);
  EXPECT_TRUE(valid_record(copy, "key"));
  EXPECT_FALSE(valid_record(copy, "kez"));
  kw::KvRecordHeader h;
  std::memcpy(&h, copy.data(), sizeof(h));
  EXPECT_EQ(h.state, kw::record_state(r1.version, kw::kRecordLive));
  EXPECT_EQ(h.version, r1.version);
  EXPECT_EQ(copy.substr(sizeof(h) + 3), "first value");
  EXPECT_EQ(r1.record % kw::kRecordAlign, 0u);

  // Overwrite: a new record with a higher version; the old location no longer validates.
  auto second = a_->one(p->pool, {KvOp::kPut, 0, "key", "second"});
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->reply.record, r1.record);
  EXPECT_GT(second->reply.version, r1.version);
  std::string stale = a_->read_record(r1.record, r1.record_bytes);
  EXPECT_FALSE(valid_record(stale, "key"));
  std::memcpy(&h, stale.data(), sizeof(h));
  EXPECT_EQ(h.state, kw::record_state(r1.version, kw::kRecordDead));
  EXPECT_TRUE(
      valid_record(a_->read_record(second->reply.record, second->reply.record_bytes), "key"));

  // A get names the current record; an erase kills it.
  auto g = a_->one(p->pool, {KvOp::kGet, 0, "key", ""});
  EXPECT_EQ(g->reply.record, second->reply.record);
  EXPECT_EQ(g->reply.version, second->reply.version);
  ASSERT_EQ(a_->erase(p->pool, "key"), StatusCode::kOk);
  EXPECT_FALSE(
      valid_record(a_->read_record(second->reply.record, second->reply.record_bytes), "key"));
}

TEST_P(KvServiceTest, LocateAndReleaseMoveLargeValuesAndRangesAndLockKeys) {
  start();
  auto p = a_->create("direct", 16 << 20);
  ASSERT_TRUE(p.ok());
  const uint64_t pool = p->pool;
  ThreadClient* c = a_->client();
  // kPutNew of a value larger than a message, written one-sidedly.
  std::string value(3 << 20, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 7 + i / 4096);
  auto l = a_->locate(pool, "large", kw::LocateMode::kPutNew, 0, value.size());
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->length, value.size());
  EXPECT_EQ(a_->get(pool, "large").status().code(), StatusCode::kNotFound);  // not yet published
  auto b = connect();
  auto pb = b->open("direct");
  ASSERT_TRUE(pb.ok());
  EXPECT_EQ(b->put(pb->pool, "large", "x"), StatusCode::kBusy);
  EXPECT_EQ(b->locate(pb->pool, "large", kw::LocateMode::kRead).status().code(), StatusCode::kBusy);
  ASSERT_TRUE(
      sync_wait(c->write(GlobalAddress(kNode, l->address), value.data(), value.size())).ok());
  ASSERT_TRUE(a_->release(pool, l->token).ok());
  EXPECT_EQ(a_->release(pool, l->token).code(), StatusCode::kNotFound);
  auto g = a_->one(pool, {KvOp::kGet, 0, "large", ""});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->reply.flags, kw::kReplyNeedsLocate);
  EXPECT_EQ(g->reply.value_bytes, value.size());
  EXPECT_EQ(*a_->attribute(pool, kw::Attribute::kValueLength, "large"), value.size());
  EXPECT_EQ(*a_->attribute(pool, kw::Attribute::kCrc32, "large"),
            crc32_z(0, reinterpret_cast<const Bytef*>(value.data()), value.size()));
  EXPECT_GT(*a_->attribute(pool, kw::Attribute::kWriteEpoch, "large"), 0u);
  EXPECT_TRUE(valid_record(
      a_->read_record(g->reply.record,
                      static_cast<uint32_t>(sizeof(kw::KvRecordHeader) + 5 + value.size())),
      "large"));

  // A read lock on a range: shared with other readers, excludes writers.
  auto r = b->locate(pb->pool, "large", kw::LocateMode::kRead, 1000, 5000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->length, 5000u);
  EXPECT_EQ(r->value_bytes, value.size());
  auto r2 = a_->locate(pool, "large", kw::LocateMode::kRead, 1 << 20);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->length, value.size() - (1 << 20));
  std::string part(5000, '\0');
  ASSERT_TRUE(
      sync_wait(b->client()->read(GlobalAddress(kNode, r->address), part.data(), 5000)).ok());
  EXPECT_EQ(part, value.substr(1000, 5000));
  EXPECT_EQ(a_->locate(pool, "large", kw::LocateMode::kWrite).status().code(), StatusCode::kBusy);
  EXPECT_EQ(a_->put(pool, "large", "y"), StatusCode::kBusy);
  EXPECT_EQ(a_->locate(pool, "large", kw::LocateMode::kRead, value.size() + 1).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(a_->release(pool, r->token).code(), StatusCode::kNotFound);  // b's token
  ASSERT_TRUE(b->release(pb->pool, r->token).ok());
  ASSERT_TRUE(a_->release(pool, r2->token).ok());

  // An in-place range write under a write lock: the record is `locked`, then live again with a
  // new version and checksum.
  ASSERT_EQ(a_->put(pool, "small", "hello world"), StatusCode::kOk);
  auto before = a_->one(pool, {KvOp::kGet, 0, "small", ""});
  auto wl = a_->locate(pool, "small", kw::LocateMode::kWrite, 6, 5);
  ASSERT_TRUE(wl.ok());
  EXPECT_EQ(b->get(pb->pool, "small").status().code(), StatusCode::kBusy);
  EXPECT_FALSE(
      valid_record(a_->read_record(before->reply.record, before->reply.record_bytes), "small"));
  ASSERT_TRUE(sync_wait(c->write(GlobalAddress(kNode, wl->address), "WORLD", 5)).ok());
  ASSERT_TRUE(a_->release(pool, wl->token).ok());
  auto after = a_->one(pool, {KvOp::kGet, 0, "small", ""});
  EXPECT_EQ(after->value, "hello WORLD");
  EXPECT_EQ(after->reply.record, before->reply.record);
  EXPECT_GT(after->reply.version, before->reply.version);
  EXPECT_TRUE(
      valid_record(a_->read_record(after->reply.record, after->reply.record_bytes), "small"));

  // An aborted kPutNew keeps the old value; a create-only one refuses an existing key.
  auto ab = a_->locate(pool, "small", kw::LocateMode::kPutNew, 0, 10);
  ASSERT_TRUE(ab.ok());
  ASSERT_TRUE(a_->release(pool, ab->token, kw::kReleaseAbort).ok());
  EXPECT_EQ(*a_->get(pool, "small"), "hello WORLD");
  EXPECT_EQ(a_->locate(pool, "small", kw::LocateMode::kPutNew, 0, 10, kw::kLocateCreateOnly)
                .status()
                .code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(a_->locate(pool, "missing", kw::LocateMode::kRead).status().code(),
            StatusCode::kNotFound);
}

TEST_P(KvServiceTest, SessionEndReleasesLocksAndHandles) {
  start();
  auto b = connect();
  auto pb = b->create("shared");
  ASSERT_TRUE(pb.ok());
  ASSERT_EQ(b->put(pb->pool, "w", "old value"), StatusCode::kOk);
  auto wl = b->locate(pb->pool, "w", kw::LocateMode::kWrite);
  ASSERT_TRUE(wl.ok());
  auto nl = b->locate(pb->pool, "n", kw::LocateMode::kPutNew, 0, 100);
  ASSERT_TRUE(nl.ok());
  auto pa = a_->open("shared");
  ASSERT_TRUE(pa.ok());
  EXPECT_EQ(a_->put(pa->pool, "w", "x"), StatusCode::kBusy);
  EXPECT_EQ(a_->put(pa->pool, "n", "x"), StatusCode::kBusy);
  ASSERT_TRUE(a_->close(pa->pool).ok());
  EXPECT_EQ(a_->destroy("shared").code(), StatusCode::kBusy);
  disconnect(b);
  // The server notices the end within moments; the locks and the handle go with it.
  pa = a_->open("shared");
  ASSERT_TRUE(pa.ok());
  StatusCode code = StatusCode::kBusy;
  for (int i = 0; i < 2000 && code == StatusCode::kBusy; ++i) code = a_->put(pa->pool, "w", "new");
  EXPECT_EQ(code, StatusCode::kOk);
  EXPECT_EQ(a_->get(pa->pool, "n").status().code(), StatusCode::kNotFound);  // dropped
  EXPECT_EQ(a_->put(pa->pool, "n", "x"), StatusCode::kOk);
  auto info = a_->info(pa->pool);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->open_handles, 1u);
  ASSERT_TRUE(a_->destroy("shared").ok());
}

TEST_P(KvServiceTest, FindIteratesOverTheSecondaryIndex) {
  start();
  auto p = a_->create("find");
  ASSERT_TRUE(p.ok());
  const uint64_t pool = p->pool;
  for (const char* k : {"apple", "apricot", "banana", "blueberry", "cherry"}) {
    ASSERT_EQ(a_->put(pool, k, "v"), StatusCode::kOk);
  }
  EXPECT_EQ(a_->find(pool, "prefix:a", 0).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(a_->configure(pool, "AddIndex::VolatileTree").ok());
  ASSERT_EQ(a_->put(pool, "avocado", "v"), StatusCode::kOk);
  std::vector<std::string> keys;
  for (uint64_t pos = 0;;) {
    auto f = a_->find(pool, "next:", pos);
    if (!f.ok()) {
      EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
      break;
    }
    keys.push_back(f->key);
    pos = f->position + 1;
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"apple", "apricot", "avocado", "banana", "blueberry",
                                            "cherry"}));
  auto f = a_->find(pool, "prefix:b", 0);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->key, "banana");
  EXPECT_EQ(f->position, 3u);
  f = a_->find(pool, "prefix:b", 4);
  EXPECT_EQ(f->key, "blueberry");
  EXPECT_EQ(a_->find(pool, "prefix:b", 5).status().code(), StatusCode::kNotFound);
  f = a_->find(pool, "regex:.*rr.*", 0);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->key, "blueberry");
  f = a_->find(pool, "regex:.*rr.*", 5);
  EXPECT_EQ(f->key, "cherry");
  f = a_->find(pool, "exact:banana", 0);
  EXPECT_EQ(f->position, 3u);
  EXPECT_EQ(a_->find(pool, "exact:banana", 4).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(a_->find(pool, "regex:(", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a_->find(pool, "glob:*", 0).status().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(a_->erase(pool, "banana"), StatusCode::kOk);
  EXPECT_EQ(a_->find(pool, "prefix:b", 0)->key, "blueberry");
  ASSERT_TRUE(a_->configure(pool, "RemoveIndex").ok());
  EXPECT_EQ(a_->find(pool, "next:", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a_->configure(pool, "AddIndex::Other").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(a_->configure(pool, "AdoPlugins::libcounter.so").ok());
  EXPECT_EQ(a_->info(pool)->flags, kw::kPoolHasAdo);
  EXPECT_EQ(a_->configure(pool, "AdoPlugins::../evil.so").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a_->configure(pool, "AdoSignals::post-put,post-nothing").code(),
            StatusCode::kInvalidArgument);
  // No ADO manager in this node: invocations say so.
  std::string invoke = kv::testing::bytes_of(kw::KvAdoRequest{pool, 0, 0, 1, 0, 0}) + "k";
  EXPECT_EQ(a_->call(KvOpcode::kInvokeAdo, invoke).code(), StatusCode::kUnavailable);
}

TEST_P(KvServiceTest, PoolFullAndLimitsAreErrors) {
  start(1, 0);
  auto p = a_->create("small", kw::kMinPoolCapacity);
  ASSERT_TRUE(p.ok());
  const std::string value(1000, 'v');
  int stored = 0;
  StatusCode code = StatusCode::kOk;
  for (; stored < 1000; ++stored) {
    code = a_->put(p->pool, "key" + std::to_string(stored), value);
    if (code != StatusCode::kOk) break;
  }
  EXPECT_EQ(code, StatusCode::kResourceExhausted);
  EXPECT_GT(stored, 20);
  EXPECT_LE(a_->info(p->pool)->used_bytes, kw::kMinPoolCapacity);
  // Erasing makes room again (grace 0 here).
  for (int i = 0; i < stored; ++i)
    ASSERT_EQ(a_->erase(p->pool, "key" + std::to_string(i)), StatusCode::kOk);
  for (int i = 0; i < stored; ++i) {
    ASSERT_EQ(a_->put(p->pool, "again" + std::to_string(i), value), StatusCode::kOk) << i;
  }
  EXPECT_EQ(
      a_->locate(p->pool, "x", kw::LocateMode::kPutNew, 0, kw::kMaxValueBytes + 1).status().code(),
      StatusCode::kInvalidArgument);
}

TEST_P(KvServiceTest, MalformedRequestsGetErrorRepliesAndTheNodeServesOn) {
  start();
  auto p = a_->create("bad");
  ASSERT_TRUE(p.ok());
  const uint64_t pool = p->pool;
  auto expect_code = [&](KvOpcode op, const std::string& payload, StatusCode want) {
    Status s = a_->call(op, payload);
    EXPECT_EQ(s.code(), want) << "opcode " << static_cast<int>(op) << ": " << s.to_string();
  };
  const StatusCode kInval = StatusCode::kInvalidArgument;
  expect_code(KvOpcode::kPoolCreate, "", kInval);
  expect_code(KvOpcode::kPoolCreate, kv::encode_pool_request("x", 1 << 20, 0, 0) + "y", kInval);
  expect_code(KvOpcode::kPoolCreate, kv::encode_pool_request("x", 1 << 20, 0, 0x80), kInval);
  expect_code(KvOpcode::kPoolCreate, kv::encode_pool_request("", 1 << 20, 0, 0), kInval);
  expect_code(KvOpcode::kPoolCreate, kv::encode_pool_request(std::string(121, 'n'), 1 << 20, 0, 0),
              kInval);
  expect_code(KvOpcode::kPoolOpen, kv::encode_pool_request("bad", 5, 0, 0), kInval);
  expect_code(KvOpcode::kPoolClose, kv::encode_pool_ref(pool) + "x", kInval);
  expect_code(KvOpcode::kPoolClose, kv::encode_pool_ref(pool ^ 1), StatusCode::kNotFound);
  expect_code(KvOpcode::kPoolInfo, kv::encode_pool_ref(0xFF00000000000001ull),
              StatusCode::kNotFound);
  auto ops = kv::testing::ops_request(pool, {{KvOp::kPut, 0, "k", "v"}});
  std::string bad = ops;
  bad[8] = 0;  // count 0
  expect_code(KvOpcode::kOps, bad, kInval);
  bad = ops;
  bad[16] = 9;  // unknown op
  expect_code(KvOpcode::kOps, bad, kInval);
  bad = ops;
  bad.back() = 1;  // padding
  expect_code(KvOpcode::kOps, bad, kInval);
  expect_code(KvOpcode::kOps, ops + std::string(8, '\0'), kInval);
  expect_code(KvOpcode::kOps, ops.substr(0, ops.size() - 8), kInval);
  bad = ops;
  bad[12] = 1;  // header reserved
  expect_code(KvOpcode::kOps, bad, kInval);
  bad = ops;
  bad[20] = 0xFF;  // key_bytes huge
  bad[21] = 0xFF;
  bad[22] = 0xFF;
  expect_code(KvOpcode::kOps, bad, kInval);
  expect_code(KvOpcode::kOps, kv::testing::ops_request(pool, {{KvOp::kGet, 1, "k", ""}}), kInval);
  expect_code(KvOpcode::kOps, kv::testing::ops_request(pool, {{KvOp::kGet, 0, "", ""}}), kInval);
  expect_code(KvOpcode::kOps,
              kv::testing::ops_request(pool ^ (1ull << 32), {{KvOp::kGet, 0, "k", ""}}),
              StatusCode::kNotFound);
  expect_code(KvOpcode::kLocate, kv::encode_locate(pool, kw::LocateMode(7), 0, 0, 0, "k"), kInval);
  expect_code(KvOpcode::kLocate, kv::encode_locate(pool, kw::LocateMode::kRead, 1, 0, 0, "k"),
              kInval);
  expect_code(KvOpcode::kRelease, kv::encode_release(pool, 1, 2), kInval);
  expect_code(KvOpcode::kRelease, kv::encode_release(pool, 12345, 0), StatusCode::kNotFound);
  expect_code(KvOpcode::kFind, kv::encode_find(pool, 0, ""), kInval);
  expect_code(KvOpcode::kAttribute, kv::encode_attribute(pool, kw::Attribute(99), ""), kInval);
  expect_code(KvOpcode::kAttribute, kv::encode_attribute(pool, kw::Attribute::kCount, "k"), kInval);
  expect_code(KvOpcode::kShardStats, "x", kInval);
  expect_code(KvOpcode::kPoolList, kv::encode_list(0) + "x", kInval);
  expect_code(static_cast<KvOpcode>(300), "", kInval);
  // Still serving.
  ASSERT_EQ(a_->put(pool, "k", "v"), StatusCode::kOk);
  EXPECT_EQ(*a_->get(pool, "k"), "v");
  std::string reply;
  ASSERT_TRUE(a_->call(KvOpcode::kShardStats, "", &reply).ok());
  kw::KvShardStatsReply sr;
  std::memcpy(&sr, reply.data(), sizeof(sr));
  ASSERT_EQ(sr.shards, 1u);
  ASSERT_EQ(reply.size(), sizeof(sr) + sizeof(kw::KvShardStats));
  kw::KvShardStats st;
  std::memcpy(&st, reply.data() + sizeof(sr), sizeof(st));
  EXPECT_GE(st.failures, 20u);
  EXPECT_EQ(st.puts, 1u);
  EXPECT_EQ(st.gets, 1u);
  EXPECT_EQ(st.pools, 1u);
  EXPECT_EQ(st.clients, 1u);
  EXPECT_EQ(st.ops_messages, 2u);
}

TEST_P(KvServiceTest, TwoWorkersForwardToThePoolsShardAndReleaseOnSessionEnd) {
  start(2);
  // Names on both shards (the client's session is on worker 0).
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i) names.push_back("pool-" + std::to_string(i));
  std::vector<uint64_t> pools;
  std::set<uint32_t> workers;
  for (const auto& n : names) {
    auto p = a_->create(n);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    pools.push_back(p->pool);
    workers.insert(kw::pool_worker(p->pool));
  }
  EXPECT_EQ(workers, (std::set<uint32_t>{0, 1}));
  for (size_t i = 0; i < pools.size(); ++i) {
    ASSERT_EQ(a_->put(pools[i], "k", names[i]), StatusCode::kOk);
  }
  for (size_t i = 0; i < pools.size(); ++i) EXPECT_EQ(*a_->get(pools[i], "k"), names[i]);
  std::string reply;
  ASSERT_TRUE(a_->call(KvOpcode::kPoolList, kv::encode_list(0), &reply).ok());
  kw::KvListReply lr;
  std::memcpy(&lr, reply.data(), sizeof(lr));
  EXPECT_EQ(lr.total, names.size());
  ASSERT_TRUE(a_->call(KvOpcode::kShardStats, "", &reply).ok());
  kw::KvShardStatsReply sr;
  std::memcpy(&sr, reply.data(), sizeof(sr));
  EXPECT_EQ(sr.shards, 2u);
  uint64_t puts = 0, clients = 0;
  for (uint32_t i = 0; i < sr.shards; ++i) {
    kw::KvShardStats st;
    std::memcpy(&st, reply.data() + sizeof(sr) + i * sizeof(st), sizeof(st));
    puts += st.puts;
    clients += st.clients;
  }
  EXPECT_EQ(puts, names.size());
  EXPECT_EQ(clients, 2u);  // this session, on both shards
  // Locks and handles on the other shard end with the session.
  for (uint64_t p : pools) ASSERT_TRUE(a_->locate(p, "k", kw::LocateMode::kWrite).ok());
  disconnect(a_);
  auto b = connect();
  for (const auto& n : names) {
    Status s = Busy("");
    for (int i = 0; i < 2000 && s.code() == StatusCode::kBusy; ++i) s = b->destroy(n);
    EXPECT_TRUE(s.ok()) << n << ": " << s.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, KvServiceTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
