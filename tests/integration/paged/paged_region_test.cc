// Paged regions against a plain-memory model: access patterns, eviction under pressure with
// concurrent writers, the budget, striping over several nodes, flush/prefetch/advise.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "farmem/runtime/scheduler.h"
#include "paged_fixture.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using paged::Advice;
using paged::PageManagerOptions;
using paged::Region;
using paged::RegionOptions;

// A value for word i of a region in generation g (never 0, so zero pages are told apart).
uint64_t word_value(uint64_t i, uint64_t g) { return (i * 0x9E3779B97F4A7C15ull) ^ (g + 1); }

// Thread t of `threads` adds t + 1 to every word i with i % threads == t of w[0..n), pass after
// pass, front to back; word i then holds (i % threads + 1) * passes.
void sweep_writers(std::atomic<uint64_t>* w, uint64_t n, int threads, int passes) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([=] {
      for (int pass = 0; pass < passes; ++pass) {
        for (uint64_t i = static_cast<uint64_t>(t); i < n; i += threads) {
          w[i].fetch_add(static_cast<uint64_t>(t) + 1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
}

class PagedRegionTest : public PagedTest {
 protected:
  Region* alloc(uint64_t bytes, uint64_t page_bytes = 64 * 1024, Advice advice = Advice::kRandom) {
    RegionOptions o;
    o.page_bytes = page_bytes;
    o.advice = advice;
    auto r = manager_->allocate(bytes, o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : nullptr;
  }
};

TEST_P(PagedRegionTest, FreshRegionReadsZeroAndKeepsWrites) {
  PageManagerOptions mo;
  mo.local_bytes = 1 << 20;
  start(mo);
  Region* r = alloc(4 << 20);
  ASSERT_NE(r, nullptr);
  auto* w = static_cast<uint64_t*>(r->data());
  const uint64_t n = r->size() / 8;
  for (uint64_t i = 0; i < n; i += 97) ASSERT_EQ(w[i], 0u) << i;
  for (uint64_t i = 0; i < n; ++i) w[i] = word_value(i, 1);
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(w[i], word_value(i, 1)) << i;
  paged::RegionStats s = r->stats();
  EXPECT_GT(s.evictions, 0u);  // 4 MiB through a 1 MiB buffer
  EXPECT_GT(s.bytes_written_back, 0u);
  EXPECT_GT(s.bytes_fetched, 0u);
  EXPECT_LE(s.resident_pages * r->page_bytes(), manager_->budget_bytes());
  EXPECT_TRUE(manager_->free(r).ok());
}

TEST_P(PagedRegionTest, SequentialRandomStridedPatternsMatchModel) {
  PageManagerOptions mo;
  mo.local_bytes = 512 << 10;
  start(mo);
  for (uint64_t page_bytes : {uint64_t{4096}, uint64_t{64 * 1024}}) {
    Region* r = alloc(3 << 20, page_bytes, Advice::kSequential);
    ASSERT_NE(r, nullptr);
    auto* mem = static_cast<uint8_t*>(r->data());
    std::vector<uint8_t> model(r->size(), 0);
    std::mt19937_64 rng(test_seed() + page_bytes);
    // Sequential writes, random writes, strided writes (one byte per page + 1), then reads.
    for (uint64_t i = 0; i < r->size(); i += 8) {
      const uint64_t v = word_value(i, 2);
      std::memcpy(mem + i, &v, 8);
      std::memcpy(model.data() + i, &v, 8);
    }
    for (int k = 0; k < 5000; ++k) {
      const uint64_t off = rng() % r->size();
      const uint8_t v = static_cast<uint8_t>(rng());
      mem[off] = v;
      model[off] = v;
    }
    for (uint64_t off = 0; off < r->size(); off += page_bytes + 1) {
      mem[off] = static_cast<uint8_t>(off);
      model[off] = static_cast<uint8_t>(off);
    }
    for (int k = 0; k < 5000; ++k) {
      const uint64_t off = rng() % r->size();
      ASSERT_EQ(mem[off], model[off]) << "offset " << off << " page " << page_bytes;
    }
    ASSERT_EQ(std::memcmp(mem, model.data(), r->size()), 0) << "page " << page_bytes;
    EXPECT_GT(r->stats().evictions, 0u);
    EXPECT_GT(r->stats().prefetched, 0u);  // sequential advice reads ahead
    ASSERT_TRUE(manager_->free(r).ok());
  }
}

TEST_P(PagedRegionTest, ConcurrentWritersUnderEvictionNeverLoseAWrite) {
  PageManagerOptions mo;
  mo.local_bytes = 128 << 10;  // 8 pages of 16 KiB for a 2 MiB region
  start(mo);
  Region* r = alloc(2 << 20, 16 * 1024);
  ASSERT_NE(r, nullptr);
  auto* w = static_cast<std::atomic<uint64_t>*>(r->data());
  const uint64_t n = r->size() / 8;
  const int threads = 4;
  const int increments = tcp() ? 4000 : 15000;
  const uint64_t seed = test_seed();
  // Each thread owns the words i with i % threads == t, increments random ones of them and
  // keeps its own count per word; every word must end at its owner's count.
  std::vector<std::vector<uint64_t>> counts(threads, std::vector<uint64_t>(n / threads + 1));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      for (int k = 0; k < increments; ++k) {
        const uint64_t j = rng() % (n / threads);
        w[j * threads + t].fetch_add(1, std::memory_order_relaxed);
        ++counts[t][j];
      }
    });
  }
  for (auto& t : ts) t.join();
  ASSERT_TRUE(r->flush().ok());
  for (uint64_t i = 0; i < n / threads * threads; ++i) {
    ASSERT_EQ(w[i].load(), counts[i % threads][i / threads]) << "word " << i;
  }
  paged::ManagerStats ms = manager_->stats();
  EXPECT_GT(ms.total.evictions, 100u);
  EXPECT_GT(ms.total.bytes_written_back, 0u);
  EXPECT_LE(ms.resident_bytes, ms.budget_bytes + mo.max_inflight * r->page_bytes());
}

// Read-ahead groups mapped by installer threads while writers sweep through them: a write to a
// page an installer mapped write-protected before the pager saw the install finish is still
// served (no hang) and kept; with no installers the pager maps everything itself.
TEST_P(PagedRegionTest, WritersSweepingThroughInstalledReadAheadLoseNothing) {
  for (uint32_t installers : {0u, 1u, 2u}) {
    PageManagerOptions mo;
    mo.local_bytes = 256 << 10;  // 16 pages of 16 KiB for a 2 MiB region
    mo.install_threads = installers;
    if (cluster_ == nullptr) {
      start(mo);
    } else {  // the same memory node, a new manager
      manager_.reset();
      auto m = paged::PageManager::create(*cluster_, mo);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      manager_ = std::move(*m);
    }
    Region* r = alloc(2 << 20, 16 * 1024, Advice::kSequential);
    ASSERT_NE(r, nullptr);
    auto* w = static_cast<std::atomic<uint64_t>*>(r->data());
    const uint64_t n = r->size() / 8;
    const int threads = 3, passes = tcp() ? 2 : 4;
    sweep_writers(w, n, threads, passes);
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(w[i].load(), (i % threads + 1) * passes)
          << "word " << i << " installers " << installers;
    }
    const paged::ManagerStats ms = manager_->stats();
    EXPECT_GT(ms.total.prefetched, 0u);
    EXPECT_GT(ms.total.evictions, 0u);
    if (installers == 0) {
      EXPECT_EQ(ms.offloaded_installs, 0u);
    } else {
      EXPECT_GT(ms.offloaded_installs, 0u) << "installers " << installers;
    }
    ASSERT_TRUE(manager_->free(r).ok());
  }
}

// The page size the kernel maps at `addr` (KernelPageSize of its /proc/self/smaps entry), 0 if
// none is found.
uint64_t kernel_page_bytes(const void* addr) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_vma = false;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) in_vma = lo <= a && a < hi;
    unsigned long kib = 0;
    if (in_vma && std::sscanf(line.c_str(), "KernelPageSize: %lu kB", &kib) == 1) {
      return uint64_t{kib} * 1024;
    }
  }
  return 0;
}

