// Far objects (far/far_ptr.h) against a real memory node: the pointer API, sizes at the
// bounds, eviction and fetch, scope pinning while the evacuator runs, a writer's updates under
// evacuation, the budget, and a killed node.
#include <signal.h>
#include <sys/resource.h>

#include <array>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "far_fixture.h"
#include "farmem/far/far_ptr.h"
#include "farmem/runtime/when_all.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using far::DerefScope;
using far::SharedPtr;
using far::ThreadCache;
using far::UniquePtr;
using runtime::Task;

struct Small {
  uint64_t v;
};
template <size_t N>
struct Blob {
  std::array<uint8_t, N> bytes;
};

class FarObjectTest : public FarTest {};

Task<Status> basic_api(ThreadCache* cache) {
  auto p = co_await far::allocate_unique<Small>(cache);
  if (!p.ok()) co_return p.status();
  auto v0 = co_await p->read();
  if (!v0.ok() || v0->v != 0) co_return Internal("a new object reads as zeros");
  Status s = co_await p->write(Small{42});
  if (!s.ok()) co_return s;
  {
    auto scope = co_await DerefScope::enter(*cache);
    if (!scope.ok()) co_return scope.status();
    auto w = co_await p->deref_mut(*scope);
    if (!w.ok()) co_return w.status();
    (*w)->v += 1;
    auto r = co_await p->deref(*scope);
    if (!r.ok() || (*r)->v != 43 || p->try_deref(*scope) != *r) co_return Internal("deref");
  }
  auto v1 = co_await p->read();
  if (!v1.ok() || v1->v != 43) co_return Internal("read after deref_mut");
  const GlobalAddress first = p->remote();
  s = co_await p->free();
  if (!s.ok()) co_return s;
  if (!p->is_null()) co_return Internal("free leaves the pointer null");
  auto q = co_await far::allocate_unique<Small>(cache);
  if (!q.ok()) co_return q.status();
  if (q->remote() != first) co_return Internal("far memory of a freed object is reused");
  // SharedPtr: the object lives while a copy does.
  auto sp = co_await far::allocate_shared<Small>(cache);
  if (!sp.ok()) co_return sp.status();
  s = co_await sp->write(Small{7});
  if (!s.ok()) co_return s;
  SharedPtr<Small> copy = *sp;
  if (copy.use_count() != 2) co_return Internal("use_count");
  sp->reset();
  auto v2 = co_await copy.read();
  if (!v2.ok() || v2->v != 7) co_return Internal("a copy keeps the object");
  co_return OkStatus();
}

TEST_P(FarObjectTest, PointerApi) {
  start(4 << 20);
  Status s = c_->run(basic_api(cache_.get()));
  EXPECT_TRUE(s.ok()) << s.to_string();
}

template <size_t N>
Task<Status> round_trip_size(ThreadCache* cache, uint8_t seed) {
  auto p = co_await far::allocate_unique<Blob<N>>(cache);
  if (!p.ok()) co_return p.status();
  Blob<N> b;
  for (size_t i = 0; i < N; ++i) b.bytes[i] = static_cast<uint8_t>(seed + i * 7);
  Status s = co_await p->write(b);
  if (!s.ok()) co_return s;
  auto left = co_await cache->evict_all();
  if (!left.ok()) co_return left.status();
  if (p->present()) co_return Internal("evict_all dropped the object");
  auto back = co_await p->read();  // a miss: fetched with one read
  if (!back.ok()) co_return back.status();
  if (std::memcmp(back->bytes.data(), b.bytes.data(), N) != 0) co_return Internal("bytes differ");
  co_return OkStatus();
}

