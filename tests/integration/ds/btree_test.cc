// The one-sided B+tree against real memory nodes, over every transport: operations, boundary
// sizes, splits at every level (and root splits from many threads on an empty tree), scans at
// and across page edges, the index cache, the scan property under concurrent writers, churn,
// dead and stopped lock holders, and linearizability of recorded histories (Porcupine).
#include "farmem/ds/btree/btree.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "farmem/runtime/scheduler.h"
#include "harness.h"
#include "history.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Cluster;
using client::ThreadClient;
using ds::btree::BTree;
using ds::btree::BTreeOptions;
using runtime::Task;
using Pairs = std::vector<std::pair<std::string, std::string>>;

// Keys that sort like their numbers ("k00042").
std::string num_key(int i, int width = 6) {
  std::string s = std::to_string(i);
  return "k" + std::string(width > static_cast<int>(s.size()) ? width - s.size() : 0, '0') + s;
}
// 101-byte keys: a handful per 1 KiB page at every level, so a few hundred keys make 4 levels.
std::string long_key(int i) { return num_key(i, 100); }

class BTreeTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    for (uint16_t id : {1, 2}) {
      ServerOptions o;
      o.tls = GetParam().tls;
      o.node_id = id;
      o.capacity_bytes = 128ull << 20;
      servers_.push_back(ServerProcess::start(o));
      ASSERT_NE(servers_.back(), nullptr);
    }
    cluster_ = connect();
    ASSERT_NE(cluster_, nullptr);
    client_ = *cluster_->thread_client();
  }

  std::unique_ptr<Cluster> connect(uint32_t op_timeout_ms = 5000) {
    auto c = Cluster::connect(
        config_for({servers_[0].get(), servers_[1].get()}, GetParam().tls, op_timeout_ms));
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<BTree> create(const std::string& name, BTreeOptions o = {}) {
    auto t = client_->run(BTree::create(client_, name, o));
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    return t.ok() ? std::move(*t) : nullptr;
  }

  // Checks the tree's invariants; returns the pages per level.
  std::vector<uint64_t> check(BTree* t) {
    std::vector<uint64_t> pages;
    Status s = t->client().run(t->check(&pages));
    EXPECT_TRUE(s.ok()) << s.to_string();
    return pages;
  }

  uint64_t used_bytes() {
    uint64_t used = 0;
    for (uint16_t id : {1, 2}) {
      auto st = client_->run(client_->stats(id));
      EXPECT_TRUE(st.ok());
      if (st.ok()) used += st->used_bytes;
    }
    return used;
  }

  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::unique_ptr<Cluster> cluster_;
  ThreadClient* client_ = nullptr;
  // Over TCP every one-sided operation is a round trip the node serves: the long tests do less.
  bool tcp() const { return GetParam().name == "tcp"; }
};