// Regions on the kernel's 2 MiB huge pages: writers sweeping a sequential-advice region and
// random increments on a random-advice one, under a budget of four pages, keep every write; a
// page size that is not a multiple of the huge page size, and a region the pool cannot hold,
// are refused.
TEST_P(PagedRegionTest, HugePageRegionsKeepEveryWriteUnderEviction) {
  constexpr uint64_t kHuge = 2 << 20;
  PageManagerOptions mo;
  mo.local_bytes = 4 * kHuge;
  start(mo);
  // After the memory node started: over shared memory UCX may put its memory on huge pages too.
  HugePagePool pool(12);
  if (!pool.ok()) FARMEM_SKIP_OR_FAIL("no huge pages: " + pool.why());
  RegionOptions o;
  o.page_bytes = kHuge;
  o.huge_pages = true;
  o.advice = Advice::kSequential;
  auto seq = manager_->allocate(6 * kHuge, o);
  ASSERT_TRUE(seq.ok()) << seq.status().to_string();
  EXPECT_EQ(kernel_page_bytes((*seq)->data()), kHuge);
  auto* w = static_cast<std::atomic<uint64_t>*>((*seq)->data());
  const uint64_t n = (*seq)->size() / 8;
  const int threads = 3, passes = 2;
  sweep_writers(w, n, threads, passes);
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(w[i].load(), (i % threads + 1) * passes) << i;
  ASSERT_TRUE(manager_->free(*seq).ok());

  o.advice = Advice::kRandom;
  auto rnd = manager_->allocate(6 * kHuge, o);
  ASSERT_TRUE(rnd.ok()) << rnd.status().to_string();
  auto* x = static_cast<uint64_t*>((*rnd)->data());
  std::vector<uint64_t> model((*rnd)->size() / 8, 0);
  std::mt19937_64 rng(test_seed());
  for (int k = 0; k < (tcp() ? 100 : 400); ++k) {
    const uint64_t i = rng() % model.size();
    x[i] += k + 1;
    model[i] += k + 1;
  }
  ASSERT_TRUE((*rnd)->flush().ok());
  for (uint64_t i = 0; i < model.size(); ++i) ASSERT_EQ(x[i], model[i]) << i;
  const paged::ManagerStats ms = manager_->stats();
  EXPECT_GT(ms.total.evictions, 0u);
  EXPECT_GT(ms.total.bytes_written_back, 0u);
  EXPECT_GT(ms.total.prefetched, 0u);
  ASSERT_TRUE(manager_->free(*rnd).ok());

  o.page_bytes = 64 * 1024;
  auto small = manager_->allocate(kHuge, o);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument) << small.status().to_string();
  // More pages than the pool has free, under a budget that would let them all be resident: refused
  // before anything is allocated.
  std::ifstream meminfo("/proc/meminfo");
  uint64_t free_pages = 0;
  for (std::string line; std::getline(meminfo, line);) {
    (void)std::sscanf(line.c_str(), "HugePages_Free: %lu", &free_pages);
  }
  PageManagerOptions roomy;
  roomy.local_bytes = (free_pages + 8) * kHuge;
  auto m2 = paged::PageManager::create(*cluster_, roomy);
  ASSERT_TRUE(m2.ok()) << m2.status().to_string();
  o.page_bytes = kHuge;
  auto big = (*m2)->allocate((free_pages + 1) * kHuge, o);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("nr_hugepages"), std::string::npos)
      << big.status().to_string();
}