TEST_P(FarObjectTest, ObjectSizesAtTheBounds) {
  start(4 << 20, 256 << 10);  // max object: 128 KiB
  ASSERT_EQ(cache_->max_object_bytes(), 128u << 10);
  EXPECT_TRUE(c_->run(round_trip_size<1>(cache_.get(), 1)).ok());
  EXPECT_TRUE(c_->run(round_trip_size<8>(cache_.get(), 2)).ok());
  EXPECT_TRUE(c_->run(round_trip_size<4096>(cache_.get(), 3)).ok());
  EXPECT_TRUE(c_->run(round_trip_size<64 << 10>(cache_.get(), 4)).ok());
  Status s = c_->run(round_trip_size<128 << 10>(cache_.get(), 5));
  EXPECT_TRUE(s.ok()) << s.to_string();
  auto too_big = c_->run(cache_->allocate((128 << 10) + 1));
  EXPECT_EQ(too_big.status().code(), StatusCode::kInvalidArgument);
  auto zero = c_->run(cache_->allocate(0));
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  EXPECT_GT(cache_->stats().fetches, 0u);
}

// Writes more objects than fit in the budget, then reads every one back.
Task<Status> overflow_budget(ThreadCache* cache, std::vector<UniquePtr<Blob<1024>>>* objs,
                             size_t n) {
  for (size_t i = 0; i < n; ++i) {
    auto p = co_await far::allocate_unique<Blob<1024>>(cache);
    if (!p.ok()) co_return p.status();
    Blob<1024> b;
    std::memset(b.bytes.data(), static_cast<int>(i & 0xff), b.bytes.size());
    std::memcpy(b.bytes.data(), &i, sizeof(i));
    Status s = co_await p->write(b);
    if (!s.ok()) co_return s;
    objs->push_back(std::move(*p));
  }
  for (size_t i = 0; i < n; ++i) {
    auto b = co_await (*objs)[i].read();
    if (!b.ok()) co_return b.status();
    size_t got;
    std::memcpy(&got, b->bytes.data(), sizeof(got));
    if (got != i || b->bytes[100] != (i & 0xff)) co_return Internal("object " + std::to_string(i));
  }
  co_return OkStatus();
}

TEST_P(FarObjectTest, ObjectsBeyondTheBudgetAreEvictedAndFetchedBack) {
  start(1 << 20, 64 << 10);  // 16 segments
  std::vector<UniquePtr<Blob<1024>>> objs;
  const size_t n = tcp() ? 1200 : 8000;  // 1.2..8 MiB through a 1 MiB cache
  Status s = c_->run(overflow_budget(cache_.get(), &objs, n));
  ASSERT_TRUE(s.ok()) << s.to_string();
  const auto& st = cache_->stats();
  EXPECT_GT(st.evicted, 0u);
  EXPECT_GT(st.writebacks, 0u);
  EXPECT_GT(st.fetches, 0u);
  EXPECT_GT(st.evacuation_rounds, 0u);
  EXPECT_LE(cache_->segments_held(), manager_->pool().total());
  EXPECT_TRUE(cache_->evacuation_error().ok());
  // Every pointer's copy of the local address (moved around by the vector, its object moved
  // and dropped by the evacuator) agrees with its entry.
  DerefScope scope(*cache_);
  size_t present = 0;
  for (const auto& p : objs) {
    const uint8_t* local = p.entry()->local;
    ASSERT_EQ(p.present(), local != nullptr);
    ASSERT_EQ(reinterpret_cast<const uint8_t*>(p.try_deref(scope)), local);
    present += local != nullptr;
  }
  EXPECT_GT(present, 0u);
  EXPECT_LT(present, objs.size());
}

// Holds a pointer from a scope while another coroutine allocates enough to make the evacuator
// empty the segments filled before the scope began: the pinned object must stay where it is,
// with its bytes, until the scope ends (its segment is skipped as busy).
Task<Status> pinner(ThreadCache* cache, UniquePtr<Blob<512>>* p, int* phase, bool* moved) {
  auto scope = co_await DerefScope::enter(*cache);
  if (!scope.ok()) co_return scope.status();
  auto w = co_await p->deref_mut(*scope);
  if (!w.ok()) co_return w.status();
  Blob<512>* at = *w;
  std::memset(at->bytes.data(), 0x5a, 512);
  *phase = 1;
  while (*phase == 1) {
    co_await cache->client()->scheduler().yield();
    if (p->entry()->local != reinterpret_cast<uint8_t*>(at) || at->bytes[511] != 0x5a) {
      *moved = true;
    }
  }
  at->bytes[0] = 0x77;  // written through the pinned pointer after the churn
  co_return OkStatus();
}

