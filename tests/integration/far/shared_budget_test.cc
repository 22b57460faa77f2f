// One process, one LocalBudget, two tenants: a far::ObjectManager (objects, on a worker thread of
// its own) and a paged::PageManager (a region touched by the test thread), against a real memory
// node. Far objects far beyond the budget, then a paged region beyond it, then far again, then both
// at once: every value matches a model, the charges never pass the limit, the resident memory
// of the far pool and the paged region stays within the limit (plus the slack of a sampler that
// is not one atomic snapshot), and each tenant gets memory back when the other stops using it.
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "far_fixture.h"
#include "farmem/common/local_budget.h"
#include "farmem/far/far_ptr.h"
#include "farmem/paged/page_manager.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using far::ThreadCache;
using far::UniquePtr;
using runtime::Task;

constexpr uint64_t kLimit = 4 << 20;
constexpr uint64_t kSegment = 128 << 10;  // 32 segments
constexpr uint64_t kObject = 1024;
constexpr uint64_t kPage = 4096;

struct Blob {
  std::array<uint8_t, kObject> bytes;
};

uint64_t resident_bytes(const void* p, uint64_t bytes) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((bytes + page - 1) / page);
  if (mincore(const_cast<void*>(p), bytes, vec.data()) != 0) return UINT64_MAX;
  uint64_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n * page;
}

// ---- the far side: objects holding a value each, checked against a model ----

void fill_blob(Blob* b, uint64_t v) {
  std::memset(b->bytes.data(), static_cast<int>(v & 0xff), kObject);
  std::memcpy(b->bytes.data(), &v, sizeof v);
}

Status check_blob(const Blob& b, uint64_t v, size_t i) {
  uint64_t got;
  std::memcpy(&got, b.bytes.data(), sizeof got);
  if (got != v || b.bytes[kObject - 1] != (v & 0xff)) {
    return Internal("far object " + std::to_string(i) + " differs from the model");
  }
  return OkStatus();
}

struct FarModel {
  std::vector<UniquePtr<Blob>> objs;
  std::vector<uint64_t> values;
};

Task<Status> far_fill(ThreadCache* cache, FarModel* m, size_t n, uint64_t gen) {
  for (size_t i = 0; i < n; ++i) {
    auto p = co_await far::allocate_unique<Blob>(cache);
    if (!p.ok()) co_return p.status();
    Blob b;
    fill_blob(&b, gen * 1'000'000 + i);
    Status s = co_await p->write(b);
    if (!s.ok()) co_return s;
    m->objs.push_back(std::move(*p));
    m->values.push_back(gen * 1'000'000 + i);
  }
  co_return OkStatus();
}

// Random updates (each checks the old value first), then every object read back.
Task<Status> far_pass(ThreadCache* cache, FarModel* m, uint64_t seed, size_t updates) {
  std::mt19937_64 rng(seed);
  for (size_t k = 0; k < updates; ++k) {
    const size_t i = rng() % m->objs.size();
    auto b = co_await m->objs[i].read();
    if (!b.ok()) co_return b.status();
    Status s = check_blob(*b, m->values[i], i);
    if (!s.ok()) co_return s;
    m->values[i] = rng() >> 8;
    fill_blob(&*b, m->values[i]);
    s = co_await m->objs[i].write(*b);
    if (!s.ok()) co_return s;
  }
  for (size_t i = 0; i < m->objs.size(); ++i) {
    auto b = co_await m->objs[i].read();
    if (!b.ok()) co_return b.status();
    Status s = check_blob(*b, m->values[i], i);
    if (!s.ok()) co_return s;
  }
  co_return OkStatus();
}

// The far tenant's thread: runs a pass when asked; between passes it keeps its scheduler
// going and calls relieve_pressure(), so its cache gives memory back to the paged tenant.
class FarWorker {
 public:
  FarWorker(client::Cluster* cluster, far::ObjectManager* manager, size_t objects, uint64_t seed)
      : cluster_(cluster), manager_(manager), objects_(objects), seed_(seed) {
    thread_ = std::thread([this] { run(); });
  }
  ~FarWorker() {
    request_.store(-1);
    thread_.join();
  }
  // Runs one pass on the worker (0: fill, then passes with `updates` random updates) and waits.
  Status pass(size_t updates) {
    updates_ = updates;
    const int gen = request_.load() + 1;
    request_.store(gen);
    while (done_.load() != gen && done_.load() != kFailed) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return status_;
  }
  // Starts a pass and returns at once (join with wait()).
  void start(size_t updates) {
    updates_ = updates;
    request_.store(request_.load() + 1);
  }
  Status wait() {
    while (done_.load() != request_.load() && done_.load() != kFailed) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return status_;
  }
  uint64_t evacuation_rounds() const { return rounds_.load(); }

