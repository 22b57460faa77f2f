// Unit tests for VirtualClock and ScopedVirtualClock: what now_ns() returns with and without a
// clock installed, explicit advancing, nesting and uninstalling, and per-thread isolation. The
// scheduler's auto-advance is tested in scheduler_test.cc.
#include "farmem/common/virtual_clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <thread>

#include "farmem/common/clock.h"

namespace farmem {
namespace {

constexpr VirtualClock::Mode kManual = VirtualClock::Mode::kManual;

// now_ns() read between two reads of the real clock lies between them (the steady clock never
// goes backwards), which tells the real clock from a virtual one without measuring a duration.
bool NowNsIsTheRealClock() {
  const uint64_t before = steady_now_ns();
  const uint64_t t = now_ns();
  const uint64_t after = steady_now_ns();
  return before <= t && t <= after;
}

TEST(VirtualClockTest, WithoutAClockNowNsIsTheSteadyClock) {
  EXPECT_EQ(VirtualClock::current(), nullptr);
  EXPECT_TRUE(NowNsIsTheRealClock());
}

TEST(VirtualClockTest, InstalledClockIsWhatNowNsReturns) {
  VirtualClock clock(kManual);
  EXPECT_EQ(clock.now_ns(), VirtualClock::kDefaultStartNs);
  {
    ScopedVirtualClock use(clock);
    EXPECT_EQ(VirtualClock::current(), &clock);
    EXPECT_EQ(now_ns(), VirtualClock::kDefaultStartNs);
    EXPECT_EQ(now_ns(), VirtualClock::kDefaultStartNs);  // it does not move by itself
  }
  EXPECT_EQ(VirtualClock::current(), nullptr);
  EXPECT_TRUE(NowNsIsTheRealClock());
}

TEST(VirtualClockTest, StartsWhereTold) {
  VirtualClock clock(kManual, 42);
  ScopedVirtualClock use(clock);
  EXPECT_EQ(now_ns(), 42u);
}

TEST(VirtualClockTest, AdvanceAndAdvanceToMoveTimeForwardOnly) {
  VirtualClock clock(kManual, 1000);
  ScopedVirtualClock use(clock);
  clock.advance(5);
  EXPECT_EQ(now_ns(), 1005u);
  clock.advance(0);
  EXPECT_EQ(now_ns(), 1005u);
  clock.advance_to(2000);
  EXPECT_EQ(now_ns(), 2000u);
  clock.advance_to(1500);  // the past: no effect
  EXPECT_EQ(now_ns(), 2000u);
  clock.advance_to(2000);
  EXPECT_EQ(now_ns(), 2000u);
  EXPECT_EQ(clock.auto_advances(), 0u);  // explicit advances are not counted
}

TEST(VirtualClockTest, AutoAdvanceToMovesForwardAndCountsOnlyRealMoves) {
  VirtualClock clock(VirtualClock::Mode::kAutoAdvance, 1000);
  EXPECT_EQ(clock.mode(), VirtualClock::Mode::kAutoAdvance);
  clock.auto_advance_to(900);
  clock.auto_advance_to(1000);
  EXPECT_EQ(clock.now_ns(), 1000u);
  EXPECT_EQ(clock.auto_advances(), 0u);
  clock.auto_advance_to(1001);
  EXPECT_EQ(clock.now_ns(), 1001u);
  EXPECT_EQ(clock.auto_advances(), 1u);
  clock.set_mode(kManual);
  EXPECT_EQ(clock.mode(), kManual);
}

TEST(VirtualClockTest, GuardsNestAndRestoreThePreviousClock) {
  VirtualClock outer(kManual, 100), inner(kManual, 200);
  {
    ScopedVirtualClock use_outer(outer);
    EXPECT_EQ(now_ns(), 100u);
    {
      ScopedVirtualClock use_inner(inner);
      EXPECT_EQ(VirtualClock::current(), &inner);
      EXPECT_EQ(now_ns(), 200u);
      outer.advance(1);  // an outer clock can still be advanced; the inner one is read
      EXPECT_EQ(now_ns(), 200u);
      {
        ScopedVirtualClock outer_again(outer);  // the same clock twice is fine
        EXPECT_EQ(now_ns(), 101u);
      }
      EXPECT_EQ(now_ns(), 200u);
    }
    EXPECT_EQ(VirtualClock::current(), &outer);
    EXPECT_EQ(now_ns(), 101u);
  }
  EXPECT_EQ(VirtualClock::current(), nullptr);
  EXPECT_TRUE(NowNsIsTheRealClock());
}

TEST(VirtualClockTest, AClockIsInstalledOnlyOnItsOwnThread) {
  VirtualClock main_clock(kManual, 7);
  ScopedVirtualClock use(main_clock);
  bool other_saw_no_clock = false, other_saw_real_time = false, other_after_uninstall_ok = false;
  uint64_t other_virtual = 0;
  std::thread other([&] {
    other_saw_no_clock = VirtualClock::current() == nullptr;
    other_saw_real_time = NowNsIsTheRealClock();
    VirtualClock own(kManual, 1'000);
    {
      ScopedVirtualClock use_own(own);
      own.advance(234);
      other_virtual = now_ns();
    }
    other_after_uninstall_ok = VirtualClock::current() == nullptr && NowNsIsTheRealClock();
  });
  other.join();
  EXPECT_TRUE(other_saw_no_clock);
  EXPECT_TRUE(other_saw_real_time);
  EXPECT_EQ(other_virtual, 1'234u);
  EXPECT_TRUE(other_after_uninstall_ok);
  // The other thread's clock never touched this thread's.
  EXPECT_EQ(VirtualClock::current(), &main_clock);
  EXPECT_EQ(now_ns(), 7u);
}

// The TSC rate is calibrated against the real clock even when the first caller's thread has a
// virtual one (calibrated on a clock that stands still, it would be infinite). Run alone, as
// ctest does, this test makes the process's first call.
TEST(VirtualClockTest, CyclesAndTheirRateStayReal) {
  VirtualClock clock(kManual);
  ScopedVirtualClock use(clock);
  const double rate = cycles_per_ns();
  EXPECT_TRUE(std::isfinite(rate));
  EXPECT_GT(rate, 0.01);  // 10 MHz .. 100 GHz: any real TSC
  EXPECT_LT(rate, 100.0);
  const uint64_t c0 = cycles();
  clock.advance(1'000'000'000);
  EXPECT_GE(cycles(), c0);  // the TSC is not the virtual clock
  EXPECT_EQ(cycles_per_ns(), rate);
}

TEST(VirtualClockTest, SteadyNowNsIgnoresTheVirtualClock) {
  VirtualClock clock(kManual, 5);
  ScopedVirtualClock use(clock);
  const uint64_t a = steady_now_ns();
  const uint64_t b = steady_now_ns();
  EXPECT_LE(a, b);
  EXPECT_NE(a, 5u);
  EXPECT_EQ(now_ns(), 5u);
}

}  // namespace
}  // namespace farmem
