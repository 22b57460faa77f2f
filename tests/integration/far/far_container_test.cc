// Far containers (Array, Vector, CachedHashTable) against std containers under a tiny local budget,
// the prefetcher on and off, and remote compute against the same computation done locally.
#include <algorithm>
#include <map>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "far_fixture.h"
#include "farmem/far/array.h"
#include "farmem/far/cached_hash_table.h"
#include "farmem/far/vector.h"
#include "farmem/runtime/when_all.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using far::Array;
using far::CachedHashTable;
using far::ThreadCache;
using far::Vector;
using runtime::Task;

class FarContainerTest : public FarTest {};

struct Model {
  std::vector<uint64_t> array;
  std::vector<uint64_t> vec;
  std::unordered_map<uint64_t, uint64_t> map;
};

struct Containers {
  Array<uint64_t>* array;
  Vector<uint64_t>* vec;
  CachedHashTable<uint64_t, uint64_t>* map;
};

// One coroutine's random operations; coroutine `me` of `of` touches array slots i % of == me
// and keys k % of == me (read-modify-write sequences of different coroutines do not overlap).
Task<Status> mutate(Containers c, Model* m, uint64_t seed, int ops, uint64_t me, uint64_t of) {
  std::mt19937_64 rng(seed);
  for (int op = 0; op < ops; ++op) {
    const uint64_t r = rng();
    switch (r % 6) {
      case 0: {
        uint64_t i = (rng() % (c.array->size() / of)) * of + me;
        Status s = co_await c.array->write(i, r);
        if (!s.ok()) co_return s;
        m->array[i] = r;
        break;
      }
      case 1: {
        uint64_t i = rng() % c.array->size();
        auto v = co_await c.array->read(i);
        if (!v.ok()) co_return v.status();
        if (*v != m->array[i] && i % of == me) co_return Internal("array value differs");
        break;
      }
      case 2: {
        uint64_t k = (rng() % 5000) * of + me;
        Status s = co_await c.map->put(k, r);
        if (!s.ok()) co_return s;
        m->map[k] = r;
        break;
      }
      case 3: {
        uint64_t k = (rng() % 5000) * of + me;
        auto v = co_await c.map->find(k);
        if (!v.ok()) co_return v.status();
        auto it = m->map.find(k);
        if (v->has_value() != (it != m->map.end()) || (it != m->map.end() && **v != it->second)) {
          co_return Internal("hash table differs from the model");
        }
        break;
      }
      case 4: {
        uint64_t k = (rng() % 5000) * of + me;
        auto e = co_await c.map->erase(k);
        if (!e.ok()) co_return e.status();
        if (*e != (m->map.erase(k) == 1)) co_return Internal("erase differs");
        break;
      }
      case 5: {
        if (me != 0) break;  // one appender keeps the vector's order defined
        Status s = co_await c.vec->push_back(r);
        if (!s.ok()) co_return s;
        m->vec.push_back(r);
        break;
      }
    }
  }
  co_return OkStatus();
}

Task<Status> check_all(Containers c, Model* m) {
  for (uint64_t i = 0; i < c.array->size(); ++i) {
    auto v = co_await c.array->read(i);
    if (!v.ok()) co_return v.status();
    if (*v != m->array[i]) co_return Internal("array slot " + std::to_string(i));
  }
  if (c.vec->size() != m->vec.size()) co_return Internal("vector size");
  for (uint64_t i = 0; i < c.vec->size(); ++i) {
    auto v = co_await c.vec->read(i);
    if (!v.ok()) co_return v.status();
    if (*v != m->vec[i]) co_return Internal("vector element " + std::to_string(i));
  }
  for (const auto& [k, v] : m->map) {
    auto got = co_await c.map->find(k);
    if (!got.ok()) co_return got.status();
    if (!got->has_value() || **got != v) co_return Internal("key " + std::to_string(k));
  }
  if (c.map->size() != m->map.size()) co_return Internal("hash table size");
  co_return OkStatus();
}