 private:
  static constexpr int kFailed = INT32_MAX;  // the worker could not start
  void run() {
    auto tc = cluster_->thread_client();
    if (!tc.ok()) {
      status_ = tc.status();
      done_.store(kFailed);
      return;
    }
    client::ThreadClient* c = *tc;
    {
      ThreadCache cache(manager_, c);
      FarModel model;
      int handled = 0;
      for (;;) {
        const int r = request_.load();
        if (r < 0) break;
        if (r != handled) {
          Status s = r == 1 ? c->run(far_fill(&cache, &model, objects_, 1))
                            : c->run(far_pass(&cache, &model, seed_ + r, updates_));
          if (s.ok() && r == 1) s = c->run(far_pass(&cache, &model, seed_ + r, 0));
          if (!s.ok() && status_.ok()) status_ = s;
          handled = r;
          rounds_.store(cache.stats().evacuation_rounds);
          done_.store(r);
          continue;
        }
        // Idle: give memory back under pressure.
        const bool busy = cache.relieve_pressure();
        c->scheduler().poll_once();
        rounds_.store(cache.stats().evacuation_rounds);
        if (!busy) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      model.objs.clear();
      (void)c->run(cache.reclaim());
    }
    cluster_->release_thread_client();
  }

  client::Cluster* cluster_;
  far::ObjectManager* manager_;
  size_t objects_;
  uint64_t seed_;
  size_t updates_ = 0;
  std::atomic<int> request_{0};
  std::atomic<int> done_{0};
  std::atomic<uint64_t> rounds_{0};
  Status status_;  // written by the worker before done_, read after
  std::thread thread_;
};

// ---- the paged side: one value per page (first and last word), checked against a model ----

class PagedModel {
 public:
  PagedModel(paged::Region* r, uint64_t seed) : r_(r), rng_(seed), values_(r->size() / kPage, 0) {}
  void write(size_t page, uint64_t v) {
    uint8_t* p = static_cast<uint8_t*>(r_->data()) + page * kPage;
    std::memcpy(p, &v, sizeof v);
    std::memcpy(p + kPage - sizeof v, &v, sizeof v);
    values_[page] = v;
  }
  bool check(size_t page) const {
    const uint8_t* p = static_cast<const uint8_t*>(r_->data()) + page * kPage;
    uint64_t a, b;
    std::memcpy(&a, p, sizeof a);
    std::memcpy(&b, p + kPage - sizeof b, sizeof b);
    return a == values_[page] && b == values_[page];
  }
  // Writes every page in order, then `random` checked read-modify-writes, then checks all.
  size_t sweep(size_t random) {
    size_t wrong = 0;
    for (size_t p = 0; p < values_.size(); ++p) {
      wrong += !check(p);
      write(p, rng_());
    }
    for (size_t k = 0; k < random; ++k) {
      const size_t p = rng_() % values_.size();
      wrong += !check(p);
      write(p, rng_());
    }
    for (size_t p = 0; p < values_.size(); ++p) wrong += !check(p);
    return wrong;
  }

 private:
  paged::Region* r_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> values_;
};

// ---- the sampler: the sum of the charges and the resident memory of both mappings ----

class Sampler {
 public:
  Sampler(LocalBudget* budget, const far::SegmentPool* pool, const paged::Region* region)
      : budget_(budget), pool_(pool), region_(region) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        sample();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  ~Sampler() { stop(); }
  void stop() {
    if (thread_.joinable()) {
      stop_.store(true);
      thread_.join();
    }
  }
  uint64_t samples = 0, max_charged = 0, max_used = 0, max_resident = 0;

