// Direct access: on shared memory one-sided operations are CPU instructions on UCX's mapping of
// the node's region; over TCP they go through UCX. Results, errors and failure behaviour must be
// the same either way, and direct and UCX-posted atomics on the same words must be atomic with
// each other.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "farmem/fabric/wire.h"
#include "farmem/runtime/scheduler.h"
#include "harness.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Batch;
using client::Cluster;
using client::ThreadClient;
using runtime::Task;

class DirectAccessTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.tls = GetParam().tls;
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    direct_cluster_ = connect(true);
    plain_cluster_ = connect(false);
    ASSERT_NE(direct_cluster_, nullptr);
    ASSERT_NE(plain_cluster_, nullptr);
    direct_ = *direct_cluster_->thread_client();
    plain_ = *plain_cluster_->thread_client();
    node_ = direct_cluster_->nodes().front().node_id;
  }
  void TearDown() override {
    plain_cluster_.reset();  // first: it runs on the scheduler the direct cluster's client owns
    direct_cluster_.reset();
    server_.reset();
  }

  std::unique_ptr<Cluster> connect(bool direct_access, uint32_t op_timeout_ms = 5000) {
    auto config = config_for({server_.get()}, GetParam().tls, op_timeout_ms);
    config.options.direct_access = direct_access;
    auto c = Cluster::connect(config);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(*c) : nullptr;
  }

  GlobalAddress alloc(uint64_t bytes) {
    auto a = plain_->run(plain_->allocate_on(node_, bytes, 64));
    EXPECT_TRUE(a.ok()) << a.status().to_string();
    return a.ok() ? *a : GlobalAddress();
  }

  bool shm() const { return GetParam().name == "shm"; }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Cluster> direct_cluster_;  // direct_access = true (the default)
  std::unique_ptr<Cluster> plain_cluster_;   // direct_access = false: always through UCX
  ThreadClient* direct_ = nullptr;
  ThreadClient* plain_ = nullptr;
  uint16_t node_ = 0;
};

TEST_P(DirectAccessTest, DirectPathIsUsedOnSharedMemoryOnlyAndWhenAllowed) {
  EXPECT_EQ(direct_->direct(node_), shm());
  EXPECT_FALSE(plain_->direct(node_));
  EXPECT_FALSE(direct_->direct(node_ + 1));  // no such node
  const std::string t = direct_->transports();
  EXPECT_EQ(t.rfind("direct+", 0) == 0, shm()) << t;
  EXPECT_EQ(direct_cluster_->transports(), t);
  EXPECT_EQ(plain_->transports().find("direct"), std::string::npos) << plain_->transports();
  if (shm()) {
    // UCX picked a shared-memory lane, and the mapping shows the node's region header.
    EXPECT_TRUE(t.find("sysv") != std::string::npos || t.find("posix") != std::string::npos) << t;
    const fabric::Endpoint* ep = direct_->endpoint(node_);
    ASSERT_NE(ep->direct_base(), nullptr);
    uint8_t via_ucx[64] = {}, mapped[64] = {};
    ASSERT_TRUE(sync_wait(plain_->read(GlobalAddress(node_, 0), via_ucx, sizeof(via_ucx))).ok());
    std::memcpy(mapped, ep->direct_base(), sizeof(mapped));
    EXPECT_EQ(std::memcmp(via_ucx, mapped, sizeof(mapped)), 0);
  } else {
    EXPECT_EQ(direct_->endpoint(node_)->direct_base(), nullptr);
  }
}