TEST_P(PagedRegionTest, FlushesRacingWritersLoseNothing) {
  PageManagerOptions mo;
  mo.local_bytes = 1 << 20;
  start(mo);
  Region* r = alloc(512 << 10, 16 * 1024);  // fits: only flushes race the writers
  ASSERT_NE(r, nullptr);
  auto* w = static_cast<std::atomic<uint64_t>*>(r->data());
  const uint64_t n = r->size() / 8;
  const int threads = 2;
  const int increments = tcp() ? 20000 : 100000;
  const uint64_t seed = test_seed();
  std::vector<std::vector<uint64_t>> counts(threads, std::vector<uint64_t>(n / threads + 1));
  std::atomic<int> running{threads};
  // The writers go on until three flushes have finished, so that some writes certainly follow a
  // flush that cleaned their pages (on shared memory the increments alone can end first).
  std::atomic<int> flushes_done{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      for (int k = 0; k < increments || flushes_done.load() < 3; ++k) {
        const uint64_t j = rng() % (n / threads);
        w[j * threads + t].fetch_add(1, std::memory_order_relaxed);
        ++counts[t][j];
      }
      running.fetch_sub(1);
    });
  }
  int flushes = 0;
  while (running.load() > 0) {
    Status fs = r->flush();
    flushes_done.fetch_add(1);  // before any assertion: the writers wait for it
    ASSERT_TRUE(fs.ok()) << fs.to_string();
    ++flushes;
  }
  for (auto& t : ts) t.join();
  ASSERT_TRUE(r->flush().ok());
  // Push every page out with another region, so the check reads what was written back.
  Region* other = alloc(2 << 20, 16 * 1024);
  ASSERT_NE(other, nullptr);
  auto* o = static_cast<volatile uint8_t*>(other->data());
  for (uint64_t i = 0; i < other->size(); i += 4096) o[i] = 1;
  EXPECT_GT(r->stats().evictions, 0u);
  for (uint64_t i = 0; i < n / threads * threads; ++i) {
    ASSERT_EQ(w[i].load(), counts[i % threads][i / threads]) << "word " << i;
  }
  EXPECT_GT(flushes, 0);
  EXPECT_GT(r->stats().wp_faults, 0u);  // writes after a flush found their pages clean
}