Task<Status> model_run(ThreadCache* cache, uint64_t seed, int coroutines, int ops,
                       far::RemoteLookup remote) {
  auto a = co_await Array<uint64_t>::create(cache, 40000);
  if (!a.ok()) co_return a.status();
  auto h = co_await CachedHashTable<uint64_t, uint64_t>::create(cache, 12, remote);
  if (!h.ok()) co_return h.status();
  Vector<uint64_t> v(cache);
  Model m;
  m.array.assign(a->size(), 0);
  Containers c{&*a, &v, &*h};
  std::vector<Task<Status>> tasks;
  for (int i = 0; i < coroutines; ++i) {
    tasks.push_back(mutate(c, &m, seed + i, ops, i, coroutines));
  }
  auto results = co_await runtime::when_all(std::move(tasks));
  for (auto& r : results) {
    if (!r.ok()) co_return r;
  }
  auto left = co_await cache->evict_all();  // everything from far memory again
  if (!left.ok()) co_return left.status();
  Status s = co_await check_all(c, &m);
  co_return s;
}

// Many coroutines on each of two threads mutate far containers under a 256 KiB budget (shared
// by both threads), compared with the same operations on std containers.
TEST_P(FarContainerTest, RandomizedModelUnderATinyBudget) {
  start(512 << 10, 32 << 10);
  const uint64_t seed = test_seed();
  const int ops = tcp() ? 60 : 600;
  Status other;
  std::thread t([&] {
    auto tc = cluster_->thread_client();
    if (!tc.ok()) {
      other = tc.status();
      return;
    }
    {
      ThreadCache cache(manager_.get(), *tc);
      other = (*tc)->run(model_run(&cache, seed + 1000, 8, ops, far::RemoteLookup::kOn));
    }
    cluster_->release_thread_client();
  });
  Status mine = c_->run(model_run(cache_.get(), seed, 8, ops, far::RemoteLookup::kAuto));
  t.join();
  EXPECT_TRUE(mine.ok()) << mine.to_string();
  EXPECT_TRUE(other.ok()) << other.to_string();
  EXPECT_GT(cache_->stats().evicted, 0u);
  EXPECT_GT(cache_->stats().fetches, 0u);
}

// A lookup whose bucket is absent but being fetched (here by a prefetch) joins that fetch
// instead of asking the node about no bucket at all (found by the model test under ASan).
Task<Status> find_during_fetch(ThreadCache* cache, bool* saw_fetching) {
  auto h = co_await CachedHashTable<uint64_t, uint64_t>::create(cache, 4, far::RemoteLookup::kOn);
  if (!h.ok()) co_return h.status();
  for (uint64_t k = 0; k < 40; ++k) {
    Status s = co_await h->put(k, k * 7);
    if (!s.ok()) co_return s;
  }
  auto left = co_await cache->evict_all();
  if (!left.ok()) co_return left.status();
  for (uint64_t k = 0; k < 40; ++k) {
    const uint64_t b = far::hash_key(&k, sizeof(k)) & (h->buckets() - 1);
    far::Entry* e = h->store().chunk(b);
    if (e->local == nullptr && cache->prefetch(e)) {
      co_await cache->client()->scheduler().yield();  // the prefetch starts its read
      *saw_fetching |= (e->flags & far::kFetching) != 0;
    }
    auto v = co_await h->find(k);
    if (!v.ok()) co_return v.status();
    if (*v != std::optional<uint64_t>(k * 7)) co_return Internal("key " + std::to_string(k));
  }
  co_return OkStatus();
}

TEST_P(FarContainerTest, ALookupJoinsABucketFetchInFlight) {
  start(1 << 20, 64 << 10);
  bool saw_fetching = false;
  Status s = c_->run(find_during_fetch(cache_.get(), &saw_fetching));
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(saw_fetching);
}

