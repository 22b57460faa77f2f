// The harness every `farmem bench` command runs on: options, cluster, threads, timed run with
// warm-up and progress lines, per-operation-type latency histograms, seeds and the report.
//
// A benchmark's shape (src/bench/ops/ops_bench.cc is the smallest one):
//
//   Bench bench("ops", options.bench, {"read"});       // one histogram per operation type
//   if (int rc = bench.connect(local_bytes); rc != 0) return rc;
//   bench.start_threads(body);   // body(BenchThread&, ThreadClient*) on each of --threads threads
//   bench.wait_arrived();        // every body set up and called arrive_and_wait() (or failed)
//   bench.run_timed(progress);   // --warmup, then --duration measured; stops and joins
//   if (!bench.first_error().ok()) ...;  bench.ops(), bench.histogram(i), bench.seconds()
//   bench.finish_report(record);  // record from report_record(); appends to --out
//
// Contract:
//  * Stages. A body passes stages with BenchThread::arrive_and_wait(); the main thread waits for
//    all bodies with wait_arrived() and lets them on with release() (bench ycsb's load) or
//    run_timed() (the timed stage, always the last). A body that fails calls fail() and returns;
//    a returned body counts as arrived at every later stage. fail() or stop() stop the run:
//    arrive_and_wait() and running() then return false.
//  * Timed stage. Loops call running() before each operation, then completed() and, for the
//    operations they time, record(type, cycles) with cycles() (the TSC) around the operation.
//    Warm-up runs the loops for --warmup seconds; each thread discards its counts and histograms
//    at its first running() after measurement begins (and runs its on_measure() hook, for
//    counters of the benchmark's own). Operations in flight at the stop are counted when they
//    complete.
//  * Seeds. --seed (default kDefaultBenchSeed) is in the result line and the report; thread i
//    draws its randomness from BenchThread::rng() = workload::Rng::for_thread(seed, i).
//  * Output. Progress lines go to stderr once a second when --duration > 3 s; the result lines
//    are the benchmark's, ended by result_suffix(); finish_report() adds "seed" and "unix_time".
//
// Thread safety: Bench is used by the main thread; a BenchThread by its own thread, except that
// the main thread reads its operation count for progress lines. Results are read after the join.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "farmem/bench/harness/latency.h"
#include "farmem/bench/harness/local_node.h"
#include "farmem/bench/harness/options.h"
#include "farmem/bench/workload/rng.h"
#include "farmem/client/cluster.h"
#include "farmem/common/histogram.h"
#include "farmem/common/status.h"

namespace farmem::bench {

// How the progress lines of the timed stage read: "  [ 12.0s] <rate> <unit><extra>".
struct ProgressFormat {
  std::string unit = "ops/s";
  double scale = 1;  // rate shown = operations per second x scale ("Mops/s": 1e-6)
  int decimals = 0;
  uint32_t extra_every_s = 10;         // extra() is appended when the whole seconds elapsed
  std::function<std::string()> extra;  // are a multiple of this (optional)
};

// State shared by the main thread and the threads of one run.
struct alignas(64) BenchSignals {
  enum Phase : int { kIdle, kWarmup, kMeasure, kStop };
  std::atomic<int> phase{kIdle};
  std::atomic<uint32_t> released{0};  // stages the main thread has let the threads into
};

class alignas(64) BenchThread {
 public:
  uint32_t index() const { return index_; }
  uint64_t seed() const { return seed_; }
  // This thread's random stream: Rng::for_thread(--seed, index()).
  workload::Rng rng() const { return workload::Rng::for_thread(seed_, index_); }

  // Done with this stage; waits until the main thread releases the next. False when the run
  // is stopping: the body should clean up and return.
  bool arrive_and_wait();
  bool stopping() const {
    return signals_->phase.load(std::memory_order_relaxed) == BenchSignals::kStop;
  }
  // Keeps the first error and stops the run.
  void fail(const Status& s);
  const Status& error() const { return error_; }