TEST_P(PagedRegionTest, BudgetIsRespectedByResidentPages) {
  PageManagerOptions mo;
  mo.local_percent = 25;
  start(mo);
  Region* r = alloc(8 << 20);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(manager_->budget_bytes(), 2u << 20);
  auto* mem = static_cast<uint8_t*>(r->data());
  for (uint64_t i = 0; i < r->size(); i += 4096) mem[i] = 1;
  uint64_t sum = 0;
  for (uint64_t i = 0; i < r->size(); i += 4096) sum += mem[i];
  EXPECT_EQ(sum, r->size() / 4096);
  // Count the pages the kernel has mapped (mincore) beside the manager's count.
  std::vector<unsigned char> vec(r->size() / 4096);
  ASSERT_EQ(mincore(r->data(), r->size(), vec.data()), 0);
  uint64_t mapped = 0;
  for (unsigned char v : vec) mapped += v & 1;
  EXPECT_LE(mapped * 4096, manager_->budget_bytes());
  EXPECT_LE(r->stats().resident_pages * r->page_bytes(), manager_->budget_bytes());
  EXPECT_GT(manager_->stats().cleaner_runs, 0u);
}

TEST_P(PagedRegionTest, StripesPagesOverSeveralNodes) {
  PageManagerOptions mo;
  mo.local_bytes = 256 << 10;
  start(mo, 3);
  Region* r = alloc(2 << 20);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->layout().stripes.size(), 3u);
  for (size_t s = 0; s < 3; ++s) EXPECT_EQ(r->layout().stripes[s].node(), s);
  auto* w = static_cast<uint64_t*>(r->data());
  const uint64_t n = r->size() / 8;
  for (uint64_t i = 0; i < n; ++i) w[i] = word_value(i, 3);
  ASSERT_TRUE(r->flush().ok());
  // The pages are where the layout says: read page 4 (node 1) straight from its node.
  auto* c = *cluster_->thread_client();
  std::vector<uint64_t> buf(r->page_bytes() / 8);
  ASSERT_EQ(r->layout().page_node(4), 1);
  ASSERT_TRUE(sync_wait(c->read(r->layout().page_address(4), buf.data(), r->page_bytes())).ok());
  const uint64_t first = 4 * r->page_bytes() / 8;
  for (size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], word_value(first + i, 3));
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(w[i], word_value(i, 3)) << i;
  cluster_->release_thread_client();
}