 private:
  void sample() {
    uint64_t charged = 0;
    for (const BudgetUsage& u : budget_->usage()) charged += u.tenant_bytes;
    const uint64_t resident = resident_bytes(pool_->base(), pool_->bytes()) +
                              resident_bytes(region_->data(), region_->size());
    max_charged = std::max(max_charged, charged);
    max_used = std::max(max_used, budget_->used_bytes());
    max_resident = std::max(max_resident, resident);
    ++samples;
  }
  LocalBudget* budget_;
  const far::SegmentPool* pool_;
  const paged::Region* region_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class SharedBudgetTest : public ::testing::TestWithParam<Transport> {
 protected:
  void TearDown() override {
    cluster_.reset();
    server_.reset();
  }
  bool tcp() const { return GetParam().name == "tcp"; }
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Cluster> cluster_;
};

TEST_P(SharedBudgetTest, FarObjectsAndPagedRegionsShareOneBudget) {
  const uint64_t seed = test_seed();
  ServerOptions so;
  so.tls = GetParam().tls;
  server_ = ServerProcess::start(so);
  ASSERT_NE(server_, nullptr);
  auto c = client::Cluster::connect(config_for({server_.get()}, GetParam().tls, 5000));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  cluster_ = std::move(*c);

  LocalBudget budget(kLimit);
  far::ObjectManagerOptions fo;
  fo.shared_budget = &budget;
  fo.segment_bytes = kSegment;
  auto fm = far::ObjectManager::create(fo);
  ASSERT_TRUE(fm.ok()) << fm.status().to_string();
  paged::PageManagerOptions po;
  po.shared_budget = &budget;
  auto pm = paged::PageManager::create(*cluster_, po);
  ASSERT_TRUE(pm.ok()) << pm.status().to_string();
  EXPECT_EQ((*pm)->budget_bytes(), kLimit);
  // Each side's data is several times the budget (less over TCP, where every miss is a round
  // trip the node serves).
  const uint64_t times = tcp() ? 2 : 3;
  auto region = (*pm)->allocate(times * kLimit);
  ASSERT_TRUE(region.ok()) << region.status().to_string();
  PagedModel pages(*region, seed + 7);
  const size_t objects = times * kLimit / kObject;
  const size_t updates = objects / 4;

  {
    Sampler sampler(&budget, &(*fm)->pool(), *region);
    FarWorker worker(cluster_.get(), fm->get(), objects, seed);
    auto far_bytes = [&] { return (*fm)->budget_usage().tenant_bytes; };
    auto paged_bytes = [&] { return (*pm)->stats().budget.tenant_bytes; };

    // A: far objects beyond the budget (filled, then every one read back).
    Status s = worker.pass(0);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const uint64_t far_a = far_bytes();
    EXPECT_GE(far_a, kLimit / 2) << "far fills the budget when alone";

    // B: the paged region beyond the budget while the far thread only idles: far gives its
    // memory back under the paged tenant's pressure (a few sweeps at most).
    uint64_t far_b = far_a;
    for (int round = 0; round < 8 && far_b >= far_a / 2; ++round) {
      ASSERT_EQ(pages.sweep(512), 0u) << "paged values differ from the model";
      far_b = far_bytes();
    }
    const uint64_t paged_b = paged_bytes();
    EXPECT_LT(far_b, far_a / 2) << "far's usage falls when paged pressure rises";
    EXPECT_GE(paged_b, kLimit / 2) << "paged gets the memory far gave back";

    // C: far again while the region is left alone: the paged tenant's cleaner gives back.
    uint64_t paged_c = paged_b;
    for (int round = 0; round < 8 && paged_c >= paged_b / 2; ++round) {
      s = worker.pass(updates);
      ASSERT_TRUE(s.ok()) << s.to_string();
      paged_c = paged_bytes();
    }
    const uint64_t far_c = far_bytes();
    EXPECT_LT(paged_c, paged_b / 2) << "paged's usage falls when far pressure rises";
    EXPECT_GT(far_c, far_b);

    // D: both at once, interleaved.
    for (int round = 0; round < 2; ++round) {
      worker.start(updates);
      const size_t wrong = pages.sweep(1024);
      s = worker.wait();
      ASSERT_TRUE(s.ok()) << s.to_string();
      ASSERT_EQ(wrong, 0u) << "paged values differ from the model";
    }
    sampler.stop();
    std::printf(
        "[ SHARED   ] far A/B/C %llu/%llu/%llu KiB, paged B/C %llu/%llu KiB; samples %llu, "
        "max charged %llu KiB, max resident %llu KiB of %llu KiB\n",
        (unsigned long long)(far_a >> 10), (unsigned long long)(far_b >> 10),
        (unsigned long long)(far_c >> 10), (unsigned long long)(paged_b >> 10),
        (unsigned long long)(paged_c >> 10), (unsigned long long)sampler.samples,
        (unsigned long long)(sampler.max_charged >> 10),
        (unsigned long long)(sampler.max_resident >> 10), (unsigned long long)(kLimit >> 10));
    EXPECT_GT(sampler.samples, 10u);
    EXPECT_LE(sampler.max_used, kLimit);
    EXPECT_LE(sampler.max_charged, kLimit);
    // Resident memory never runs ahead of the charges (a charge comes before the memory is
    // touched; a release after MADV_DONTNEED), but the sampler's two mincore() calls are no
    // atomic snapshot: memory that moves from one tenant to the other between them is counted
    // twice. One far segment moves at a time; two segments of slack cover it.
    EXPECT_LE(sampler.max_resident, kLimit + 2 * kSegment);
  }
  for (const BudgetUsage& u : budget.usage()) {
    EXPECT_EQ(u.overdraft_bytes, 0u) << u.tenant << " charged past the limit";
  }
  paged::ManagerStats ps = (*pm)->stats();
  EXPECT_EQ(ps.budget.limit_bytes, kLimit);
  EXPECT_EQ(ps.budget.tenant, "paged");
  EXPECT_GT(ps.total.evictions, 0u);
  EXPECT_GT(ps.cleaner_runs, 0u);
  EXPECT_EQ(resident_bytes((*fm)->pool().base(), (*fm)->pool().bytes()), 0u)
      << "the far thread's cache is gone: its segments are back with the kernel";
  EXPECT_EQ((*fm)->budget_usage().tenant_bytes, 0u);
  ASSERT_TRUE((*pm)->free(*region).ok());
  EXPECT_EQ(budget.used_bytes(), 0u);
  pm->reset();
  fm->reset();
  EXPECT_TRUE(budget.usage().empty());
}

INSTANTIATE_TEST_SUITE_P(Transports, SharedBudgetTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