Task<Status> churn(ThreadCache* cache, std::vector<UniquePtr<Blob<512>>>* objs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    auto p = co_await far::allocate_unique<Blob<512>>(cache);
    if (!p.ok()) co_return p.status();
    objs->push_back(std::move(*p));
  }
  co_return OkStatus();
}

Task<Status> churner(ThreadCache* cache, int* phase, size_t n) {
  while (*phase == 0) co_await cache->client()->scheduler().yield();
  std::vector<UniquePtr<Blob<512>>> objs;
  Status s = co_await churn(cache, &objs, n);
  *phase = 2;
  co_return s;
}

TEST_P(FarObjectTest, EvacuationNeverMovesAnObjectInALiveScope) {
  start(1 << 20, 64 << 10);  // 16 segments of 120 objects
  std::vector<UniquePtr<Blob<512>>> before;
  ASSERT_TRUE(c_->run(churn(cache_.get(), &before, 600)).ok());
  UniquePtr<Blob<512>> p = std::move(*c_->run(far::allocate_unique<Blob<512>>(cache_.get())));
  ASSERT_TRUE(c_->run(churn(cache_.get(), &before, 600)).ok());  // p's segment gets sealed
  int phase = 0;
  bool moved = false;
  std::vector<Task<Status>> tasks;
  tasks.push_back(pinner(cache_.get(), &p, &phase, &moved));
  tasks.push_back(churner(cache_.get(), &phase, 1100));
  auto results = c_->run(runtime::when_all(std::move(tasks)));
  for (auto& r : results) ASSERT_TRUE(r.ok()) << r.to_string();
  EXPECT_FALSE(moved);
  EXPECT_GT(cache_->stats().evacuation_rounds, 0u);
  EXPECT_GT(cache_->stats().evicted, 0u);
  // Once the scope is over the object can go, and comes back with the last write.
  ASSERT_TRUE(c_->run(cache_->evict_all()).ok());
  EXPECT_FALSE(p.present());
  auto back = c_->run(p.read());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->bytes[0], 0x77);
  EXPECT_EQ(back->bytes[1], 0x5a);
}

// A scope pins everything the thread dereferences after it began (the epoch protocol, as in
// AIFM): a scope that stays open while the thread churns through more than the budget makes
// the others wait for space, and they fail with kResourceExhausted instead of hanging.
TEST_P(FarObjectTest, AScopeHeldForeverGivesResourceExhaustedNotAHang) {
  start(1 << 20, 64 << 10, 5000, /*space_wait_ms=*/200);
  UniquePtr<Blob<512>> p = std::move(*c_->run(far::allocate_unique<Blob<512>>(cache_.get())));
  int phase = 0;
  bool moved = false;
  std::vector<Task<Status>> tasks;
  tasks.push_back(pinner(cache_.get(), &p, &phase, &moved));
  tasks.push_back(churner(cache_.get(), &phase, 4000));  // 2 MiB through a 1 MiB cache
  auto results = c_->run(runtime::when_all(std::move(tasks)));
  EXPECT_TRUE(results[0].ok());
  EXPECT_EQ(results[1].code(), StatusCode::kResourceExhausted) << results[1].to_string();
  EXPECT_FALSE(moved);
}

