// Micro-benchmark of a far dereference that hits (the object is in the local cache) beside a
// plain pointer dereference of the same objects (the goal: a hit within 2x). Built as
// farmem_far_deref_bench; not run by ctest. It starts a memory node in this process (for the
// allocations only: a hit touches no node).
//
//   build/bench/farmem_far_deref_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
//
// Each iteration dereferences the next object of a shuffled order over N 64-byte objects and
// reads one field: N = 1 (one hot object: the fast path's own instructions) and N = 65,536
// (4 MiB of objects: the cache misses every program pays). The order array is read in both.
//   BM_PlainDeref      ptrs[order[k]]->v  (std::vector<std::unique_ptr<Obj>>, objects allocated
//                      one by one, as far objects are)
//   BM_PlainDerefCoro  the same in a coroutine that co_awaits a ready awaitable each time (GCC
//                      keeps such a loop's locals in the coroutine frame, not in registers)
//   BM_FarDeref        co_await ptrs[order[k]].deref(scope) -> v   (a coroutine, never suspends)
//   BM_FarDerefMut     the same with deref_mut (also sets the dirty bit)
//   BM_FarTryDeref     try_deref (the synchronous fast path alone)
#include <benchmark/benchmark.h>

#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "farmem/bench/workload/rng.h"
#include "farmem/client/cluster.h"
#include "farmem/far/far_ptr.h"
#include "farmem/memnode/server.h"

namespace farmem::far {
namespace {

using runtime::Task;

struct Obj {
  uint64_t v;
  uint64_t pad[7];
};
static_assert(sizeof(Obj) == 64);

constexpr uint64_t kMaxObjects = 65536;

[[noreturn]] void die(const Status& s) {
  std::fprintf(stderr, "far_deref_bench: %s\n", s.to_string().c_str());
  std::exit(1);
}

// One in-process memory node, a cluster, a cache and kMaxObjects far objects, all local.
class World {
 public:
  static World& get() {
    static World w;
    return w;
  }
  ThreadCache& cache() { return *cache_; }
  client::ThreadClient& client() { return *client_; }
  std::vector<UniquePtr<Obj>>& ptrs() { return ptrs_; }
  std::vector<std::unique_ptr<Obj>>& plain() { return plain_; }
  // A shuffled order over [0, n) (n a power of two), the same for every benchmark.
  const std::vector<uint32_t>& order(uint64_t n) {
    auto& o = orders_[n == 1 ? 0 : 1];
    if (o.size() != n) {
      o.resize(n);
      for (uint32_t i = 0; i < n; ++i) o[i] = i;
      bench::workload::Rng rng(42);
      for (uint64_t i = n; i > 1; --i) std::swap(o[i - 1], o[rng.next_u64() % i]);
    }
    return o;
  }

 private:
  World() {
    memnode::ServerConfig sc;
    sc.port = 0;
    sc.capacity_bytes = 256ull << 20;
    auto server = memnode::Server::create(sc);
    if (!server.ok()) die(server.status());
    server_ = std::move(*server);
    server_thread_ = std::thread([this] { (void)server_->run(); });
    auto config =
        client::ClusterConfig::from_server_list("127.0.0.1:" + std::to_string(server_->port()));
    if (!config.ok()) die(config.status());
    auto cluster = client::Cluster::connect(*config);
    if (!cluster.ok()) die(cluster.status());
    cluster_ = std::move(*cluster);
    auto tc = cluster_->thread_client();
    if (!tc.ok()) die(tc.status());
    client_ = *tc;
    ObjectManagerOptions mo;
    mo.local_bytes = 64ull << 20;  // every object stays local
    auto m = ObjectManager::create(mo);
    if (!m.ok()) die(m.status());
    manager_ = std::move(*m);
    cache_ = std::make_unique<ThreadCache>(manager_.get(), client_);
    Status s = client_->run(fill());
    if (!s.ok()) die(s);
    for (uint64_t i = 0; i < kMaxObjects; ++i) plain_.push_back(std::make_unique<Obj>(Obj{i, {}}));
  }
  ~World() {
    ptrs_.clear();
    cache_.reset();
    manager_.reset();
    cluster_.reset();
    server_->stop();
    server_thread_.join();
  }
  Task<Status> fill() {
    for (uint64_t i = 0; i < kMaxObjects; ++i) {
      auto p = co_await allocate_unique<Obj>(cache_.get());
      if (!p.ok()) co_return p.status();
      Status s = co_await p->write(Obj{i, {}});
      if (!s.ok()) co_return s;
      ptrs_.push_back(std::move(*p));
    }
    co_return OkStatus();
  }

