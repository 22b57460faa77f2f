// Far List and Queue against std containers under a tiny local budget, over shm and TCP: random
// operations from several coroutines at once, FIFO order between a producer and a consumer,
// for_each's prefetching, and the error cases.
#include <deque>
#include <random>
#include <vector>

#include "far_fixture.h"
#include "farmem/far/list.h"
#include "farmem/far/queue.h"
#include "farmem/runtime/when_all.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using far::ThreadCache;
using runtime::Task;
using SmallList = far::List<uint64_t, 256>;  // 32 elements a node: many nodes

class FarListTest : public FarTest {};

// One coroutine's random operations; each list operation is atomic and the model is updated
// right after it, before this coroutine can be suspended again.
Task<Status> list_ops(SmallList* l, std::deque<uint64_t>* m, uint64_t seed, int ops) {
  std::mt19937_64 rng(seed);
  for (int op = 0; op < ops; ++op) {
    const uint64_t r = rng() >> 1;
    const uint64_t pick = rng();
    switch (r % 8) {
      case 0:
      case 1: {
        Status s = co_await l->push_back(r);
        if (!s.ok()) co_return s;
        m->push_back(r);
        break;
      }
      case 2: {
        Status s = co_await l->push_front(r);
        if (!s.ok()) co_return s;
        m->push_front(r);
        break;
      }
      case 3: {
        auto v = co_await l->pop_front();
        if (m->empty()) {
          if (v.ok() || v.status().code() != StatusCode::kOutOfRange) {
            co_return Internal("pop_front of an empty list");
          }
          break;
        }
        if (!v.ok()) co_return v.status();
        if (*v != m->front()) co_return Internal("pop_front differs");
        m->pop_front();
        break;
      }
      case 4: {
        if (m->empty()) break;
        auto v = co_await l->pop_back();
        if (!v.ok()) co_return v.status();
        if (*v != m->back()) co_return Internal("pop_back differs");
        m->pop_back();
        break;
      }
      case 5: {
        const uint64_t i = pick % (m->size() + 1);
        Status s = co_await l->insert(i, r);
        if (!s.ok()) co_return s;
        m->insert(m->begin() + static_cast<std::ptrdiff_t>(i), r);
        break;
      }
      case 6: {
        if (m->empty()) break;
        const uint64_t i = pick % m->size();
        auto v = co_await l->erase(i);
        if (!v.ok()) co_return v.status();
        if (*v != (*m)[i]) co_return Internal("erase differs");
        m->erase(m->begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      case 7: {
        if (m->empty()) break;
        const uint64_t i = pick % m->size();
        if (pick & 1) {
          Status s = co_await l->write(i, r);
          if (!s.ok()) co_return s;
          (*m)[i] = r;
        } else {
          auto v = co_await l->read(i);
          if (!v.ok()) co_return v.status();
          if (*v != (*m)[i]) co_return Internal("read differs at " + std::to_string(i));
        }
        break;
      }
    }
    if (l->size() != m->size()) co_return Internal("size differs");
  }
  co_return OkStatus();
}

Task<Status> list_model(ThreadCache* cache, uint64_t seed, int coroutines, int ops) {
  SmallList l(cache);
  std::deque<uint64_t> m;
  std::vector<Task<Status>> tasks;
  for (int i = 0; i < coroutines; ++i) tasks.push_back(list_ops(&l, &m, seed + i, ops));
  auto results = co_await runtime::when_all(std::move(tasks));
  for (auto& r : results) {
    if (!r.ok()) co_return r;
  }
  auto left = co_await cache->evict_all();  // the whole list from far memory again
  if (!left.ok()) co_return left.status();
  std::vector<uint64_t> got;
  Status s = co_await l.for_each([&got](const uint64_t& v) { got.push_back(v); });
  if (!s.ok()) co_return s;
  if (got != std::vector<uint64_t>(m.begin(), m.end())) co_return Internal("contents differ");
  auto bad = co_await l.read(l.size());
  if (bad.ok() || bad.status().code() != StatusCode::kOutOfRange) {
    co_return Internal("read past the end");
  }
  co_return OkStatus();
}

TEST_P(FarListTest, RandomOperationsMatchADequeUnderATinyBudget) {
  start(128 << 10, 16 << 10);
  const uint64_t seed = test_seed();
  Status s = c_->run(list_model(cache_.get(), seed, 4, tcp() ? 150 : 1500));
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_GT(cache_->stats().evicted, 0u);
  EXPECT_GT(cache_->stats().prefetches, 0u);  // for_each fetched nodes ahead
}

Task<Status> producer(far::Queue<uint64_t, 256>* q, uint64_t from, uint64_t to) {
  for (uint64_t i = from; i < to; ++i) {
    Status s = co_await q->push(i * 3);
    if (!s.ok()) co_return s;
  }
  co_return OkStatus();
}

Task<Status> consumer(far::Queue<uint64_t, 256>* q, ThreadCache* cache, uint64_t n) {
  uint64_t next = 0;
  while (next < n) {
    if (q->empty()) {
      co_await cache->client()->scheduler().yield();
      continue;
    }
    auto v = co_await q->pop();
    if (!v.ok()) co_return v.status();
    if (*v != next * 3) co_return Internal("out of order at " + std::to_string(next));
    ++next;
  }
  co_return OkStatus();
}

// The consumer pops the backlog and then what a second producer adds concurrently.
Task<Status> queue_concurrent(ThreadCache* cache, uint64_t n) {
  far::Queue<uint64_t, 256> q(cache);
  Status s = co_await producer(&q, 0, n / 2);
  if (!s.ok()) co_return s;
  auto left = co_await cache->evict_all();
  if (!left.ok()) co_return left.status();
  std::vector<Task<Status>> tasks;
  tasks.push_back(consumer(&q, cache, n));
  tasks.push_back(producer(&q, n / 2, n));
  auto results = co_await runtime::when_all(std::move(tasks));
  for (auto& r : results) {
    if (!r.ok()) co_return r;
  }
  if (!q.empty()) co_return Internal("queue not empty at the end");
  auto e = co_await q.pop();
  if (e.ok() || e.status().code() != StatusCode::kOutOfRange) co_return Internal("empty pop");
  co_return OkStatus();
}

TEST_P(FarListTest, AQueueKeepsFifoOrderBetweenAProducerAndAConsumer) {
  start(64 << 10, 16 << 10);
  Status s = c_->run(queue_concurrent(cache_.get(), tcp() ? 2000 : 20000));
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_GT(cache_->stats().fetches, 0u);
}

INSTANTIATE_TEST_SUITE_P(Transports, FarListTest, ::testing::ValuesIn(all_transports()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace farmem::testing