// Many coroutines increment counters in far objects while the budget forces evacuation; each
// increment is a deref_mut inside a scope that spans a yield. No update may be lost.
// Coroutine `me` of `of` owns the objects k with k % of == me (the read-yield-write below is
// not atomic between coroutines).
Task<Status> incrementer(ThreadCache* cache, std::vector<UniquePtr<Blob<256>>>* objs,
                         std::vector<uint64_t>* model, uint64_t seed, int ops, size_t me,
                         size_t of) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < ops; ++i) {
    const size_t k = (rng() % (objs->size() / of)) * of + me;
    auto scope = co_await DerefScope::enter(*cache);
    if (!scope.ok()) co_return scope.status();
    auto w = co_await (*objs)[k].deref_mut(*scope);
    if (!w.ok()) co_return w.status();
    uint64_t v;
    std::memcpy(&v, (*w)->bytes.data(), 8);
    co_await cache->client()->scheduler().yield();  // others (and the evacuator) run here
    ++v;
    std::memcpy((*w)->bytes.data(), &v, 8);
    ++(*model)[k];
  }
  co_return OkStatus();
}

TEST_P(FarObjectTest, UpdatesSurviveConcurrentEvacuation) {
  if (tcp()) {
    start(256 << 10, 16 << 10);  // every fetch and write-back is a served round trip
  } else {
    start(512 << 10, 32 << 10);
  }
  const uint64_t seed = test_seed();
  std::vector<UniquePtr<Blob<256>>> objs;
  const size_t n = tcp() ? 1500 : 6000;  // 3 x the cache in slots
  for (size_t i = 0; i < n; ++i) {
    auto p = c_->run(far::allocate_unique<Blob<256>>(cache_.get()));
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    objs.push_back(std::move(*p));
  }
  std::vector<uint64_t> model(n, 0);
  std::vector<Task<Status>> tasks;
  for (int i = 0; i < 16; ++i) {
    tasks.push_back(incrementer(cache_.get(), &objs, &model, seed + i, tcp() ? 40 : 600, i, 16));
  }
  auto results = c_->run(runtime::when_all(std::move(tasks)));
  for (auto& r : results) ASSERT_TRUE(r.ok()) << r.to_string();
  ASSERT_TRUE(c_->run(cache_->evict_all()).ok());
  for (size_t i = 0; i < n; ++i) {
    auto b = c_->run(objs[i].read());
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    uint64_t v;
    std::memcpy(&v, b->bytes.data(), 8);
    ASSERT_EQ(v, model[i]) << "object " << i;
  }
  EXPECT_GT(cache_->stats().evicted, 0u);
}

#if defined(__SANITIZE_ADDRESS__)
// libasan's (sanitizer/allocator_interface.h is not shipped with g++ 12).
extern "C" void __sanitizer_purge_allocator();
#endif

// Private resident memory (RssAnon): the shared-memory mapping of the node's region, which
// direct access writes through, is the far memory, not this process's. Under ASan the
// allocator's quarantine keeps freed blocks (over TCP every request message) resident; it is
// purged first so that live memory is what is measured.
uint64_t rss_bytes() {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_purge_allocator();
#endif
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "RssAnon:") {
      uint64_t kb = 0;
      f >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

Task<Status> allocate_many(ThreadCache* cache, std::vector<UniquePtr<Blob<4096>>>* objs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    auto p = co_await far::allocate_unique<Blob<4096>>(cache);
    if (!p.ok()) co_return p.status();
    objs->push_back(std::move(*p));
  }
  co_return OkStatus();
}