// A lookup whose buckets are all local answers synchronously (try_find: no fetch, no frame);
// once they are evicted try_find declines and find() fetches them (or asks the node).
Task<Status> local_and_absent_lookups(ThreadCache* cache, far::RemoteLookup remote) {
  auto h = co_await CachedHashTable<uint64_t, uint64_t>::create(cache, 6, remote);
  if (!h.ok()) co_return h.status();
  for (uint64_t k = 0; k < 300; ++k) {
    Status s = co_await h->put(k, k * 3 + 1);
    if (!s.ok()) co_return s;
  }
  for (uint64_t k = 0; k < 400; ++k) {  // keys >= 300 are absent
    auto hit = h->try_find(k);
    if (!hit) co_return Internal("resident table: try_find declined key " + std::to_string(k));
    if (*hit != (k < 300 ? std::optional<uint64_t>(k * 3 + 1) : std::nullopt)) {
      co_return Internal("try_find: wrong answer for key " + std::to_string(k));
    }
  }
  auto left = co_await cache->evict_all();
  if (!left.ok()) co_return left.status();
  uint64_t declined = 0;
  for (uint64_t k = 0; k < 400; ++k) {
    declined += h->try_find(k) ? 0 : 1;
    auto v = co_await h->find(k);
    if (!v.ok()) co_return v.status();
    if (*v != (k < 300 ? std::optional<uint64_t>(k * 3 + 1) : std::nullopt)) {
      co_return Internal("find after eviction: wrong answer for key " + std::to_string(k));
    }
  }
  if (declined == 0) co_return Internal("evicted table: try_find never declined");
  co_return OkStatus();
}

TEST_P(FarContainerTest, LookupsOfLocalBucketsAnswerWithoutAFetch) {
  start(4 << 20, 64 << 10);
  for (auto remote : {far::RemoteLookup::kOff, far::RemoteLookup::kOn}) {
    Status s = c_->run(local_and_absent_lookups(cache_.get(), remote));
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
}

// A vector grown over many extents moves its chunk table several times; every chunk's local
// address mirror must follow (a stale mirror would read freed memory: ASan) through eviction
// and fetches under a budget smaller than the vector.
Task<Status> grow_evict_read(ThreadCache* cache, uint64_t n) {
  auto v = std::make_unique<Vector<uint64_t>>(cache, 512);  // 64 elements per chunk
  for (uint64_t i = 0; i < n; ++i) {
    Status s = co_await v->push_back(i ^ 0x5555);
    if (!s.ok()) co_return s;
  }
  for (int round = 0; round < 2; ++round) {
    auto left = co_await cache->evict_all();
    if (!left.ok()) co_return left.status();
    for (uint64_t i = 0; i < n; i += 7) {
      auto x = co_await v->read(i);
      if (!x.ok()) co_return x.status();
      if (*x != (i ^ 0x5555)) co_return Internal("element " + std::to_string(i));
    }
  }
  co_return OkStatus();
}

TEST_P(FarContainerTest, ChunkMirrorsFollowAGrowingVector) {
  start(1 << 20, 64 << 10);
  Status s = c_->run(grow_evict_read(cache_.get(), tcp() ? 100000 : 400000));  // 0.8..3.2 MB
  EXPECT_TRUE(s.ok()) << s.to_string();
}

Task<Result<uint64_t>> scan_sum(Array<uint64_t>* a, uint64_t stride) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < a->size(); i += stride) {
    auto v = co_await a->read(i);
    if (!v.ok()) co_return v.status();
    sum += *v * (i + 1);
  }
  co_return sum;
}

Task<Status> fill(Array<uint64_t>* a) {
  for (uint64_t i = 0; i < a->size(); ++i) {
    Status s = co_await a->write(i, i * 2654435761ull);
    if (!s.ok()) co_return s;
  }
  co_return OkStatus();
}

TEST_P(FarContainerTest, PrefetcherOnAndOffGiveIdenticalResults) {
  start(1 << 20, 64 << 10);
  const uint64_t n = tcp() ? 40000 : 200000;  // 0.3..1.6 MiB
  auto a = c_->run(Array<uint64_t>::create(cache_.get(), n));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(c_->run(fill(&*a)).ok());
  uint64_t sums[2][2];
  const uint64_t filled = cache_->stats().prefetches;  // the fill's sequential writes
  for (int on = 0; on < 2; ++on) {
    a->set_prefetch(on == 1);
    for (int k = 0; k < 2; ++k) {
      ASSERT_TRUE(c_->run(cache_->evict_all()).ok());
      auto s = c_->run(scan_sum(&*a, k == 0 ? 1 : 1024));
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      sums[on][k] = *s;
    }
    if (on == 0) {
      EXPECT_EQ(cache_->stats().prefetches, filled);
    }
  }
  EXPECT_EQ(sums[0][0], sums[1][0]);
  EXPECT_EQ(sums[0][1], sums[1][1]);
  EXPECT_GT(cache_->stats().prefetches, filled);
  // Explicit prefetch of a known pattern.
  ASSERT_TRUE(c_->run(cache_->evict_all()).ok());
  const uint64_t before = cache_->stats().prefetches;
  a->prefetch(0, 4096, 8);
  c_->scheduler().run_until_idle();
  EXPECT_GT(cache_->stats().prefetches, before);
  EXPECT_EQ(c_->run(a->read(n)).status().code(), StatusCode::kOutOfRange);
}

