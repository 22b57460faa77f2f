#include "farmem/memnode/idle_spin.h"

#include <gtest/gtest.h>

namespace farmem::memnode {
namespace {

TEST(IdleSpinTest, WastedSpinsShrinkTheWindowAndProductiveOnesGrowIt) {
  IdleSpin spin(200'000);
  EXPECT_EQ(spin.window_ns(), 200'000u);
  uint64_t now = IdleSpin::kReprobeNs;  // the first wasted spin re-probes (window stays max)
  spin.wasted(now);
  EXPECT_EQ(spin.window_ns(), 200'000u);
  spin.wasted(now + 1);
  EXPECT_EQ(spin.window_ns(), 100'000u);
  for (int i = 0; i < 30; ++i) spin.wasted(now + 2);
  EXPECT_EQ(spin.window_ns(), 0u);  // a loaded machine: sleep at once
  spin.productive();
  EXPECT_EQ(spin.window_ns(), IdleSpin::kMinNs);
  spin.productive();
  EXPECT_EQ(spin.window_ns(), 2 * IdleSpin::kMinNs);
  for (int i = 0; i < 30; ++i) spin.productive();
  EXPECT_EQ(spin.window_ns(), 200'000u);  // never beyond idle_spin_us
}

TEST(IdleSpinTest, TheWindowIsReprobedAtItsMaximumAfterAWhile) {
  IdleSpin spin(200'000);
  const uint64_t t0 = IdleSpin::kReprobeNs;
  spin.wasted(t0);
  for (int i = 0; i < 30; ++i) spin.wasted(t0 + 1);
  EXPECT_EQ(spin.window_ns(), 0u);
  spin.wasted(t0 + IdleSpin::kReprobeNs - 1);
  EXPECT_EQ(spin.window_ns(), 0u);
  spin.wasted(t0 + IdleSpin::kReprobeNs);
  EXPECT_EQ(spin.window_ns(), 200'000u);
}

TEST(IdleSpinTest, ZeroMaximumNeverSpins) {
  IdleSpin spin(0);
  spin.productive();
  EXPECT_EQ(spin.window_ns(), 0u);
  spin.wasted(IdleSpin::kReprobeNs);
  EXPECT_EQ(spin.window_ns(), 0u);
}

}  // namespace
}  // namespace farmem::memnode
