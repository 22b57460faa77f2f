// LocalBudget (common/local_budget.h) and the far cache's SegmentPool on a shared budget:
// charges never pass the limit, pressure reaches the other tenants only, a segment is charged
// when taken and its memory returned when given back. No processes.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "farmem/common/local_budget.h"
#include "farmem/far/object_manager.h"
#include "farmem/far/segment_pool.h"
#include "test_seed.h"

namespace farmem {
namespace {

TEST(LocalBudget, ChargesStopAtTheLimitAndTenantsShareIt) {
  LocalBudget b(1000);
  auto far = b.add_tenant("far");
  auto paged = b.add_tenant("paged");
  ASSERT_TRUE(far.ok() && paged.ok());
  EXPECT_TRUE((*far)->try_charge(600));
  EXPECT_FALSE((*paged)->try_charge(401));
  EXPECT_TRUE((*paged)->try_charge(400));
  EXPECT_FALSE((*far)->try_charge(1));
  EXPECT_EQ(b.used_bytes(), 1000u);
  EXPECT_EQ(b.headroom_bytes(), 0u);
  EXPECT_FALSE((*far)->try_charge(UINT64_MAX));  // no wrap-around
  (*far)->release(100);
  EXPECT_EQ(b.headroom_bytes(), 100u);
  EXPECT_EQ((*far)->charged_bytes(), 500u);
  EXPECT_EQ((*paged)->charged_bytes(), 400u);
  auto u = b.usage();
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].tenant, "far");
  EXPECT_EQ(u[0].tenant_bytes, 500u);
  EXPECT_EQ(u[0].peak_bytes, 600u);
  EXPECT_EQ(u[1].tenant_bytes, 400u);
  EXPECT_EQ(u[1].limit_bytes, 1000u);
  EXPECT_EQ(u[1].used_bytes, 900u);
  // force_charge passes the limit and is counted as overdraft.
  (*paged)->force_charge(300);
  EXPECT_EQ(b.used_bytes(), 1200u);
  EXPECT_EQ((*paged)->usage().overdraft_bytes, 200u);
  EXPECT_EQ(b.headroom_bytes(), 0u);
  // remove_tenant releases what is left.
  b.remove_tenant(*paged);
  EXPECT_EQ(b.used_bytes(), 500u);
  EXPECT_EQ(b.usage().size(), 1u);
}

TEST(LocalBudget, PressureReachesOnlyTheOtherTenants) {
  LocalBudget b(1 << 20);
  auto far = b.add_tenant("far");
  auto paged = b.add_tenant("paged");
  ASSERT_TRUE(far.ok() && paged.ok());
  const uint64_t far_seen = (*far)->others_pressure();
  const uint64_t paged_seen = (*paged)->others_pressure();
  (*far)->signal_pressure();
  EXPECT_EQ((*far)->others_pressure(), far_seen);
  EXPECT_NE((*paged)->others_pressure(), paged_seen);
  EXPECT_EQ((*far)->usage().pressure_signals, 1u);
}

TEST(LocalBudget, TenantsAreBounded) {
  LocalBudget b(1 << 20);
  std::vector<LocalBudget::Tenant*> ts;
  for (size_t i = 0; i < LocalBudget::kMaxTenants; ++i) {
    auto t = b.add_tenant(std::to_string(i));
    ASSERT_TRUE(t.ok());
    ts.push_back(*t);
  }
  auto extra = b.add_tenant("extra");
  EXPECT_EQ(extra.status().code(), StatusCode::kResourceExhausted);
  b.remove_tenant(ts[3]);
  EXPECT_TRUE(b.add_tenant("again").ok());
}

// Threads charge and release random amounts: no successful charge ever takes the total past
// the limit, and everything released brings it back to zero.
TEST(LocalBudget, ConcurrentChargesNeverPassTheLimit) {
  const uint64_t seed = testing::test_seed();
  constexpr uint64_t kLimit = 1 << 20;
  LocalBudget b(kLimit);
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    auto tenant = b.add_tenant(std::to_string(t));
    ASSERT_TRUE(tenant.ok());
    threads.emplace_back([&b, &over, tenant = *tenant, s = seed + t] {
      std::mt19937_64 rng(s);
      std::vector<uint64_t> held;
      for (int i = 0; i < 20000; ++i) {
        if (held.empty() || rng() % 2 == 0) {
          const uint64_t n = 4096 * (1 + rng() % 16);
          if (tenant->try_charge(n)) held.push_back(n);
          if (b.used_bytes() > kLimit) over = true;
        } else {
          tenant->release(held.back());
          held.pop_back();
        }
      }
      for (uint64_t n : held) tenant->release(n);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(over.load());
  EXPECT_EQ(b.used_bytes(), 0u);
}

size_t resident_pages(const uint8_t* p, uint64_t bytes) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((bytes + page - 1) / page);
  EXPECT_EQ(mincore(const_cast<uint8_t*>(p), bytes, vec.data()), 0);
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

TEST(SharedSegmentPool, SegmentsAreChargedWhenTakenAndReturnedWhenGiven) {
  constexpr uint64_t kSeg = 64 << 10;
  LocalBudget b(16 * kSeg);
  auto pool = far::SegmentPool::create(0, kSeg, &b);  // budget_bytes ignored: the shared limit
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  far::SegmentPool& p = **pool;
  EXPECT_EQ(p.total(), 16u);
  ASSERT_NE(p.tenant(), nullptr);
  auto other = b.add_tenant("paged");
  ASSERT_TRUE(other.ok());
  const uint64_t seen = (*other)->others_pressure();
  // Another tenant holds 12 segments' worth: only 4 free segments can be paid for.
  ASSERT_TRUE((*other)->try_charge(12 * kSeg));
  EXPECT_EQ(p.free_segments(), 4u);
  std::vector<uint8_t*> segs;
  for (int i = 0; i < 4; ++i) {
    uint8_t* s = p.take();
    ASSERT_NE(s, nullptr);
    std::memset(s, 0xab, kSeg);
    segs.push_back(s);
  }
  EXPECT_EQ(p.tenant()->charged_bytes(), 4 * kSeg);
  EXPECT_EQ(b.used_bytes(), 16 * kSeg);
  EXPECT_EQ(p.free_segments(), 0u);
  EXPECT_EQ(p.take(), nullptr);  // 12 segments are free in the pool, none can be paid for
  EXPECT_NE((*other)->others_pressure(), seen) << "a failed take signals pressure";
  EXPECT_EQ(resident_pages(p.base(), p.bytes()) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)),
            4 * kSeg);
  // Given back: uncharged and no longer resident.
  p.give(segs.back());
  segs.pop_back();
  EXPECT_EQ(p.tenant()->charged_bytes(), 3 * kSeg);
  EXPECT_EQ(resident_pages(p.base(), p.bytes()) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)),
            3 * kSeg);
  EXPECT_EQ(p.free_segments(), 1u);
  (*other)->release(12 * kSeg);
  EXPECT_EQ(p.free_segments(), 13u);  // the pool's own free list bounds it now
  for (uint8_t* s : segs) p.give(s);
  EXPECT_EQ(b.used_bytes(), 0u);
}

