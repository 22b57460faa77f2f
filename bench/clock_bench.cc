// Micro-benchmarks of the time source on the data path: now_ns() without and with a virtual
// clock, cycles(), and the scheduler rounds that read the clock (an idle poll reads it every
// round, a busy one every time_check_interval rounds). Built as farmem_clock_bench; not run by
// ctest.
//
//   build/bench/farmem_clock_bench --benchmark_repetitions=10 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "farmem/common/clock.h"
#include "farmem/common/virtual_clock.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/task.h"

namespace farmem {
namespace {

// The reference: std::chrono::steady_clock read directly.
void BM_SteadyClockNow(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  }
}
BENCHMARK(BM_SteadyClockNow);

// farmem::now_ns() on a thread without a virtual clock (the production path).
void BM_NowNs(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(now_ns());
  }
}
BENCHMARK(BM_NowNs);

// now_ns() on a thread with a VirtualClock installed (the test path).
void BM_NowNsVirtual(benchmark::State& state) {
  VirtualClock clock(VirtualClock::Mode::kManual);
  ScopedVirtualClock use(clock);
  for (auto _ : state) {
    benchmark::DoNotOptimize(now_ns());
  }
}
BENCHMARK(BM_NowNsVirtual);

void BM_Cycles(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(cycles());
  }
}
BENCHMARK(BM_Cycles);

// One idle scheduler round: nothing ready, no workers; reads the clock every round.
void BM_SchedulerIdlePoll(benchmark::State& state) {
  runtime::Scheduler s;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.poll_once());
  }
}
BENCHMARK(BM_SchedulerIdlePoll);

runtime::Task<void> YieldUntilStopped(runtime::Scheduler* s, const bool* stop) {
  while (!*stop) co_await s->yield();
}

// One busy scheduler round: a single coroutine that yields; the clock is read every
// time_check_interval (16) rounds.
void BM_SchedulerYieldRound(benchmark::State& state) {
  runtime::Scheduler s;
  bool stop = false;
  if (!s.spawn(YieldUntilStopped(&s, &stop)).ok()) {
    state.SkipWithError("spawn failed");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.poll_once());
  }
  stop = true;
  s.run_until_idle();
}
BENCHMARK(BM_SchedulerYieldRound);

}  // namespace
}  // namespace farmem

BENCHMARK_MAIN();
