// Far objects and containers across two network namespaces (two_hosts.h): the memory node on
// the other "host", UCX over TCP on a veth pair. Objects beyond the budget are evicted and
// fetched back, remote compute and remote hash lookups cross the link, and a killed node gives
// errors, not hangs. Lean: every fetch is a served round trip.
#include <signal.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "farmem/far/cached_hash_table.h"
#include "farmem/far/far_ptr.h"
#include "farmem/far/vector.h"
#include "two_hosts.h"

namespace farmem::testing {
namespace {

using far::ThreadCache;
using runtime::Task;

struct Page {
  std::array<uint64_t, 512> words;  // 4 KiB
};

Task<Status> objects_and_containers(ThreadCache* cache, std::vector<far::UniquePtr<Page>>* objs) {
  // 64 objects of 4 KiB under a 128 KiB budget.
  for (uint64_t i = 0; i < 64; ++i) {
    auto p = co_await far::allocate_unique<Page>(cache);
    if (!p.ok()) co_return p.status();
    Page v{};
    v.words[0] = i * 3 + 1;
    v.words[511] = i;
    Status s = co_await p->write(v);
    if (!s.ok()) co_return s;
    objs->push_back(std::move(*p));
  }
  auto left = co_await cache->evict_all();
  if (!left.ok()) co_return left.status();
  for (uint64_t i = 0; i < objs->size(); ++i) {
    auto v = co_await (*objs)[i].read();
    if (!v.ok()) co_return v.status();
    if (v->words[0] != i * 3 + 1 || v->words[511] != i) co_return Internal("object differs");
  }
  // Remote compute over the link: an aggregate and a filter against the same done here.
  far::Vector<double> vec(cache);
  double sum = 0;
  uint64_t above = 0;
  for (uint64_t i = 0; i < 3000; ++i) {
    const double x = static_cast<double>((i * 7919) % 1000) / 10;
    Status s = co_await vec.push_back(x);
    if (!s.ok()) co_return s;
    sum += x;
    above += x > 50.0;
  }
  auto agg = co_await vec.aggregate();
  if (!agg.ok()) co_return agg.status();
  if ((*agg)[0].count != 3000 || far::wire::from_bits<double>((*agg)[0].sum) != sum) {
    co_return Internal("remote aggregate differs");
  }
  auto idx = co_await vec.filter(far::make_predicate(far::wire::Pred::kGt, 50.0));
  if (!idx.ok()) co_return idx.status();
  if (idx->size() != above) co_return Internal("remote filter differs");
  // A hash table whose absent buckets the node scans (served transport: remote lookups).
  auto h = co_await far::CachedHashTable<uint64_t, uint64_t>::create(cache, 6);
  if (!h.ok()) co_return h.status();
  for (uint64_t k = 0; k < 200; ++k) {
    Status s = co_await h->put(k, k + 1000);
    if (!s.ok()) co_return s;
  }
  left = co_await cache->evict_all();
  if (!left.ok()) co_return left.status();
  for (uint64_t k = 0; k < 220; ++k) {
    auto v = co_await h->find(k);
    if (!v.ok()) co_return v.status();
    if (*v != (k < 200 ? std::optional<uint64_t>(k + 1000) : std::nullopt)) {
      co_return Internal("hash table differs at key " + std::to_string(k));
    }
  }
  if (h->remote_lookups() == 0) co_return Internal("no lookup was answered by the node");
  co_return OkStatus();
}

TEST_F(TwoHostTest, FarObjectsAndContainersAcrossTheNamespace) {
  auto c = client::Cluster::connect(config(/*op_timeout_ms=*/2000));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_NE((*c)->transports().find("tcp/" + host_if_), std::string::npos) << (*c)->transports();
  client::ThreadClient* tc = *(*c)->thread_client();
  far::ObjectManagerOptions mo;
  mo.local_bytes = 128 << 10;
  mo.segment_bytes = 16 << 10;
  auto m = far::ObjectManager::create(mo);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  {
    ThreadCache cache(m->get(), tc);
    std::vector<far::UniquePtr<Page>> objs;
    Status s = tc->run(objects_and_containers(&cache, &objs));
    ASSERT_TRUE(s.ok()) << s.to_string();
    std::printf("across the namespace: %lu fetches, %lu write-backs, %lu remote-compute bytes\n",
                static_cast<unsigned long>(cache.stats().fetches),
                static_cast<unsigned long>(cache.stats().writebacks),
                static_cast<unsigned long>(cache.stats().rpc_bytes));
    EXPECT_GT(cache.stats().evicted, 0u);
    EXPECT_GT(cache.stats().fetches, 0u);
    // The node dies (ip netns exec execs it, so the pid is the server's): a fetch fails with
    // an error within the deadline, never hangs.
    ASSERT_TRUE(tc->run(cache.evict_all()).ok());
    server_->signal(SIGKILL);
    auto r = tc->run(objs[5].read());
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().code() == StatusCode::kPeerFailed ||
                r.status().code() == StatusCode::kTimedOut)
        << r.status().to_string();
    objs.clear();
  }
  (*c)->release_thread_client();
}

}  // namespace
}  // namespace farmem::testing