// Warm segments: given back but kept charged and resident for the next take(), until another
// tenant signals pressure.
TEST(SharedSegmentPool, WarmSegmentsStayChargedUntilAnotherTenantIsShort) {
  constexpr uint64_t kSeg = 64 << 10;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  LocalBudget b(8 * kSeg);
  auto pool = far::SegmentPool::create(0, kSeg, &b);
  ASSERT_TRUE(pool.ok());
  far::SegmentPool& p = **pool;
  p.set_warm_cap(1);
  auto other = b.add_tenant("paged");
  ASSERT_TRUE(other.ok());
  uint8_t* s1 = p.take();
  uint8_t* s2 = p.take();
  ASSERT_TRUE(s1 != nullptr && s2 != nullptr);
  std::memset(s1, 1, kSeg);
  std::memset(s2, 2, kSeg);
  p.give(s1);  // warm: still charged, still resident
  p.give(s2);  // beyond the cap: dropped
  EXPECT_EQ(p.tenant()->charged_bytes(), kSeg);
  EXPECT_EQ(resident_pages(p.base(), p.bytes()) * page, kSeg);
  EXPECT_EQ(p.free_segments(), 8u);  // 1 warm + 7 the budget can pay for
  EXPECT_EQ(p.taken_bytes(), 0u);
  EXPECT_EQ(p.take(), s1) << "a warm segment is handed out first, without a new charge";
  EXPECT_EQ(p.tenant()->charged_bytes(), kSeg);
  p.give(s1);
  // Another tenant is short: the next give/take (or release_warm) drops the warm segment.
  (*other)->signal_pressure();
  uint8_t* s3 = p.take();
  ASSERT_NE(s3, nullptr);  // (s1's address again, perhaps: dropped, then charged anew)
  EXPECT_EQ(p.tenant()->charged_bytes(), kSeg);  // s3 only
  EXPECT_EQ(resident_pages(p.base(), p.bytes()), 0u) << "the warm segment's pages were dropped";
  p.give(s3);  // warm again (no new pressure)
  EXPECT_EQ(p.tenant()->charged_bytes(), kSeg);
  p.release_warm();
  EXPECT_EQ(p.tenant()->charged_bytes(), 0u);
  EXPECT_EQ(b.used_bytes(), 0u);
}

TEST(SharedSegmentPool, WithoutABudgetThePoolKeepsItsOwnCount) {
  auto pool = far::SegmentPool::create(8 * (64 << 10), 64 << 10);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->tenant(), nullptr);
  uint8_t* s = (*pool)->take();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ((*pool)->free_segments(), 7u);
  EXPECT_EQ((*pool)->taken_bytes(), 64u << 10);
  (*pool)->give(s);
  EXPECT_EQ((*pool)->free_segments(), 8u);
}

TEST(SharedSegmentPool, TheManagerUsesTheSharedLimit) {
  LocalBudget b(8 << 20);
  far::ObjectManagerOptions o;
  o.local_bytes = 1 << 20;  // ignored
  o.shared_budget = &b;
  auto m = far::ObjectManager::create(o);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->options().local_bytes, 8u << 20);
  EXPECT_EQ((*m)->pool().bytes(), 8u << 20);
  BudgetUsage u = (*m)->budget_usage();
  EXPECT_EQ(u.tenant, "far");
  EXPECT_EQ(u.limit_bytes, 8u << 20);
  EXPECT_EQ(u.tenant_bytes, 0u);
  uint8_t* s = (*m)->pool().take();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ((*m)->budget_usage().tenant_bytes, (*m)->pool().segment_bytes());
  (*m)->pool().give(s);
  m->reset();
  EXPECT_TRUE(b.usage().empty()) << "the manager's tenant ends with it";
}

}  // namespace
}  // namespace farmem