TEST_P(PagedRegionTest, PrefetchFlushAndStaticAdvice) {
  PageManagerOptions mo;
  mo.local_bytes = 1 << 20;
  start(mo);
  Region* r = alloc(4 << 20);
  ASSERT_NE(r, nullptr);
  auto* w = static_cast<uint64_t*>(r->data());
  const uint64_t n = r->size() / 8;
  for (uint64_t i = 0; i < n; ++i) w[i] = word_value(i, 4);
  ASSERT_TRUE(r->flush().ok());
  // Pin the first 256 KiB; sweep the rest; the pinned pages stay resident (no fault).
  ASSERT_TRUE(r->advise(0, 256 << 10, Advice::kStatic).ok());
  EXPECT_EQ(r->stats().pinned_pages, 4u);
  for (uint64_t i = 32768; i < n; ++i) ASSERT_EQ(w[i], word_value(i, 4));
  const uint64_t faults = r->stats().faults;
  for (uint64_t i = 0; i < 32768; ++i) ASSERT_EQ(w[i], word_value(i, 4));
  EXPECT_EQ(r->stats().faults, faults);
  // Prefetch a range: its reads then fault no more.
  ASSERT_TRUE(r->prefetch(2 << 20, 256 << 10).ok());
  const uint64_t before = r->stats().faults;
  for (uint64_t i = (2 << 20) / 8; i < (2 << 20) / 8 + 32768; ++i)
    ASSERT_EQ(w[i], word_value(i, 4));
  EXPECT_EQ(r->stats().faults, before);
  EXPECT_FALSE(r->prefetch(3 << 20, 2 << 20).ok());  // outside the region
  EXPECT_FALSE(r->advise(5 << 20, 1, Advice::kRandom).ok());
  // Scattered ranges (pages 20, 37-38 and 50; none resident after a sweep of the rest): fetched
  // ahead, so reading them faults no more; a range past the end is refused.
  for (uint64_t i = 0; i < (1 << 20) / 8; ++i) ASSERT_EQ(w[i], word_value(i, 4));
  const std::vector<Region::Range> ranges = {
      {50 << 16, 8}, {(20 << 16) + 100, 200}, {(37 << 16) + 65000, 1000}, {20 << 16, 1}};
  const paged::RegionStats s0 = r->stats();
  ASSERT_TRUE(r->prefetch(ranges).ok());
  EXPECT_EQ(r->stats().prefetched, s0.prefetched + 4);
  for (uint64_t page : {20, 37, 38, 50}) {
    for (uint64_t i = page * 8192; i < (page + 1) * 8192; ++i) ASSERT_EQ(w[i], word_value(i, 4));
  }
  EXPECT_EQ(r->stats().faults, s0.faults);
  const std::vector<Region::Range> past_end = {{(4 << 20) - 8, 16}};
  EXPECT_FALSE(r->prefetch(past_end).ok());
}

TEST_P(PagedRegionTest, RejectsBadOptions) {
  PageManagerOptions mo;
  mo.local_bytes = 1 << 20;
  start(mo);
  RegionOptions o;
  o.page_bytes = 3000;
  EXPECT_FALSE(manager_->allocate(1 << 20, o).ok());
  o.page_bytes = 2048;
  EXPECT_FALSE(manager_->allocate(1 << 20, o).ok());
  o.page_bytes = 4096;
  EXPECT_FALSE(manager_->allocate(0, o).ok());
  PageManagerOptions bad;
  bad.local_bytes = 0;
  bad.local_percent = 0;
  EXPECT_FALSE(paged::PageManager::create(*cluster_, bad).ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, PagedRegionTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
