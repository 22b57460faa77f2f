// Unit tests of the ADO store callbacks (kv/service/ado_callbacks.h) on a ServerPool in test
// memory, without an ADO process: what each callback returns, which locks an invocation keeps,
// and the requests it refuses.
#include "kv/service/ado_callbacks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>

#include "kv_test_region.h"

namespace farmem::kv::service {
namespace {

namespace w = farmem::kv::wire;
using ado::Callback;
using ado::CallbackOp;
using testing::TestRegion;

template <typename T>
T decode(const std::string& payload) {
  T v{};
  EXPECT_EQ(payload.size(), sizeof(T));
  std::memcpy(&v, payload.data(), std::min(payload.size(), sizeof(T)));
  return v;
}

class KvAdoCallbacksTest : public ::testing::Test {
 protected:
  KvAdoCallbacksTest()
      : region_(8 << 20),
        versions_(next_version_),
        pool_("p", 1, 1, 4 << 20, region_.view(), std::make_unique<TestRegion::Source>(region_),
              versions_, /*grace_ns=*/0, std::make_shared<PoolSummary>()) {
    EXPECT_TRUE(pool_.init(0, 0).ok());
    job_.work_id = 7;
  }

  Result<std::string> call(CallbackOp op, std::string key, uint64_t arg0 = 0, uint64_t arg1 = 0,
                           bool in_job = true) {
    Callback c;
    c.work_id = in_job ? job_.work_id : 0;
    c.op = op;
    c.key = std::move(key);
    c.arg0 = arg0;
    c.arg1 = arg1;
    return answer_callback(pool_, ado_, in_job ? &job_ : nullptr, c, ++now_);
  }

  void put(const std::string& key, const std::string& value) {
    KeyInfo info;
    bool existed = false;
    ASSERT_TRUE(
        pool_
            .put(key, value.data(), static_cast<uint32_t>(value.size()), 0, ++now_, &info, &existed)
            .ok());
  }