TEST_P(FarObjectTest, TheBudgetBoundsResidentMemory) {
  const uint64_t budget = 4 << 20;
  start(budget, 256 << 10);
  const uint64_t n = tcp() ? 4096 : 8192;  // 16..32 MiB of objects per round
  std::vector<UniquePtr<Blob<4096>>> objs;
  objs.reserve(2 * n);
  const uint64_t before = rss_bytes();
  Status s = c_->run(allocate_many(cache_.get(), &objs, n));
  ASSERT_TRUE(s.ok()) << s.to_string();
  const uint64_t mid = rss_bytes();
  s = c_->run(allocate_many(cache_.get(), &objs, n));
  ASSERT_TRUE(s.ok()) << s.to_string();
  const uint64_t after = rss_bytes();
  // The first round: the cache's pages plus the entries (48 B each) and the transport's
  // buffers; nothing like the 16..32 MiB written (ASan adds its shadow and allocator metadata).
  const uint64_t grown = mid - std::min(mid, before);
#if defined(__SANITIZE_ADDRESS__)
  const uint64_t slack = 12 << 20;
#else
  const uint64_t slack = 4 << 20;
#endif
  EXPECT_LE(grown, budget + slack) << "rss grew by " << grown;
  // The second round, with the cache already full: only the entries (n x 48 B) and heap noise,
  // against the 16..32 MiB written.
  const uint64_t more = after - std::min(after, mid);
  EXPECT_LE(more, n * 48 + slack / 4) << "rss grew by " << more << " more";
  EXPECT_LE(cache_->segments_held(), manager_->pool().total());
  EXPECT_GT(cache_->stats().evicted, n);
}

// Scopes that each pin an object and yield: more of them than the budget holds at once. New
// scopes wait for space instead of failing or overrunning.
Task<Status> holder(ThreadCache* cache, UniquePtr<Blob<16384>>* p, int yields) {
  auto scope = co_await DerefScope::enter(*cache);
  if (!scope.ok()) co_return scope.status();
  auto r = co_await p->deref(*scope);
  if (!r.ok()) co_return r.status();
  for (int i = 0; i < yields; ++i) co_await cache->client()->scheduler().yield();
  co_return OkStatus();
}

TEST_P(FarObjectTest, NewScopesWaitForSpace) {
  start(1 << 20, 64 << 10);  // 16 segments of 3 objects of 16 KiB
  std::vector<UniquePtr<Blob<16384>>> objs;
  for (int i = 0; i < 200; ++i) {
    auto p = c_->run(far::allocate_unique<Blob<16384>>(cache_.get()));
    ASSERT_TRUE(p.ok());
    objs.push_back(std::move(*p));
  }
  ASSERT_TRUE(c_->run(cache_->evict_all()).ok());
  std::vector<Task<Status>> tasks;
  for (auto& p : objs) tasks.push_back(holder(cache_.get(), &p, 20));
  auto results = c_->run(runtime::when_all(std::move(tasks)));
  for (auto& r : results) ASSERT_TRUE(r.ok()) << r.to_string();
  EXPECT_GT(cache_->stats().space_waits, 0u);
  EXPECT_LE(cache_->segments_held(), manager_->pool().total());
}

TEST_P(FarObjectTest, AKilledNodeGivesErrorsNotHangs) {
  start(1 << 20, 64 << 10, /*op_timeout_ms=*/1000);
  std::vector<UniquePtr<Blob<1024>>> objs;
  for (int i = 0; i < 64; ++i) {
    auto p = c_->run(far::allocate_unique<Blob<1024>>(cache_.get()));
    ASSERT_TRUE(p.ok());
    objs.push_back(std::move(*p));
  }
  ASSERT_TRUE(c_->run(cache_->evict_all()).ok());
  server_->signal(SIGKILL);
  // On shared memory the node's region stays mapped here, so a read right after the kill may
  // still succeed; wait until the session notices the node is gone (milliseconds).
  for (int i = 0; i < 20000 && c_->node_status(0).ok(); ++i) {
    c_->scheduler().poll_once();
    c_->check_liveness(now_ns());
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  auto r = c_->run(objs[3].read());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().code() == StatusCode::kPeerFailed ||
              r.status().code() == StatusCode::kTimedOut)
      << r.status().to_string();
  // Allocation fails cleanly too.
  auto a = c_->run(cache_->allocate(64));
  EXPECT_FALSE(a.ok()) << "allocation on a dead node";
}

INSTANTIATE_TEST_SUITE_P(Transports, FarObjectTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