// Both clients see each other's writes and get the same answers from CAS and FAA.
TEST_P(DirectAccessTest, ReadsWritesAndAtomicsAgreeWithDirectAccessOnAndOff) {
  GlobalAddress a = alloc(1 << 20);
  std::mt19937_64 rng(test_seed());
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{63}, size_t{64}, size_t{200},
                   size_t{4096}, size_t{65537}, size_t{1} << 20}) {
    for (int writer = 0; writer < 2; ++writer) {
      ThreadClient* w = writer == 0 ? direct_ : plain_;
      ThreadClient* r = writer == 0 ? plain_ : direct_;
      std::vector<uint8_t> out(n), in(n, 0), again(n, 0);
      for (auto& b : out) b = static_cast<uint8_t>(rng());
      ASSERT_TRUE(sync_wait(w->write(a, out.data(), n)).ok()) << n;
      ASSERT_TRUE(sync_wait(r->read(a, in.data(), n)).ok()) << n;
      ASSERT_TRUE(sync_wait(w->read(a, again.data(), n)).ok()) << n;
      ASSERT_EQ(out, in) << "size " << n << " written by " << (writer == 0 ? "direct" : "plain");
      ASSERT_EQ(out, again) << n;
    }
  }
  // Unaligned offsets.
  std::vector<uint8_t> out(100, 0x5A), in(100, 0);
  ASSERT_TRUE(sync_wait(direct_->write(a + 3, out.data(), out.size())).ok());
  ASSERT_TRUE(sync_wait(plain_->read(a + 3, in.data(), in.size())).ok());
  EXPECT_EQ(out, in);

  // The same sequence of atomics through either client gives the same results.
  for (ThreadClient* c : {direct_, plain_}) {
    GlobalAddress w = a + 4096;
    uint64_t zero = 0, seen = 99;
    ASSERT_TRUE(sync_wait(c->write(w, &zero, 8)).ok());
    ASSERT_TRUE(sync_wait(c->cas(w, 1, 5, &seen)).ok());  // fails: the word is 0
    EXPECT_EQ(seen, 0u);
    ASSERT_TRUE(sync_wait(c->cas(w, 0, 5, &seen)).ok());  // succeeds
    EXPECT_EQ(seen, 0u);
    ASSERT_TRUE(sync_wait(c->faa(w, 10, &seen)).ok());
    EXPECT_EQ(seen, 5u);
    ASSERT_TRUE(sync_wait(c->faa(w, ~uint64_t{0}, &seen)).ok());  // adds -1, wrapping
    EXPECT_EQ(seen, 15u);
    ASSERT_TRUE(sync_wait(c->cas(w, 14, UINT64_MAX, &seen)).ok());
    EXPECT_EQ(seen, 14u);
    uint64_t v = 0;
    ASSERT_TRUE(sync_wait((c == direct_ ? plain_ : direct_)->read(w, &v, 8)).ok());
    EXPECT_EQ(v, UINT64_MAX);
  }
}

Task<Status> ordered_batch(ThreadClient* c, GlobalAddress a, uint64_t* before, uint64_t* after,
                           uint64_t* cas_seen, uint64_t* faa_seen, uint64_t* last) {
  Batch b(*c);
  uint64_t value = 1234;
  FARMEM_CO_TRY(b.read(a, before, 8));   // deferred on the direct path
  FARMEM_CO_TRY(b.write(a, &value, 8));  // performs the read first
  FARMEM_CO_TRY(b.read(a, after, 8));    // sees the write
  FARMEM_CO_TRY(b.cas(a, 1234, 77, cas_seen));
  FARMEM_CO_TRY(b.read(a + 8, last, 8));
  FARMEM_CO_TRY(b.faa(a + 8, 3, faa_seen));
  FARMEM_CO_TRY(b.fence());
  Status s = co_await b.wait();
  co_return s;
}

// Inside a batch, operations take effect in the order they were posted, even though direct reads
// are deferred to wait(): a later write, CAS or FAA performs the earlier reads first.
TEST_P(DirectAccessTest, BatchKeepsProgramOrderWithDeferredReads) {
  GlobalAddress a = alloc(64);
  uint64_t init[2] = {5, 40};
  ASSERT_TRUE(sync_wait(direct_->write(a, init, 16)).ok());
  uint64_t before = 0, after = 0, cas_seen = 0, faa_seen = 0, last = 0;
  Status s = direct_->run(ordered_batch(direct_, a, &before, &after, &cas_seen, &faa_seen, &last));
  ASSERT_TRUE(s.ok()) << s.to_string();
  uint64_t now[2] = {};
  ASSERT_TRUE(sync_wait(plain_->read(a, now, 16)).ok());
  if (!direct_->direct(node_)) {
    // Through UCX the batch's operations are not ordered without fences: only completion.
    SUCCEED() << "UCX path: order within a batch is not promised";
    return;
  }
  EXPECT_EQ(before, 5u);
  EXPECT_EQ(after, 1234u);
  EXPECT_EQ(cas_seen, 1234u);
  EXPECT_EQ(last, 40u);
  EXPECT_EQ(faa_seen, 40u);
  EXPECT_EQ(now[0], 77u);
  EXPECT_EQ(now[1], 43u);
}