  std::unique_ptr<memnode::Server> server_;
  std::thread server_thread_;
  std::unique_ptr<client::Cluster> cluster_;
  client::ThreadClient* client_ = nullptr;
  std::unique_ptr<ObjectManager> manager_;
  std::unique_ptr<ThreadCache> cache_;
  std::vector<UniquePtr<Obj>> ptrs_;
  std::vector<std::unique_ptr<Obj>> plain_;
  std::vector<uint32_t> orders_[2];
};

void BM_PlainDeref(benchmark::State& state) {
  World& w = World::get();
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  const uint32_t* order = w.order(n).data();
  const std::unique_ptr<Obj>* ptrs = w.plain().data();
  uint64_t k = 0, sum = 0;
  for (auto _ : state) {
    const Obj* o = ptrs[order[k++ & (n - 1)]].get();
    sum += o->v;
  }
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_PlainDeref)->Arg(1)->Arg(kMaxObjects);

Task<Status> plain_loop(benchmark::State* state, World* w, uint64_t n) {
  const uint32_t* order = w->order(n).data();
  const std::unique_ptr<Obj>* ptrs = w->plain().data();
  uint64_t k = 0, sum = 0;
  for (auto _ : *state) {
    const Obj* o = ptrs[order[k++ & (n - 1)]].get();
    co_await std::suspend_never{};
    sum += o->v;
  }
  benchmark::DoNotOptimize(sum);
  co_return OkStatus();
}

void BM_PlainDerefCoro(benchmark::State& state) {
  World& w = World::get();
  Status s = w.client().run(plain_loop(&state, &w, static_cast<uint64_t>(state.range(0))));
  if (!s.ok()) state.SkipWithError(s.to_string().c_str());
}
BENCHMARK(BM_PlainDerefCoro)->Arg(1)->Arg(kMaxObjects);

template <bool kMut>
Task<Status> far_loop(benchmark::State* state, World* w, uint64_t n) {
  const uint32_t* order = w->order(n).data();
  UniquePtr<Obj>* ptrs = w->ptrs().data();
  auto scope = co_await DerefScope::enter(w->cache());
  if (!scope.ok()) co_return scope.status();
  uint64_t k = 0, sum = 0;
  for (auto _ : *state) {
    UniquePtr<Obj>& p = ptrs[order[k++ & (n - 1)]];
    if constexpr (kMut) {
      auto r = co_await p.deref_mut(*scope);
      if (!r.ok()) co_return r.status();
      sum += (*r)->v;
    } else {
      auto r = co_await p.deref(*scope);
      if (!r.ok()) co_return r.status();
      sum += (*r)->v;
    }
  }
  benchmark::DoNotOptimize(sum);
  co_return OkStatus();
}

void BM_FarDeref(benchmark::State& state) {
  World& w = World::get();
  Status s = w.client().run(far_loop<false>(&state, &w, static_cast<uint64_t>(state.range(0))));
  if (!s.ok()) state.SkipWithError(s.to_string().c_str());
  if (w.cache().stats().fetches != 0) state.SkipWithError("a dereference missed");
}
BENCHMARK(BM_FarDeref)->Arg(1)->Arg(kMaxObjects);

void BM_FarDerefMut(benchmark::State& state) {
  World& w = World::get();
  Status s = w.client().run(far_loop<true>(&state, &w, static_cast<uint64_t>(state.range(0))));
  if (!s.ok()) state.SkipWithError(s.to_string().c_str());
  if (w.cache().stats().fetches != 0) state.SkipWithError("a dereference missed");
}
BENCHMARK(BM_FarDerefMut)->Arg(1)->Arg(kMaxObjects);

void BM_FarTryDeref(benchmark::State& state) {
  World& w = World::get();
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  const uint32_t* order = w.order(n).data();
  UniquePtr<Obj>* ptrs = w.ptrs().data();
  DerefScope scope(w.cache());
  uint64_t k = 0, sum = 0;
  for (auto _ : state) {
    const Obj* o = ptrs[order[k++ & (n - 1)]].try_deref(scope);
    sum += o->v;
  }
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_FarTryDeref)->Arg(1)->Arg(kMaxObjects);

}  // namespace
}  // namespace farmem::far

BENCHMARK_MAIN();