Task<Status> remote_compute(ThreadCache* cache, uint64_t n, uint64_t seed) {
  Vector<double> fare(cache);
  Vector<double> dist(cache);
  Vector<uint64_t> pax(cache);
  std::mt19937_64 rng(seed);
  std::vector<double> lf, ld;
  std::vector<uint64_t> lp;
  for (uint64_t i = 0; i < n; ++i) {
    const double f = static_cast<double>(rng() % 10000) / 100;
    const double d = static_cast<double>(rng() % 3000) / 100;
    const uint64_t p = rng() % 7;
    Status s = co_await fare.push_back(f);
    if (s.ok()) s = co_await dist.push_back(d);
    if (s.ok()) s = co_await pax.push_back(p);
    if (!s.ok()) co_return s;
    lf.push_back(f);
    ld.push_back(d);
    lp.push_back(p);
  }
  // sum/min/max.
  auto all = co_await fare.aggregate();
  if (!all.ok()) co_return all.status();
  double sum = 0;
  for (double f : lf) sum += f;
  const auto& c0 = (*all)[0];
  if (c0.count != n || std::abs(far::wire::from_bits<double>(c0.sum) - sum) > 1e-6 * sum ||
      far::wire::from_bits<double>(c0.min) != *std::min_element(lf.begin(), lf.end()) ||
      far::wire::from_bits<double>(c0.max) != *std::max_element(lf.begin(), lf.end())) {
    co_return Internal("remote sum/min/max differ");
  }
  // Filtered, grouped.
  auto grouped =
      co_await fare.aggregate(far::make_predicate(far::wire::Pred::kGt, 15.0), &dist, &pax);
  if (!grouped.ok()) co_return grouped.status();
  for (uint64_t g = 0; g < 7; ++g) {
    uint64_t cnt = 0;
    for (uint64_t i = 0; i < n; ++i) cnt += (ld[i] > 15.0 && lp[i] == g);
    if ((*grouped)[g].count != cnt) co_return Internal("grouped count differs");
  }
  // Filter.
  auto idx = co_await dist.filter(far::make_predicate(far::wire::Pred::kLe, 2.0));
  if (!idx.ok()) co_return idx.status();
  std::vector<uint64_t> want;
  for (uint64_t i = 0; i < n; ++i) {
    if (ld[i] <= 2.0) want.push_back(i);
  }
  if (*idx != want) co_return Internal("filter positions differ");
  // Copy by index, then read through the cache.
  Vector<double> picked(cache);
  Status s = co_await fare.copy_by_index(&*idx, &picked);
  if (!s.ok()) co_return s;
  for (uint64_t j = 0; j < want.size(); ++j) {
    auto v = co_await picked.read(j);
    if (!v.ok()) co_return v.status();
    if (*v != lf[want[j]]) co_return Internal("copy-by-index element differs");
  }
  // Top-k.
  auto top = co_await fare.top_k(5);
  if (!top.ok()) co_return top.status();
  std::vector<double> sorted = lf;
  std::sort(sorted.rbegin(), sorted.rend());
  for (size_t k = 0; k < 5; ++k) {
    if ((*top)[k].first != sorted[k] || lf[(*top)[k].second] != sorted[k]) {
      co_return Internal("top-k differs");
    }
  }
  co_return OkStatus();
}

TEST_P(FarContainerTest, RemoteComputeMatchesLocalComputation) {
  start(1 << 20, 64 << 10);
  Status s = c_->run(remote_compute(cache_.get(), tcp() ? 20000 : 300000, test_seed()));
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_GT(cache_->stats().rpc_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Transports, FarContainerTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