Task<void> read_check_loop(ThreadClient* c, GlobalAddress base, uint32_t id, int rounds,
                           std::atomic<int>* errors) {
  // Each coroutine owns one 64-byte line: it writes a pattern, then reads it back in a batch
  // together with the previous coroutine's line (which may change meanwhile, so only its
  // owner tag is checked).
  GlobalAddress mine = base + 64 * id;
  for (int r = 0; r < rounds; ++r) {
    uint64_t line[8];
    for (int i = 0; i < 8; ++i) line[i] = (uint64_t{id} << 32) | static_cast<uint64_t>(r * 8 + i);
    Status ws = co_await c->write(mine, line, sizeof(line));
    if (!ws.ok()) errors->fetch_add(1);
    uint64_t back[8] = {}, other = 0;
    Batch b(*c);
    (void)b.read(mine, back, sizeof(back));
    (void)b.read(base + 64 * ((id + 1) % 16), &other, 8);
    Status s = co_await b.wait();
    if (!s.ok() || std::memcmp(back, line, sizeof(line)) != 0) errors->fetch_add(1);
    if (other != 0 && (other >> 32) != (id + 1) % 16) errors->fetch_add(1);
    uint64_t single = 0;
    Status rs = co_await c->read(mine + 8, &single, 8);
    if (!rs.ok() || single != line[1]) errors->fetch_add(1);
  }
}

// Many coroutines whose reads are deferred and interleaved still read exactly what was written.
TEST_P(DirectAccessTest, InterleavedDeferredReadsReturnTheirOwnData) {
  GlobalAddress base = alloc(64 * 16);
  std::vector<uint8_t> zeros(64 * 16, 0);
  ASSERT_TRUE(sync_wait(direct_->write(base, zeros.data(), zeros.size())).ok());
  std::atomic<int> errors{0};
  for (uint32_t k = 0; k < 16; ++k) {
    ASSERT_TRUE(direct_->scheduler().spawn(read_check_loop(direct_, base, k, 200, &errors)).ok());
  }
  direct_->scheduler().run_until_idle();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(direct_->counters().reads, 16u * 200 * 3);
  EXPECT_EQ(direct_->counters().writes, 16u * 200 + 1);
}

Task<void> faa_increments(ThreadClient* c, GlobalAddress a, int n, std::atomic<int>* errors) {
  for (int i = 0; i < n; ++i) {
    uint64_t old = 0;
    Status s = co_await c->faa(a, 1, &old);
    if (!s.ok()) errors->fetch_add(1);
  }
}

Task<void> cas_increments(ThreadClient* c, GlobalAddress a, int n, std::atomic<int>* errors) {
  for (int i = 0; i < n; ++i) {
    auto r = co_await c->atomic_update(a, [](uint64_t v) { return v + 1; });
    if (!r.ok()) errors->fetch_add(1);
  }
}

Task<void> batch_increments(ThreadClient* c, GlobalAddress faa_word, GlobalAddress cas_word, int n,
                            std::atomic<int>* errors) {
  // FAA and a single CAS attempt (from the value just read) in one batch; the CAS is retried
  // until it wins.
  for (int i = 0; i < n; ++i) {
    uint64_t current = 0;
    Status s = co_await c->read(cas_word, &current, 8);
    if (!s.ok()) errors->fetch_add(1);
    bool faa_done = false;
    for (;;) {
      Batch b(*c);
      uint64_t old = 0, found = 0;
      if (!faa_done) (void)b.faa(faa_word, 1, &old);
      (void)b.cas(cas_word, current, current + 1, &found);
      Status ws = co_await b.wait();
      if (!ws.ok()) {
        errors->fetch_add(1);
        co_return;
      }
      faa_done = true;
      if (found == current) break;
      current = found;
    }
  }
}