  // Timed stage: true during warm-up and measurement, false once stopped.
  bool running() {
    const int p = signals_->phase.load(std::memory_order_relaxed);
    if (p == BenchSignals::kMeasure && !measuring_) [[unlikely]]
      begin_measurement();
    return p == BenchSignals::kWarmup || p == BenchSignals::kMeasure;
  }
  // One operation finished (throughput, progress lines).
  void completed() {
    ops_.store(ops_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Latency of one operation of type `type` (an index into the Bench's op_names), in cycles.
  void record(int type, uint64_t cycles) { hist_[type].record(cycles); }
  // Runs `fn` on this thread when it begins measuring (inside running()), e.g. to take a
  // baseline of counters of its own that warm-up must not count.
  void on_measure(std::function<void()> fn) { on_measure_ = std::move(fn); }

 private:
  friend class Bench;
  BenchThread(BenchSignals* signals, uint32_t index, uint64_t seed, size_t op_types);
  void begin_measurement();

  std::atomic<uint64_t> ops_{0};  // completed operations, warm-up included; single writer
  BenchSignals* signals_;
  uint32_t index_;
  uint64_t seed_;
  bool measuring_ = false;
  uint64_t ops_at_measure_ = 0;
  uint32_t stages_ = 0;               // arrive_and_wait calls so far
  std::atomic<uint32_t> arrived_{0};  // stages_ published to the main thread; kExited
  std::vector<Histogram> hist_;
  std::function<void()> on_measure_;
  Status error_;
  std::thread thread_;
};

class Bench {
 public:
  using ThreadBody = std::function<void(BenchThread&, client::ThreadClient*)>;

  // `name` as in "farmem bench <name>"; `op_names` names the operation types (one histogram
  // each per thread).
  Bench(std::string name, const BenchOptions& options, std::vector<std::string> op_names);
  ~Bench();  // stops and joins threads still running
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  const BenchOptions& options() const { return options_; }
  const std::vector<std::string>& op_names() const { return op_names_; }
  // Prints "farmem bench <name>: <message>" to stderr and returns rc.
  int fail(int rc, std::string_view message) const;

  // Resolves --servers/--config (else starts a local node of local_capacity_bytes), lets
  // `adjust` change the client options, connects. 0, or the error printed and 2 (flags) or 1.
  int connect(uint64_t local_capacity_bytes,
              const std::function<void(client::ClientOptions*)>& adjust = {});
  client::Cluster* cluster() const { return cluster_.get(); }
  const client::ClusterConfig& config() const { return config_; }
  bool local() const { return local_ != nullptr; }

  // Starts --threads threads; each gets its ThreadClient, runs `body`, releases the client.
  void start_threads(ThreadBody body);
  // Waits until every thread has arrived at its next stage or returned; meanwhile calls
  // on_period every period_ns (if given).
  void wait_arrived(uint64_t period_ns = 0, const std::function<void()>& on_period = {});
  void release();
  // The timed stage: warm-up, measurement with progress lines, stop, join. Returns seconds().
  double run_timed(const ProgressFormat& progress);
  void stop();
  void join();
  bool stopped() const;
  // The first thread's error, in thread order (after join).
  Status first_error() const;

  // Results of the measurement (after run_timed).
  double seconds() const { return (stop_ns_ - start_ns_) / 1e9; }
  uint64_t ops() const;
  Histogram histogram(int type) const;
  Histogram histogram_all() const;

  // " cluster=local" (when local) " seed=N": the end of a benchmark's result line.
  std::string result_suffix() const;
  // {"bench": name}, for the benchmark to fill.
  nlohmann::ordered_json report_record() const;
  // Adds "seed" and "unix_time" and appends the record to --out (if given). 0, or 1 printed.
  int finish_report(nlohmann::ordered_json record) const;

 private:
  void thread_main(BenchThread* t);
  uint64_t ops_now() const;
  void warm_up();
  void measure(const ProgressFormat& progress);
  void print_progress(const ProgressFormat& progress, uint64_t now, uint64_t* last_ops,
                      uint64_t* last_t) const;

  std::string name_;
  BenchOptions options_;
  std::vector<std::string> op_names_;
  std::unique_ptr<LocalNode> local_;  // outlives cluster_ (declared first)
  client::ClusterConfig config_;
  std::unique_ptr<client::Cluster> cluster_;
  BenchSignals signals_;
  ThreadBody body_;
  std::vector<std::unique_ptr<BenchThread>> threads_;
  uint64_t start_ns_ = 0;
  uint64_t stop_ns_ = 0;
};

}  // namespace farmem::bench