TEST_P(BTreeTest, EveryOperationHasItsContractOnEmptyAndOneKeyTrees) {
  auto t = create("ops");
  ASSERT_NE(t, nullptr);
  std::string v;
  Pairs out;
  EXPECT_FALSE(*sync_wait(t->get("apple", &v)));
  ASSERT_TRUE(sync_wait(t->scan("", "", 0, &out)).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(sync_wait(t->update("apple", "x")).code(), StatusCode::kNotFound);
  EXPECT_EQ(sync_wait(t->erase("apple")).code(), StatusCode::kNotFound);
  ASSERT_TRUE(sync_wait(t->insert("apple", "red")).ok());
  ASSERT_TRUE(sync_wait(t->scan("", "", 0, &out)).ok());
  EXPECT_EQ(out, (Pairs{{"apple", "red"}}));
  ASSERT_TRUE(sync_wait(t->scan("apple", "apple", 0, &out)).ok());  // [apple, apple) is empty
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(sync_wait(t->scan("apple\x01", "", 0, &out)).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(sync_wait(t->insert("apple", "green")).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(*sync_wait(t->get("apple", &v)));
  EXPECT_EQ(v, "red");
  ASSERT_TRUE(sync_wait(t->update("apple", "yellow")).ok());
  ASSERT_TRUE(*sync_wait(t->get("apple", &v)));
  EXPECT_EQ(v, "yellow");
  ASSERT_TRUE(sync_wait(t->put("pear", "green")).ok());
  ASSERT_TRUE(sync_wait(t->put("pear", "brown")).ok());
  ASSERT_TRUE(*sync_wait(t->get("pear", &v)));
  EXPECT_EQ(v, "brown");
  ASSERT_TRUE(sync_wait(t->insert("banana", "")).ok());
  ASSERT_TRUE(sync_wait(t->scan("", "", 0, &out)).ok());
  EXPECT_EQ(out, (Pairs{{"apple", "yellow"}, {"banana", ""}, {"pear", "brown"}}));
  ASSERT_TRUE(sync_wait(t->scan("b", "", 1, &out)).ok());
  EXPECT_EQ(out, (Pairs{{"banana", ""}}));
  ASSERT_TRUE(sync_wait(t->scan("apple", "pear", 0, &out)).ok());
  EXPECT_EQ(out.size(), 2u);
  ASSERT_TRUE(sync_wait(t->erase("apple")).ok());
  EXPECT_EQ(sync_wait(t->erase("apple")).code(), StatusCode::kNotFound);
  EXPECT_FALSE(*sync_wait(t->get("apple", &v)));
  ASSERT_TRUE(sync_wait(t->insert("apple", "again")).ok());
  ASSERT_TRUE(*sync_wait(t->get("apple", &v)));
  EXPECT_EQ(v, "again");
  // Opening by name from another process, and what is not a tree.
  auto other = connect();
  ThreadClient* oc = *other->thread_client();
  auto o = oc->run(BTree::open(oc, "ops"));
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  ASSERT_TRUE(*sync_wait((*o)->get("pear", &v)));
  EXPECT_EQ(v, "brown");
  EXPECT_EQ(client_->run(BTree::create(client_, "ops")).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(oc->run(BTree::open(oc, "missing")).status().code(), StatusCode::kNotFound);
  BTreeOptions bad;
  bad.page_bytes = 1000;
  EXPECT_EQ(client_->run(BTree::create(client_, "bad", bad)).status().code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(client_->run(BTree::destroy(client_, "ops")).ok());
  EXPECT_EQ(oc->run(BTree::open(oc, "ops")).status().code(), StatusCode::kNotFound);
}

TEST_P(BTreeTest, BoundaryKeyAndValueSizes) {
  auto t = create("sizes");
  ASSERT_NE(t, nullptr);
  std::string v;
  const std::string max_key(ds::btree::kMaxKeyBytes, 'K');
  const std::string inline_max(ds::btree::kDefaultInlineValueBytes, 'i');
  const std::string first_oop(ds::btree::kDefaultInlineValueBytes + 1, 'o');
  const std::string max_value(ds::btree::kMaxValueBytes, 'V');
  ASSERT_TRUE(sync_wait(t->insert(std::string(1, '\0'), "smallest key")).ok());
  ASSERT_TRUE(sync_wait(t->insert(max_key, inline_max)).ok());
  ASSERT_TRUE(sync_wait(t->insert("oop", first_oop)).ok());
  ASSERT_TRUE(sync_wait(t->insert("max", max_value)).ok());
  ASSERT_TRUE(*sync_wait(t->get(std::string(1, '\0'), &v)));
  EXPECT_EQ(v, "smallest key");
  ASSERT_TRUE(*sync_wait(t->get(max_key, &v)));
  EXPECT_EQ(v, inline_max);
  ASSERT_TRUE(*sync_wait(t->get("oop", &v)));
  EXPECT_EQ(v, first_oop);
  ASSERT_TRUE(*sync_wait(t->get("max", &v)));
  EXPECT_EQ(v, max_value);
  ASSERT_TRUE(sync_wait(t->update("max", "small now")).ok());  // out of place -> inline
  ASSERT_TRUE(*sync_wait(t->get("max", &v)));
  EXPECT_EQ(v, "small now");
  ASSERT_TRUE(sync_wait(t->update("oop", max_value)).ok());
  Pairs out;
  ASSERT_TRUE(sync_wait(t->scan("", "", 0, &out)).ok());
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[2].first, "max");
  EXPECT_EQ(out[3], (std::pair<std::string, std::string>{"oop", max_value}));
  EXPECT_EQ(sync_wait(t->insert(std::string(ds::btree::kMaxKeyBytes + 1, 'x'), "v")).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(t->put("k", std::string(ds::btree::kMaxValueBytes + 1, 'x'))).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(t->insert("", "v")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sync_wait(t->get("", &v)).status().code(), StatusCode::kInvalidArgument);
  // Largest keys split pages down to one entry each; the tree stays whole.
  for (int i = 0; i < 40; ++i) {
    std::string k(ds::btree::kMaxKeyBytes, 'a' + i % 26);
    k[k.size() - 1 - i % 7] = static_cast<char>('0' + i);
    ASSERT_TRUE(sync_wait(t->put(k, inline_max)).ok()) << i;
  }
  const auto pages = check(t.get());
  ASSERT_GE(pages.size(), 2u);
  ASSERT_TRUE(sync_wait(t->scan("", "", 0, &out)).ok());
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end()));
  EXPECT_GE(out.size(), 40u);
}

// 400 long keys in 1 KiB pages: leaves, internal levels and root splits; every get, every scan
// start and every page edge.
TEST_P(BTreeTest, SplitsAtEveryLevelAndScansAtAndAcrossPageEdges) {
  auto t = create("levels");
  ASSERT_NE(t, nullptr);
  const int kN = tcp() ? 150 : 400;
  std::vector<int> order(kN);
  for (int i = 0; i < kN; ++i) order[i] = i;
  std::mt19937 rng(static_cast<uint32_t>(test_seed()));
  std::shuffle(order.begin(), order.end(), rng);
  for (int i : order) {
    ASSERT_TRUE(sync_wait(t->insert(long_key(i * 2), "value-of-" + std::to_string(i))).ok()) << i;
  }
  const auto pages = check(t.get());
  ASSERT_GE(pages.size(), 3u) << "expected leaves, internal pages and a root above them";
  EXPECT_EQ(pages.back(), 1u);
  EXPECT_GT(t->stats().splits, tcp() ? 15u : 40u);
  EXPECT_GE(t->stats().root_growths, 2u);
  std::string v;
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(*sync_wait(t->get(long_key(i * 2), &v))) << i;
    ASSERT_EQ(v, "value-of-" + std::to_string(i));
    ASSERT_FALSE(*sync_wait(t->get(long_key(i * 2 + 1), &v))) << i;  // between two present keys
  }
  Pairs all;
  ASSERT_TRUE(sync_wait(t->scan("", "", 0, &all)).ok());
  ASSERT_EQ(all.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(all[i].first, long_key(i * 2));
  // Scans from every key (so from every page's first and last key) for a window that crosses
  // at least one page edge, and from the gaps between keys.
  Pairs out;
  for (int i = 0; i < kN; i += 3) {
    ASSERT_TRUE(sync_wait(t->scan(long_key(i * 2), "", 60, &out)).ok());
    ASSERT_EQ(out.size(), static_cast<size_t>(std::min(60, kN - i))) << i;
    for (size_t j = 0; j < out.size(); ++j) ASSERT_EQ(out[j].first, long_key((i + j) * 2));
    ASSERT_TRUE(sync_wait(t->scan(long_key(i * 2 + 1), long_key(i * 2 + 41), 0, &out)).ok());
    ASSERT_EQ(out.size(), static_cast<size_t>(std::min(20, kN - 1 - i))) << i;
  }
  ASSERT_TRUE(sync_wait(t->scan(long_key(2 * kN), "", 0, &out)).ok());  // beyond the last key
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(sync_wait(t->scan(long_key(11), long_key(11), 0, &out)).ok());
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(sync_wait(t->scan(long_key(13), long_key(11), 0, &out)).ok());  // to < from
  EXPECT_TRUE(out.empty());
}

TEST_P(BTreeTest, WarmIndexCacheMakesAGetOnePageRead) {
  auto t = create("cache");
  ASSERT_NE(t, nullptr);
  const int n = tcp() ? 150 : 300;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(sync_wait(t->insert(long_key(i), "v")).ok());
  ASSERT_GE(t->height(), 3u);
  std::string v;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(*sync_wait(t->get(long_key(i), &v)));  // warms the cache
  const auto before = t->stats();
  for (int i = 0; i < n; ++i) ASSERT_TRUE(*sync_wait(t->get(long_key(i), &v)));
  const auto after = t->stats();
  EXPECT_EQ(after.get_page_reads - before.get_page_reads, static_cast<uint64_t>(n));
  EXPECT_EQ(after.cache_hits - before.cache_hits, static_cast<uint64_t>(n));
  // Without a cache every get reads the whole path.
  BTreeOptions none;
  none.cache_bytes = 0;
  auto plain = client_->run(BTree::open(client_, "cache", none));
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(*sync_wait((*plain)->get(long_key(7), &v)));
  EXPECT_EQ((*plain)->stats().get_page_reads, (*plain)->height());
  // Splits made by another client: the cached parents are stale, lookups notice it from the
  // leaves' fences and stay correct.
  auto other = connect();
  ThreadClient* oc = *other->thread_client();
  auto o = oc->run(BTree::open(oc, "cache"));
  ASSERT_TRUE(o.ok());
  for (int i = 0; i < n; ++i) ASSERT_TRUE(sync_wait((*o)->insert(long_key(i) + "x", "w")).ok());
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(*sync_wait(t->get(long_key(i) + "x", &v))) << i;
    ASSERT_EQ(v, "w");
  }
  EXPECT_GT(t->stats().sibling_hops + t->stats().restarts, 0u);
  // A small budget evicts.
  BTreeOptions small;
  small.cache_bytes = 4 * (1024 + 128);
  auto s = client_->run(BTree::open(client_, "cache", small));
  ASSERT_TRUE(s.ok());
  for (int i = 0; i < n; i += 3) ASSERT_TRUE(*sync_wait((*s)->get(long_key(i), &v)));
  EXPECT_LE((*s)->cache().entries(), 4u);
  EXPECT_GT((*s)->cache().stats().evictions, 0u);
}

// Over TCP a scan's page walk is a call the node runs (ds/btree/served.h): the same records as
// the one-sided scan, in fewer round trips; on shared memory it stays one-sided.
TEST_P(BTreeTest, OverTcpAScanWalksTheLeavesOnTheNode) {
  auto t = create("served-scan");
  ASSERT_NE(t, nullptr);
  const int n = 600;
  std::vector<std::pair<std::string, std::string>> expected;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(sync_wait(t->insert(num_key(2 * i), "v" + std::to_string(i))).ok());
    expected.emplace_back(num_key(2 * i), "v" + std::to_string(i));
  }
  std::sort(expected.begin(), expected.end());
  BTreeOptions one_sided_options;
  one_sided_options.served_procedures = false;
  auto one_sided = client_->run(BTree::open(client_, "served-scan", one_sided_options));
  ASSERT_TRUE(one_sided.ok());
  std::vector<std::pair<std::string, std::string>> out, reference;
  const ds::btree::BTreeStats before = t->stats(), ref_before = (*one_sided)->stats();
  ASSERT_TRUE(sync_wait(t->scan("", "", 0, &out)).ok());
  ASSERT_TRUE(sync_wait((*one_sided)->scan("", "", 0, &reference)).ok());
  EXPECT_EQ(out, expected);
  EXPECT_EQ(reference, expected);
  const uint64_t calls = t->stats().served_calls - before.served_calls;
  const uint64_t reads = t->stats().page_reads - before.page_reads;
  const uint64_t ref_reads = (*one_sided)->stats().page_reads - ref_before.page_reads;
  EXPECT_EQ((*one_sided)->stats().served_calls, 0u);
  EXPECT_GE(calls + reads, 1u);
  if (tcp()) {
    EXPECT_GT(calls, 0u);
    EXPECT_EQ(t->stats().served_fallbacks, 0u);
    EXPECT_LE(calls + reads, ref_reads);  // round trips: at most one per page
    EXPECT_GE(t->stats().served_pages - before.served_pages, ref_reads - 1);
  } else {
    EXPECT_EQ(calls, 0u);
  }
  // Bounds, limits and starting points inside the tree, against the one-sided scan.
  for (int from : {0, 1, 77, 599, 1198, 1199, 1300}) {
    for (size_t limit : {size_t{0}, size_t{1}, size_t{50}, size_t{333}}) {
      const std::string to = from % 2 == 0 ? "" : num_key(from + 400);
      ASSERT_TRUE(sync_wait(t->scan(num_key(from), to, limit, &out)).ok());
      ASSERT_TRUE(sync_wait((*one_sided)->scan(num_key(from), to, limit, &reference)).ok());
      EXPECT_EQ(out, reference) << "from " << from << " limit " << limit;
      if (!out.empty()) {
        ASSERT_GE(out.front().first, num_key(from)) << "from " << from << " limit " << limit;
      }
      EXPECT_TRUE(limit == 0 || out.size() <= limit);
    }
  }
  // A fresh handle starts at the root; the node hands back the level-1 page it passed.
  auto fresh = client_->run(BTree::open(client_, "served-scan"));
  ASSERT_TRUE(fresh.ok());
  const uint64_t opened = (*fresh)->stats().page_reads;  // open() read the root
  ASSERT_TRUE(sync_wait((*fresh)->scan(num_key(500), "", 10, &out)).ok());
  ASSERT_EQ(out.size(), 10u);
  EXPECT_EQ(out.front().first, num_key(500));
  EXPECT_GE((*fresh)->cache().entries(), 1u);  // over TCP: the image the node returned
  if (tcp()) {
    EXPECT_EQ((*fresh)->stats().page_reads, opened);
  } else {
    EXPECT_GE((*fresh)->stats().page_reads, opened + (*fresh)->height());
  }
}

// ---- concurrency -------------------------------------------------------------------------

Task<void> insert_range(BTree* t, int first, int count, int stride, std::atomic<int>* failed) {
  for (int i = 0; i < count; ++i) {
    const int k = first + i * stride;
    Status st = co_await t->insert(long_key(k), "v" + std::to_string(k));
    if (!st.ok()) {
      std::fprintf(stderr, "insert %d: %s\n", k, st.to_string().c_str());
      failed->fetch_add(1);
    }
  }
}

// Many threads (each with its own handle and several coroutines) insert into an empty tree at
// once: the root leaf splits under all of them, and the tree grows several levels.
TEST_P(BTreeTest, RootSplitsFromManyThreadsAtOnceOnAnEmptyTree) {
  auto t = create("race");
  ASSERT_NE(t, nullptr);
  constexpr int kThreads = 4, kCoroutines = 6, kPer = 15;  // 360 keys
  constexpr int kStride = kThreads * kCoroutines;
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      ThreadClient* tc = *cluster_->thread_client();
      auto h = tc->run(BTree::open(tc, "race"));
      ASSERT_TRUE(h.ok());
      for (int k = 0; k < kCoroutines; ++k) {
        ASSERT_TRUE(tc->scheduler()
                        .spawn(insert_range(h->get(), th * kCoroutines + k, kPer, kStride, &failed))
                        .ok());
      }
      tc->scheduler().run_until_idle();
      cluster_->release_thread_client();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  const auto pages = check(t.get());
  EXPECT_GE(pages.size(), 3u);
  Pairs all;
  ASSERT_TRUE(sync_wait(t->scan("", "", 0, &all)).ok());
  ASSERT_EQ(all.size(), size_t{kStride} * kPer);
  for (int i = 0; i < kStride * kPer; ++i) {
    ASSERT_EQ(all[i].first, long_key(i));
    ASSERT_EQ(all[i].second, "v" + std::to_string(i));
  }
}

Task<void> mixed_worker(BTree* t, int id, int ops, int keys, History* h, std::atomic<int>* bad) {
  std::mt19937 rng(static_cast<uint32_t>(test_seed() + 2000 + id));
  for (int i = 0; i < ops; ++i) {
    HistoryOp o;
    o.client = id;
    o.key = "hot" + std::to_string(rng() % keys);
    const int dice = rng() % 10;
    // Values alternate between inline and out of place.
    o.value = "c" + std::to_string(id) + "n" + std::to_string(i);
    if (i % 3 == 0) o.value += std::string(200, 'x');
    co_await apply_op(t, dice, &o);
    if (o.unknown) {
      std::fprintf(stderr, "%s %s: %s\n", o.op.c_str(), o.key.c_str(), o.error.c_str());
      bad->fetch_add(1);
    }
    h->add(std::move(o));
  }
}

// 3 threads (own handles) x 6 coroutines x 120 mixed operations on 6 hot keys beside 300
// filler keys per thread (splits during the history): Porcupine checks it (half over TCP).
TEST_P(BTreeTest, ContendedMixedOperationsAreLinearizable) {
  auto t = create("hot");
  ASSERT_NE(t, nullptr);
  constexpr int kThreads = 3, kCoroutines = 6, kKeys = 6;
  const int kOps = tcp() ? 60 : 120;
  const int kFill = tcp() ? 100 : 300;
  History history;
  std::atomic<int> bad{0}, failed{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      ThreadClient* tc = *cluster_->thread_client();
      auto h = tc->run(BTree::open(tc, "hot"));
      ASSERT_TRUE(h.ok());
      for (int k = 0; k < kCoroutines; ++k) {
        ASSERT_TRUE(
            tc->scheduler()
                .spawn(mixed_worker(h->get(), th * kCoroutines + k, kOps, kKeys, &history, &bad))
                .ok());
      }
      ASSERT_TRUE(tc->scheduler().spawn(insert_range(h->get(), th, kFill, kThreads, &failed)).ok());
      tc->scheduler().run_until_idle();
      cluster_->release_thread_client();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  ASSERT_EQ(history.ops.size(), size_t{kThreads} * kCoroutines * kOps);
  check(t.get());
  expect_linearizable(history, "btree-" + GetParam().name);
}

struct ScanCheck {
  std::atomic<bool> stop{false};
  std::atomic<int> violations{0};
  std::atomic<int> scans{0};
  std::string first_violation;
  std::mutex mu;
  void violation(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    if (violations.fetch_add(1) == 0) first_violation = what;
  }
};

// Writers churn keys "c<n>" (insert, update, erase, re-insert) between stable keys "s<n>" that
// are present all along, and never touch keys "a<n>", which are never present.
Task<void> churn_writer(BTree* t, int id, int keys, ScanCheck* sc) {
  std::mt19937 rng(static_cast<uint32_t>(test_seed() + 3000 + id));
  while (!sc->stop.load()) {
    const std::string k = "c" + std::to_string(rng() % keys + 1000);
    const std::string v = std::string(rng() % 2 ? 8 : 300, 'v');
    Status st;
    switch (rng() % 3) {
      case 0:
        st = co_await t->put(k, v);
        break;
      case 1:
        st = co_await t->erase(k);
        break;
      default:
        st = co_await t->update(k, v);
        break;
    }
    if (!st.ok() && st.code() != StatusCode::kNotFound) sc->violation(st.to_string());
  }
}

Task<void> scanner(BTree* t, int rounds, size_t stable_keys, ScanCheck* sc) {
  for (int r = 0; r < rounds; ++r) {
    Pairs out;
    Status st = co_await t->scan("", "", 0, &out);
    if (!st.ok()) {
      sc->violation("scan failed: " + st.to_string());
      continue;
    }
    std::set<std::string> stable;
    for (size_t i = 0; i < out.size(); ++i) {
      const std::string& k = out[i].first;
      if (i > 0 && !(out[i - 1].first < k)) sc->violation("out of order or twice: " + k);
      if (k[0] == 'a') sc->violation("a key that was never present: " + k);
      if (k[0] == 's') stable.insert(k);
    }
    if (stable.size() != stable_keys) {
      sc->violation("stable keys returned: " + std::to_string(stable.size()) + " of " +
                    std::to_string(stable_keys));
    }
    sc->scans.fetch_add(1);
  }
  sc->stop.store(true);
}

TEST_P(BTreeTest, ScansReturnEveryStableKeyOnceAndNoAbsentKeyUnderConcurrentWriters) {
  auto t = create("scanprop");
  ASSERT_NE(t, nullptr);
  const int keys = tcp() ? 150 : 400;
  for (int i = 0; i < keys; ++i) {
    ASSERT_TRUE(sync_wait(t->insert("s" + std::to_string(1000 + i), "stable")).ok());
    ASSERT_TRUE(sync_wait(t->insert("c" + std::to_string(1000 + i), "churn")).ok());
  }
  ScanCheck sc;
  const int scans = tcp() ? 4 : 40;
  std::vector<std::thread> threads;
  for (int th = 0; th < 2; ++th) {
    threads.emplace_back([&, th] {
      ThreadClient* tc = *cluster_->thread_client();
      auto h = tc->run(BTree::open(tc, "scanprop"));
      ASSERT_TRUE(h.ok());
      for (int k = 0; k < 4; ++k) {
        ASSERT_TRUE(tc->scheduler().spawn(churn_writer(h->get(), th * 4 + k, keys, &sc)).ok());
      }
      if (th == 0) {
        ASSERT_TRUE(tc->scheduler().spawn(scanner(h->get(), scans, keys, &sc)).ok());
      }
      tc->scheduler().run_until_idle();
      cluster_->release_thread_client();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(sc.violations.load(), 0) << sc.first_violation;
  EXPECT_EQ(sc.scans.load(), scans);
  check(t.get());
}

// Inserting and erasing the same amount over and over: emptied leaves are unlinked and their
// pages reused, so the nodes' usage stays flat (a moving window of keys, the hardest case).
TEST_P(BTreeTest, InsertEraseChurnKeepsMemoryFlat) {
  BTreeOptions o;
  o.retire_grace_ms = 1;  // one client, one coroutine: nobody else holds page pointers
  auto t = create("churn", o);
  ASSERT_NE(t, nullptr);
  const int kWindow = tcp() ? 120 : 600, kRounds = tcp() ? 4 : 8;
  int next = 0;
  for (; next < kWindow; ++next) ASSERT_TRUE(sync_wait(t->insert(num_key(next, 8), "v")).ok());
  uint64_t after_first = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kWindow; ++i, ++next) {
      ASSERT_TRUE(
          sync_wait(t->insert(num_key(next, 8), std::string(i % 5 == 0 ? 300 : 8, 'w'))).ok());
      ASSERT_TRUE(sync_wait(t->erase(num_key(next - kWindow, 8))).ok());
    }
    client_->run(t->reclaim(true));
    if (round == 1) after_first = used_bytes();
  }
  const uint64_t at_end = used_bytes();
  EXPECT_GT(t->stats().unlinked, static_cast<uint64_t>(kWindow / 30));
  EXPECT_LE(at_end, after_first + 64 * 1024) << "usage kept growing";
  const auto pages = check(t.get());
  EXPECT_LE(pages[0], static_cast<uint64_t>(kWindow / 10)) << "emptied leaves stayed linked";
  Pairs all;
  ASSERT_TRUE(sync_wait(t->scan("", "", 0, &all)).ok());
  ASSERT_EQ(all.size(), static_cast<size_t>(kWindow));
  EXPECT_EQ(all.front().first, num_key(next - kWindow, 8));
}

// ---- dead and stopped lock holders --------------------------------------------------------

// A writer that dies in the middle of a page write leaves the page torn, its lock held by its
// ended session and a redo copy: the next client takes the lock over, restores the page from
// the copy, and nothing acknowledged is lost. A live holder that does not let go makes others
// fail with a clear kTimedOut, and the page is intact.
TEST_P(BTreeTest, LockHeldByADeadWriterIsTakenOverAndRepairedALiveOneTimesOut) {
  BTreeOptions o;
  o.lock_wait_ms = 300;
  auto t = create("dead", o);
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(sync_wait(t->insert(num_key(i), "v")).ok());
  std::string v;
  {
    auto dying = connect();
    ThreadClient* dc = *dying->thread_client();
    auto h = dc->run(BTree::open(dc, "dead", o));
    ASSERT_TRUE(h.ok());
    (*h)->set_die_mid_write_for_test(true);
    EXPECT_EQ(sync_wait((*h)->put(num_key(5), "half-written")).code(), StatusCode::kCancelled);
    // Alive and holding the lock: readers of the torn page and writers wait, then time out.
    auto r = sync_wait(t->get(num_key(5), &v));
    EXPECT_EQ(r.status().code(), StatusCode::kTimedOut) << r.status().to_string();
    Status w = sync_wait(t->put(num_key(6), "x"));
    EXPECT_EQ(w.code(), StatusCode::kTimedOut) << w.to_string();
    EXPECT_NE(w.message().find("locked by live session"), std::string_view::npos);
  }  // the writer's sessions end
  auto r = sync_wait(t->get(num_key(5), &v));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(*r);
  EXPECT_EQ(v, "half-written");  // the redo copy was complete: the write is finished
  EXPECT_GE(t->stats().takeovers, 1u);
  EXPECT_GE(t->stats().repairs, 1u);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(*sync_wait(t->get(num_key(i), &v))) << i;
    if (i != 5) {
      EXPECT_EQ(v, "v");
    }
  }
  ASSERT_TRUE(sync_wait(t->put(num_key(6), "after")).ok());
  check(t.get());
}

// kill -9 of a client process that holds a page lock in the middle of its page write: while it
// lives, others wait and fail with kTimedOut; once it is dead, the next reader takes the lock
// over (its session ended) and finishes the write from the redo copy.
TEST_P(BTreeTest, KillNineOfALockHolderInTheMiddleOfAWrite) {
  BTreeOptions o;
  o.lock_wait_ms = 300;
  auto t = create("k9", o);
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(sync_wait(t->insert("k9-" + std::to_string(i), "v")).ok());
  std::string servers = servers_[0]->address() + "," + servers_[1]->address();
  auto holder = ChildProcess::start(
      {FARMEM_FAULT_CLIENT_BIN, "--servers", servers, "--mode", "btree-hold", "--table", "k9"},
      {"UCX_TLS=" + GetParam().tls});
  ASSERT_NE(holder, nullptr);
  ASSERT_NE(holder->wait_for_line("holding", 30'000), "") << holder->output();
  std::string v;
  auto r = sync_wait(t->get("k9-held", &v));
  EXPECT_EQ(r.status().code(), StatusCode::kTimedOut) << r.status().to_string();
  holder->signal(SIGKILL);
  ASSERT_NE(holder->wait_exit(30'000), -1);
  // The node ends the dead process's sessions when its connections close; until then the lock
  // is still a live lease, so a reader may time out once more.
  for (int i = 0; i < 100; ++i) {
    r = sync_wait(t->get("k9-held", &v));
    if (r.ok() || r.status().code() != StatusCode::kTimedOut) break;
  }
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(*r);
  EXPECT_EQ(v, "held");
  EXPECT_GE(t->stats().takeovers + t->stats().repairs, 1u);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(*sync_wait(t->get("k9-" + std::to_string(i), &v))) << i;
  check(t.get());
}

INSTANTIATE_TEST_SUITE_P(Transports, BTreeTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