// A direct client and a UCX client (direct_access = false), on two threads, increment the same
// words with FAA and with CAS loops: no increment is lost, so the two kinds of atomics are atomic
// with respect to each other.
TEST_P(DirectAccessTest, DirectAndUcxAtomicsOnTheSameWordsLoseNoIncrement) {
  constexpr int kCoroutines = 8;
  const int kEach = shm() ? 2000 : 40;  // TCP CAS loops back off under contention: keep it short
  GlobalAddress words = alloc(64);
  GlobalAddress faa_word = words, cas_word = words + 8, batch_faa = words + 16,
                batch_cas = words + 24;
  std::vector<uint64_t> zeros(4, 0);
  ASSERT_TRUE(sync_wait(plain_->write(words, zeros.data(), 32)).ok());
  std::atomic<int> errors{0};
  std::atomic<int> connected{0};
  std::vector<std::thread> threads;
  for (Cluster* cl : {direct_cluster_.get(), plain_cluster_.get()}) {
    threads.emplace_back([&, cl] {
      auto tc = cl->thread_client();
      connected.fetch_add(1);
      ASSERT_TRUE(tc.ok());
      ThreadClient* c = *tc;
      while (connected.load() < 2) std::this_thread::yield();  // start together
      for (int k = 0; k < kCoroutines; ++k) {
        ASSERT_TRUE(c->scheduler().spawn(faa_increments(c, faa_word, kEach, &errors)).ok());
        ASSERT_TRUE(c->scheduler().spawn(cas_increments(c, cas_word, kEach, &errors)).ok());
        ASSERT_TRUE(
            c->scheduler().spawn(batch_increments(c, batch_faa, batch_cas, kEach, &errors)).ok());
      }
      c->scheduler().run_until_idle();
      cl->release_thread_client();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  uint64_t got[4] = {};
  ASSERT_TRUE(sync_wait(direct_->read(words, got, 32)).ok());
  const uint64_t want = 2ull * kCoroutines * kEach;
  EXPECT_EQ(got[0], want);
  EXPECT_EQ(got[1], want);
  EXPECT_EQ(got[2], want);
  EXPECT_EQ(got[3], want);
}

Task<Status> batch_with(ThreadClient* c, int which, GlobalAddress a) {
  Batch b(*c);
  uint64_t v = 0, old = 0;
  Status posted;
  switch (which) {
    case 0:
      posted = b.read(a, &v, 8);
      break;
    case 1:
      posted = b.write(a, &v, 8);
      break;
    case 2:
      posted = b.cas(a, 0, 1, &old);
      break;
    default:
      posted = b.faa(a, 1, &old);
      break;
  }
  Status waited = co_await b.wait();
  if (posted.code() != waited.code()) co_return Internal("posted and waited status differ");
  co_return waited;
}

// Bounds, alignment and reserved-header checks happen before the path is chosen: the same
// errors with and without direct access, for single operations and batches.
TEST_P(DirectAccessTest, AddressErrorsAreTheSameInDirectMode) {
  GlobalAddress a = alloc(64);
  const uint64_t region = direct_cluster_->nodes().front().region_bytes;
  struct Case {
    GlobalAddress addr;
    size_t bytes;
    bool read_only;  // reads of it are fine (the reserved header)
    StatusCode rw, atomic;
  };
  const std::vector<Case> cases = {
      {GlobalAddress(node_, region), 8, false, StatusCode::kOutOfRange, StatusCode::kOutOfRange},
      {GlobalAddress(node_, region - 4), 8, false, StatusCode::kOutOfRange,
       StatusCode::kOutOfRange},
      {GlobalAddress(node_ + 7, 4096), 8, false, StatusCode::kNotFound, StatusCode::kNotFound},
      {a + 4, 8, false, StatusCode::kOk, StatusCode::kInvalidArgument},
      {GlobalAddress(node_, 64), 8, true, StatusCode::kOutOfRange, StatusCode::kOutOfRange},
  };
  for (ThreadClient* c : {direct_, plain_}) {
    SCOPED_TRACE(c == direct_ ? "direct" : "plain");
    for (const Case& k : cases) {
      SCOPED_TRACE(k.addr.offset());
      uint64_t v = 0, old = 0;
      EXPECT_EQ(sync_wait(c->read(k.addr, &v, k.bytes)).code(),
                k.read_only ? StatusCode::kOk : k.rw);
      EXPECT_EQ(sync_wait(c->write(k.addr, &v, k.bytes)).code(), k.rw);
      EXPECT_EQ(sync_wait(c->cas(k.addr, 0, 1, &old)).code(), k.atomic);
      EXPECT_EQ(sync_wait(c->faa(k.addr, 1, &old)).code(), k.atomic);
      EXPECT_EQ(c->run(batch_with(c, 0, k.addr)).code(), k.read_only ? StatusCode::kOk : k.rw);
      EXPECT_EQ(c->run(batch_with(c, 1, k.addr)).code(), k.rw);
      EXPECT_EQ(c->run(batch_with(c, 2, k.addr)).code(), k.atomic);
      EXPECT_EQ(c->run(batch_with(c, 3, k.addr)).code(), k.atomic);
    }
    uint64_t v = 0;
    EXPECT_EQ(sync_wait(c->read(a, &v, 0)).code(), StatusCode::kInvalidArgument);
  }
  // The header is where the region starts: a read of its magic gives the same bytes either way.
  uint64_t magic_direct = 0, magic_plain = 0;
  ASSERT_TRUE(sync_wait(direct_->read(GlobalAddress(node_, 0), &magic_direct, 8)).ok());
  ASSERT_TRUE(sync_wait(plain_->read(GlobalAddress(node_, 0), &magic_plain, 8)).ok());
  EXPECT_EQ(magic_direct, magic_plain);
  EXPECT_NE(magic_direct, 0u);
}

Task<Status> wait_for(Batch* b) {
  Status s = co_await b->wait();
  co_return s;
}

// Spins on CAS without ever suspending (as a lock acquire without backoff would) until an
// operation fails or `max` attempts were made.
Task<Status> spin_cas(ThreadClient* c, GlobalAddress a, uint64_t max, uint64_t* attempts) {
  for (*attempts = 0; *attempts < max; ++*attempts) {
    uint64_t found = 0;
    Status s = co_await c->cas(a, 12345, 1, &found);
    if (!s.ok()) co_return s;
  }
  co_return OkStatus();
}

// A killed memory node ends direct access too: operations return kPeerFailed within the bound
// the UCX path has (not stale data from the still-mapped segment forever), including a read that
// was posted before the failure was noticed and performed after.
TEST_P(DirectAccessTest, KilledNodeGivesPeerFailureToDirectOperations) {
  auto cluster = connect(true, 2000);
  ASSERT_NE(cluster, nullptr);
  ThreadClient* tc = *cluster->thread_client();
  GlobalAddress a = alloc(64);
  uint64_t v = 1;
  ASSERT_TRUE(sync_wait(tc->write(a, &v, 8)).ok());
  ASSERT_EQ(tc->direct(node_), shm());

  Batch pending(*tc);
  uint64_t pending_value = 0;
  ASSERT_TRUE(pending.read(a, &pending_value, 8).ok());

  server_->signal(SIGKILL);
  // The loop bound is a hang guard: the door connection's EOF is noticed within a few
  // thousand operations.
  Status first_error;
  int ops = 0;
  for (; ops < 10'000'000 && first_error.ok(); ++ops) {
    uint64_t old = 0;
    if (ops % 2 == 0) {
      first_error = sync_wait(tc->read(a, &v, 8));
    } else {
      first_error = sync_wait(tc->faa(a, 1, &old));
    }
  }
  ASSERT_FALSE(first_error.ok()) << "no error after " << ops << " operations on a killed node";
  EXPECT_EQ(first_error.code(), StatusCode::kPeerFailed) << first_error.to_string();
  EXPECT_FALSE(tc->direct(node_));
  // Every later operation, direct-capable or not, fails with the same code.
  uint64_t old = 0;
  EXPECT_EQ(sync_wait(tc->read(a, &v, 8)).code(), StatusCode::kPeerFailed);
  EXPECT_EQ(sync_wait(tc->write(a, &v, 8)).code(), StatusCode::kPeerFailed);
  EXPECT_EQ(sync_wait(tc->cas(a, 0, 1, &old)).code(), StatusCode::kPeerFailed);
  EXPECT_EQ(sync_wait(tc->faa(a, 1, &old)).code(), StatusCode::kPeerFailed);
  // The read deferred before the failure is not performed from the dead node's segment.
  Status late = tc->run(wait_for(&pending));
  if (shm()) {
    EXPECT_EQ(late.code(), StatusCode::kPeerFailed) << late.to_string();
    EXPECT_EQ(pending_value, 0u);
  }
}

// A coroutine that never suspends (direct CAS completes at once) still learns that the node died:
// the client progresses its worker every ThreadClient::kOpsPerProgress operations.
TEST_P(DirectAccessTest, SpinningOnDirectCasNoticesAKilledNode) {
  GlobalAddress a = alloc(64);
  uint64_t zero = 0;
  ASSERT_TRUE(sync_wait(direct_->write(a, &zero, 8)).ok());
  uint64_t attempts = 0;
  ASSERT_TRUE(direct_->run(spin_cas(direct_, a, 100, &attempts)).ok());
  server_->signal(SIGKILL);
  // One run: without the periodic liveness check these 2^32 attempts (a minute or more) would
  // all succeed on the dead node's still-mapped segment.
  Status s = direct_->run(spin_cas(direct_, a, uint64_t{1} << 32, &attempts));
  ASSERT_FALSE(s.ok()) << attempts << " attempts";
  EXPECT_EQ(s.code(), StatusCode::kPeerFailed) << s.to_string();
}

Task<Status> spin_write(ThreadClient* c, GlobalAddress a, uint64_t max, uint64_t* attempts) {
  for (*attempts = 0; *attempts < max; ++*attempts) {
    Status s = co_await c->write(a, attempts, 8);
    if (!s.ok()) co_return s;
  }
  co_return OkStatus();
}

// The same with direct access off: on shared memory UCX completes each write (put and flush)
// inside the post, so this coroutine never suspends either, and still learns that the node died.
TEST_P(DirectAccessTest, SpinningOnUcxWritesNoticesAKilledNode) {
  GlobalAddress a = alloc(64);
  uint64_t attempts = 0;
  ASSERT_TRUE(plain_->run(spin_write(plain_, a, 100, &attempts)).ok());
  server_->signal(SIGKILL);
  Status s = plain_->run(spin_write(plain_, a, uint64_t{1} << 32, &attempts));
  ASSERT_FALSE(s.ok()) << attempts << " attempts";
  EXPECT_EQ(s.code(), StatusCode::kPeerFailed) << s.to_string();
}

struct MixedSeen {
  uint64_t r0 = 9, r1 = 9, cas0 = 9, cas1 = 9;
};

// x is on the direct node, y on the TCP node.
Task<Status> mixed_round(ThreadClient* c, GlobalAddress x, GlobalAddress y, MixedSeen* out) {
  Batch b(*c);
  uint64_t ten = 10, twenty = 20;
  FARMEM_CO_TRY(b.write(y, &twenty, 8));  // through UCX
  FARMEM_CO_TRY(b.write(x, &ten, 8));     // direct
  FARMEM_CO_TRY(b.fence());
  FARMEM_CO_TRY(b.cas(x + 8, 0, 1, &out->cas0));  // through UCX after the fence
  FARMEM_CO_TRY(b.cas(y + 8, 0, 2, &out->cas1));
  FARMEM_CO_TRY(b.read(x, &out->r0, 8));
  FARMEM_CO_TRY(b.read(y, &out->r1, 8));
  Status s = co_await b.wait();
  co_return s;
}

// A cluster with a node reached over shared memory and one reached over TCP only (its server
// runs with UCX_TLS=tcp): each node uses its own path, and a batch spanning both, with a fence,
// gives the right results. (With a TCP-only client both nodes go through UCX.)
TEST_P(DirectAccessTest, MixedClusterUsesTheDirectPathPerNode) {
  ServerOptions o;
  o.tls = "tcp";
  o.node_id = 1;
  auto tcp_server = ServerProcess::start(o);
  ASSERT_NE(tcp_server, nullptr);
  auto config = config_for({server_.get(), tcp_server.get()}, GetParam().tls);
  auto c = Cluster::connect(config);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ThreadClient* tc = *(*c)->thread_client();
  EXPECT_EQ(tc->direct(0), shm());
  EXPECT_FALSE(tc->direct(1));
  auto a0 = tc->run(tc->allocate_on(0, 64, 64));
  auto a1 = tc->run(tc->allocate_on(1, 64, 64));
  ASSERT_TRUE(a0.ok() && a1.ok());
  uint64_t zero[2] = {0, 0};
  ASSERT_TRUE(sync_wait(tc->write(*a0, zero, 16)).ok());
  ASSERT_TRUE(sync_wait(tc->write(*a1, zero, 16)).ok());
  MixedSeen seen;
  Status s = tc->run(mixed_round(tc, *a0, *a1, &seen));
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(seen.r0, 10u);
  EXPECT_EQ(seen.r1, 20u);
  EXPECT_EQ(seen.cas0, 0u);
  EXPECT_EQ(seen.cas1, 0u);
  uint64_t x[2] = {}, y[2] = {};
  ASSERT_TRUE(sync_wait(tc->read(*a0, x, 16)).ok());
  ASSERT_TRUE(sync_wait(tc->read(*a1, y, 16)).ok());
  EXPECT_EQ(x[1], 1u);
  EXPECT_EQ(y[1], 2u);
}

INSTANTIATE_TEST_SUITE_P(Transports, DirectAccessTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
