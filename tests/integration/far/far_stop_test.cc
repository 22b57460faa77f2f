// The far objects' SIGSTOP rows of the failure matrix (docs/ARCHITECTURE.md), over shm and TCP:
// the memory node stopped for less than the op deadline while a thread fetches far objects and
// looks up far hash-table buckets (every value comes back right after SIGCONT), and stopped past
// the deadline (lookups the node must answer fail with kTimedOut or kPeerFailed, never hang,
// never return a wrong value; after SIGCONT the node serves a new client).
#include <signal.h>

#include <chrono>
#include <thread>
#include <vector>

#include "far_fixture.h"
#include "farmem/far/cached_hash_table.h"
#include "farmem/far/far_ptr.h"

namespace farmem::testing {
namespace {

using far::CachedHashTable;
using runtime::Task;

class FarStopTest : public FarTest {};

constexpr uint64_t kKeys = 300;
uint64_t value_of(uint64_t k) { return k * 7 + 1; }

// A table of kKeys keys whose buckets are then evicted (every find must reach the node: a
// fetch, or with RemoteLookup::kOn the node's scan).
Task<Result<CachedHashTable<uint64_t, uint64_t>>> evicted_table(far::ThreadCache* cache,
                                                                far::RemoteLookup remote) {
  auto h = co_await CachedHashTable<uint64_t, uint64_t>::create(cache, 7, remote);
  if (!h.ok()) co_return h.status();
  for (uint64_t k = 0; k < kKeys; ++k) {
    Status s = co_await h->put(k, value_of(k));
    if (!s.ok()) co_return s;
  }
  auto left = co_await cache->evict_all();
  if (!left.ok()) co_return left.status();
  co_return std::move(*h);
}

// Looks every key up; the first failure's Status, or OK when every value was right. A wrong
// value is an Internal error (never acceptable, whatever the node's state).
Task<Status> look_up_all(CachedHashTable<uint64_t, uint64_t>* h) {
  for (uint64_t k = 0; k < kKeys; ++k) {
    auto v = co_await h->find(k);
    if (!v.ok()) co_return v.status();
    if (*v != std::optional<uint64_t>(value_of(k))) {
      co_return Internal("key " + std::to_string(k) + ": wrong value");
    }
  }
  co_return OkStatus();
}

// Row: node stopped for less than the op deadline (10 s) under lookups and fetches, then
// continued: every value comes back right.
TEST_P(FarStopTest, NodeStoppedWithinTheDeadlineThenContinued) {
  start(4 << 20, 64 << 10, /*op_timeout_ms=*/10'000);
  for (auto remote : {far::RemoteLookup::kOff, far::RemoteLookup::kOn}) {
    auto h = c_->run(evicted_table(cache_.get(), remote));
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    server_->signal(SIGSTOP);
    std::thread cont([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // far below the deadline
      server_->signal(SIGCONT);
    });
    Status s = c_->run(look_up_all(&*h));
    cont.join();
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
}

// Row: node stopped past the op deadline (1 s): lookups the node must answer fail with
// kTimedOut (or kPeerFailed once heartbeats are missed), without a hang or a wrong value; after
// SIGCONT the node serves a new client.
TEST_P(FarStopTest, NodeStoppedPastTheDeadlineGivesErrorsThenServesANewClient) {
  start(4 << 20, 64 << 10, /*op_timeout_ms=*/1000);
  auto h = c_->run(evicted_table(cache_.get(), far::RemoteLookup::kOn));
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  server_->signal(SIGSTOP);
  Status s = c_->run(look_up_all(&*h));
  server_->signal(SIGCONT);
  ASSERT_FALSE(s.ok()) << "every lookup was answered by a stopped node";
  EXPECT_TRUE(s.code() == StatusCode::kTimedOut || s.code() == StatusCode::kPeerFailed)
      << s.to_string();
  // A new client of the continued node: far objects round-trip.
  auto c = client::Cluster::connect(config_for({server_.get()}, GetParam().tls, 5000));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto tc = (*c)->thread_client();
  ASSERT_TRUE(tc.ok());
  {
    far::ThreadCache cache(manager_.get(), *tc);
    auto fresh = (*tc)->run(evicted_table(&cache, far::RemoteLookup::kOn));
    ASSERT_TRUE(fresh.ok()) << fresh.status().to_string();
    Status again = (*tc)->run(look_up_all(&*fresh));
    EXPECT_TRUE(again.ok()) << again.to_string();
  }
  (*c)->release_thread_client();
}

INSTANTIATE_TEST_SUITE_P(Transports, FarStopTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