  TestRegion region_;
  std::atomic<uint64_t> next_version_{1};
  Versions versions_;
  ServerPool pool_;
  PoolAdo ado_;
  AdoJob job_;
  uint64_t now_ = 0;
};

TEST_F(KvAdoCallbacksTest, CreateKeyGivesAZeroedValueTheInvocationKeepsLocked) {
  auto r = call(CallbackOp::kCreateKey, "k", 100);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto v = decode<ado::ValueRange>(*r);
  EXPECT_EQ(v.bytes, 100u);
  const uint8_t* p = region_.view().at(v.offset);
  EXPECT_TRUE(std::all_of(p, p + v.bytes, [](uint8_t b) { return b == 0; }));
  ASSERT_EQ(job_.grants.size(), 1u);
  EXPECT_EQ(job_.grants[0].key, "k");
  EXPECT_EQ(job_.grants[0].mode, w::LocateMode::kPutNew);
  EXPECT_EQ(pool_.locks_held(), 1u);
  // Opening a key the invocation holds names the same value, with no new lock.
  auto again = call(CallbackOp::kOpenKey, "k", FARMEM_ADO_LOCK_WRITE);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(decode<ado::ValueRange>(*again).offset, v.offset);
  EXPECT_EQ(pool_.locks_held(), 1u);
}

TEST_F(KvAdoCallbacksTest, OutsideAnInvocationNoLockIsKept) {
  auto r = call(CallbackOp::kCreateKey, "k", 16, 0, /*in_job=*/false);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(pool_.locks_held(), 0u);
  EXPECT_TRUE(pool_.lookup("k").ok());  // released at once: published
  auto u = call(CallbackOp::kUnlock, "k", 0, 0, /*in_job=*/false);
  EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KvAdoCallbacksTest, KeysHeldByTheInvocationAreNotErasedOrUnlockedAsTheTarget) {
  put("target", "value");
  auto open = call(CallbackOp::kOpenKey, "target", FARMEM_ADO_LOCK_WRITE);
  ASSERT_TRUE(open.ok()) << open.status().to_string();
  EXPECT_EQ(call(CallbackOp::kEraseKey, "target").status().code(), StatusCode::kInvalidArgument);
  // The first grant is the invocation's target: it is released when the invocation ends.
  EXPECT_EQ(call(CallbackOp::kUnlock, "target").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call(CallbackOp::kUnlock, "other").status().code(), StatusCode::kNotFound);
  put("other", "x");
  ASSERT_TRUE(call(CallbackOp::kOpenKey, "other", FARMEM_ADO_LOCK_READ).ok());
  EXPECT_EQ(pool_.locks_held(), 2u);
  ASSERT_TRUE(call(CallbackOp::kUnlock, "other").ok());
  EXPECT_EQ(pool_.locks_held(), 1u);
  EXPECT_EQ(call(CallbackOp::kUnlock, "other").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(call(CallbackOp::kOpenKey, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call(CallbackOp::kOpenKey, "other", 9).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KvAdoCallbacksTest, ResizeKeepsTheContentsUpToTheSmallerSize) {
  put("k", "abcdef");
  ASSERT_TRUE(call(CallbackOp::kOpenKey, "k", FARMEM_ADO_LOCK_WRITE).ok());
  auto r = call(CallbackOp::kResize, "k", 3);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto v = decode<ado::ValueRange>(*r);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(region_.view().at(v.offset)), v.bytes),
            "abc");
  EXPECT_EQ(job_.grants.at(0).address, v.offset);
  // A value the invocation created grows zero-filled.
  ASSERT_TRUE(call(CallbackOp::kCreateKey, "new", 2).ok());
  std::memcpy(region_.view().at(job_.grants.at(1).address), "xy", 2);
  auto grown = call(CallbackOp::kResize, "new", 4);
  ASSERT_TRUE(grown.ok()) << grown.status().to_string();
  const auto g = decode<ado::ValueRange>(*grown);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(region_.view().at(g.offset)), g.bytes),
            std::string("xy\0\0", 4));
  EXPECT_EQ(call(CallbackOp::kResize, "absent", 4).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KvAdoCallbacksTest, PoolMemoryIsFreedOnlyAsAllocated) {
  EXPECT_EQ(call(CallbackOp::kAllocate, "", 100, 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call(CallbackOp::kAllocate, "", 0, 8).status().code(), StatusCode::kInvalidArgument);
  auto r = call(CallbackOp::kAllocate, "", 100, 64);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto v = decode<ado::ValueRange>(*r);
  EXPECT_EQ(v.bytes, 100u);
  EXPECT_EQ(ado_.allocations.size(), 1u);
  EXPECT_EQ(call(CallbackOp::kFree, "", v.offset, 99).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(call(CallbackOp::kFree, "", v.offset, 100).ok());
  EXPECT_TRUE(ado_.allocations.empty());
}

TEST_F(KvAdoCallbacksTest, IterateWalksASnapshotInPagesAndPoolInfoCounts) {
  put("a", "1");
  put("b", "2");
  put("c", "3");
  auto first = call(CallbackOp::kIterate, "", 0, 2);
  ASSERT_TRUE(first.ok());
  ado::IterateReply head{};
  std::memcpy(&head, first->data(), sizeof(head));
  EXPECT_EQ(head.count, 2u);
  EXPECT_EQ(head.next_cursor, 2u);
  EXPECT_EQ(first->size(), sizeof(head) + 2 * sizeof(ado::RecordRef));
  auto rest = call(CallbackOp::kIterate, "", 2, 2);
  ASSERT_TRUE(rest.ok());
  std::memcpy(&head, rest->data(), sizeof(head));
  EXPECT_EQ(head.count, 1u);
  EXPECT_EQ(head.next_cursor, UINT64_MAX);
  EXPECT_EQ(call(CallbackOp::kIterate, "", 9, 2).status().code(), StatusCode::kInvalidArgument);
  auto info = call(CallbackOp::kPoolInfo, "");
  ASSERT_TRUE(info.ok());
  const auto i = decode<farmem_ado_pool_info>(*info);
  EXPECT_EQ(i.count, 3u);
  EXPECT_EQ(i.capacity_bytes, pool_.capacity_bytes());
  EXPECT_EQ(call(CallbackOp::kFind, "exact:a").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farmem::kv::service
