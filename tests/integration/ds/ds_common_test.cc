// The ds toolkit against a real memory node (ds/common): named-object lifetimes (FarObject),
// object-owned allocation (ObjectHeap), deferred reuse (Reclaimer, on a virtual clock) and lease
// locks held by sessions (LeaseLock). Memory is checked through the node's own statistics.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "farmem/common/virtual_clock.h"
#include "farmem/ds/common/far_object.h"
#include "farmem/ds/common/lease_lock.h"
#include "farmem/ds/common/object_heap.h"
#include "farmem/ds/common/reclaimer.h"
#include "farmem/runtime/scheduler.h"
#include "harness.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Cluster;
using client::ThreadClient;
using ds::FarObject;
using ds::LeaseLock;
using ds::ObjectHeap;
using ds::Reclaimer;

class DsCommonTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.tls = GetParam().tls;
    o.node_id = 4;
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    main_ = connect();
    ASSERT_NE(main_, nullptr);
    c_ = *main_->thread_client();
    baseline_ = usage(c_);
  }
  std::unique_ptr<Cluster> connect() {
    auto c = Cluster::connect(config_for({server_.get()}, GetParam().tls));
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(*c) : nullptr;
  }
  // (used bytes, allocations, objects) once the node has settled (sessions end asynchronously).
  std::tuple<uint64_t, uint64_t, uint64_t> usage(ThreadClient* c) {
    auto st = c->run(c->stats(4));
    EXPECT_TRUE(st.ok());
    return {st->used_bytes, st->allocations, st->objects};
  }
  std::tuple<uint64_t, uint64_t, uint64_t> usage_when(
      ThreadClient* c, std::tuple<uint64_t, uint64_t, uint64_t> want) {
    auto got = usage(c);
    for (int i = 0; i < 2000 && got != want; ++i) {  // hang guard
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      got = usage(c);
    }
    return got;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Cluster> main_;
  ThreadClient* c_ = nullptr;
  std::tuple<uint64_t, uint64_t, uint64_t> baseline_;
};

TEST_P(DsCommonTest, AnUncommittedObjectDiesWithItsCreatorsSession) {
  {
    auto other = connect();
    ThreadClient* oc = *other->thread_client();
    auto obj = oc->run(FarObject::create(oc, "scratch", /*temporary=*/false));
    ASSERT_TRUE(obj.ok()) << obj.status().to_string();
    ObjectHeap heap(oc, &*obj, 1 << 20);
    ASSERT_TRUE(oc->run(heap.allocate(4, 64)).ok());
    ASSERT_TRUE(oc->run(heap.allocate(4, 1 << 20)).ok());
    EXPECT_EQ(std::get<2>(usage(oc)), 1u);
  }  // never committed: the creator's session ends and takes it along
  EXPECT_EQ(usage_when(c_, baseline_), baseline_);
  EXPECT_EQ(c_->run(FarObject::open(c_, "scratch")).status().code(), StatusCode::kNotFound);
}

TEST_P(DsCommonTest, ACommittedObjectOutlivesItsCreatorUntilDestroyed) {
  GlobalAddress small, large;
  {
    auto other = connect();
    ThreadClient* oc = *other->thread_client();
    auto obj = oc->run(FarObject::create(oc, "kept", false));
    ASSERT_TRUE(obj.ok());
    ObjectHeap heap(oc, &*obj, 1 << 20);
    auto a = oc->run(heap.allocate(4, 64));
    auto b = oc->run(heap.allocate(4, 1 << 20));
    ASSERT_TRUE(a.ok() && b.ok());
    small = *a;
    large = *b;
    const uint64_t marker = 0xC0FFEE;
    ASSERT_TRUE(sync_wait(oc->write(small, &marker, 8)).ok());
    ASSERT_TRUE(oc->run(obj->commit(oc, small)).ok());
  }
  // The creator is gone; the object, its root and its memory stay.
  auto root = c_->run(c_->lookup_root("kept"));
  ASSERT_TRUE(root.ok()) << root.status().to_string();
  EXPECT_EQ(*root, small);
  uint64_t v = 0;
  ASSERT_TRUE(sync_wait(c_->read(small, &v, 8)).ok());
  EXPECT_EQ(v, 0xC0FFEEu);
  EXPECT_NE(usage(c_), baseline_);
  // Another session may free the object's memory (objects are shared), then destroy it all.
  EXPECT_TRUE(c_->run(c_->free_on(large)).ok());
  auto obj = c_->run(FarObject::open(c_, "kept"));
  ASSERT_TRUE(obj.ok());
  ASSERT_TRUE(c_->run(obj->destroy(c_)).ok());
  EXPECT_EQ(usage_when(c_, baseline_), baseline_);
  EXPECT_EQ(c_->run(c_->lookup_root("kept")).status().code(), StatusCode::kNotFound);
}

TEST_P(DsCommonTest, NamesAreUniqueAndATemporaryObjectLivesWithItsCreator) {
  auto obj = c_->run(FarObject::create(c_, "temp", /*temporary=*/true));
  ASSERT_TRUE(obj.ok());
  EXPECT_EQ(c_->run(FarObject::create(c_, "temp", false)).status().code(),
            StatusCode::kAlreadyExists);
  ASSERT_TRUE(c_->run(obj->commit(c_, GlobalAddress(4, 4096))).ok());  // root, not persisted
  main_.reset();                                                       // the creator's sessions end
  auto fresh = connect();
  ThreadClient* fc = *fresh->thread_client();
  EXPECT_EQ(usage_when(fc, baseline_), baseline_);
  EXPECT_EQ(fc->run(fc->lookup_root("temp")).status().code(), StatusCode::kNotFound);
}

TEST_P(DsCommonTest, ASessionMayNotFreeAnotherSessionsMemory) {
  auto mine = c_->run(c_->allocate_on(4, 1 << 16));
  ASSERT_TRUE(mine.ok());
  auto other = connect();
  ThreadClient* oc = *other->thread_client();
  Status s = oc->run(oc->free_on(*mine));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("another client session"), std::string_view::npos);
  EXPECT_TRUE(c_->run(c_->free_on(*mine)).ok());
}

TEST_P(DsCommonTest, RetiredBlocksAreReusedOnlyAfterTheGracePeriod) {
  auto obj = c_->run(FarObject::create(c_, "recl", true));
  ASSERT_TRUE(obj.ok());
  ObjectHeap heap(c_, &*obj, 1 << 20);
  VirtualClock clock(VirtualClock::Mode::kManual, steady_now_ns());
  ScopedVirtualClock guard(clock);
  constexpr uint64_t kGrace = 5'000'000'000;
  Reclaimer r(c_, &heap, kGrace, 1024);
  auto a = c_->run(heap.allocate(4, 64));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(c_->run(r.retire(*a, 64)).ok());
  c_->run(r.reclaim(false));
  EXPECT_EQ(r.stats().reclaimed, 0u);  // not yet: a reader may still hold it
  auto b = c_->run(heap.allocate(4, 64));
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*b, *a);
  clock.advance(kGrace);
  c_->run(r.reclaim(false));
  EXPECT_EQ(r.stats().reclaimed, 1u);
  auto again = c_->run(heap.allocate(4, 64));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *a);  // reused from the handle's free list
  ASSERT_TRUE(c_->run(obj->destroy(c_)).ok());
}

TEST_P(DsCommonTest, ALeaseLockIsTakenOverOnlyFromAnEndedSession) {
  auto word = c_->run(c_->allocate_on(4, 64));
  ASSERT_TRUE(word.ok());
  uint64_t zero = 0;
  ASSERT_TRUE(sync_wait(c_->write(*word, &zero, 8)).ok());
  uint64_t holder = 0;
  {
    auto other = connect();
    ThreadClient* oc = *other->thread_client();
    LeaseLock theirs(oc, *word, 0);
    auto a = oc->run(theirs.try_acquire());
    ASSERT_TRUE(a.ok() && a->acquired && !a->taken_over);
    holder = theirs.me();
    LeaseLock mine(c_, *word, 0);
    auto b = c_->run(mine.try_acquire());
    ASSERT_TRUE(b.ok());
    EXPECT_FALSE(b->acquired);  // a live holder keeps it
    EXPECT_EQ(b->holder, holder);
  }  // the holder's session ends
  LeaseLock mine(c_, *word, 0);
  std::optional<LeaseLock::Attempt> got;
  for (int i = 0; i < 2000 && !(got && got->acquired); ++i) {  // the node notices at once-ish
    auto b = c_->run(mine.try_acquire());
    ASSERT_TRUE(b.ok());
    got = *b;
    if (!got->acquired) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(got && got->acquired);
  EXPECT_TRUE(got->taken_over);
  EXPECT_TRUE(c_->run(mine.release()).ok());
  EXPECT_EQ(c_->run(mine.release()).code(), StatusCode::kInternal);  // no longer ours
  ASSERT_TRUE(c_->run(c_->free_on(*word)).ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, DsCommonTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
