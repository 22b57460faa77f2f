#include "farmem/bench/harness/bench.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <limits>

#include "farmem/bench/harness/cluster.h"
#include "farmem/bench/harness/report.h"
#include "farmem/common/clock.h"

namespace farmem::bench {
namespace {

constexpr uint32_t kExited = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kSecondNs = 1'000'000'000ull;

}  // namespace

// ---- BenchThread

BenchThread::BenchThread(BenchSignals* signals, uint32_t index, uint64_t seed, size_t op_types)
    : signals_(signals), index_(index), seed_(seed), hist_(op_types) {}

bool BenchThread::arrive_and_wait() {
  arrived_.store(++stages_, std::memory_order_release);
  while (signals_->released.load(std::memory_order_acquire) < stages_ && !stopping()) {
    std::this_thread::yield();
  }
  return !stopping();
}

void BenchThread::fail(const Status& s) {
  if (error_.ok()) error_ = s;
  signals_->phase.store(BenchSignals::kStop);
}

void BenchThread::begin_measurement() {
  measuring_ = true;
  ops_at_measure_ = ops_.load(std::memory_order_relaxed);
  for (Histogram& h : hist_) h.reset();
  if (on_measure_) on_measure_();
}

// ---- Bench: set-up

Bench::Bench(std::string name, const BenchOptions& options, std::vector<std::string> op_names)
    : name_(std::move(name)), options_(options), op_names_(std::move(op_names)) {}

Bench::~Bench() {
  stop();
  join();
}

int Bench::fail(int rc, std::string_view message) const {
  fmt::print(stderr, "farmem bench {}: {}\n", name_, message);
  return rc;
}

int Bench::connect(uint64_t local_capacity_bytes,
                   const std::function<void(client::ClientOptions*)>& adjust) {
  ClusterOptions cf = options_.cluster;
  cf.local_capacity_bytes = local_capacity_bytes;
  auto config = resolve_cluster(cf, &local_);
  if (!config.ok()) return fail(2, config.status().to_string());
  config_ = std::move(*config);
  if (adjust) adjust(&config_.options);
  auto cluster = client::Cluster::connect(config_);
  if (!cluster.ok()) return fail(1, cluster.status().to_string());
  cluster_ = std::move(*cluster);
  return 0;
}

// ---- Bench: threads and stages

void Bench::start_threads(ThreadBody body) {
  body_ = std::move(body);
  for (uint32_t i = 0; i < options_.threads; ++i) {
    threads_.push_back(std::unique_ptr<BenchThread>(
        new BenchThread(&signals_, i, options_.seed, op_names_.size())));
  }
  for (auto& t : threads_) t->thread_ = std::thread(&Bench::thread_main, this, t.get());
}

void Bench::thread_main(BenchThread* t) {
  auto tc = cluster_->thread_client();
  if (!tc.ok()) {
    t->fail(tc.status());
  } else {
    body_(*t, *tc);
    cluster_->release_thread_client();
  }
  t->arrived_.store(kExited, std::memory_order_release);
}

void Bench::wait_arrived(uint64_t period_ns, const std::function<void()>& on_period) {
  const uint32_t stage = signals_.released.load() + 1;
  uint64_t next = now_ns() + period_ns;
  for (const auto& t : threads_) {
    while (t->arrived_.load(std::memory_order_acquire) < stage) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (period_ns != 0 && on_period && now_ns() >= next) {
        on_period();
        next += period_ns;
      }
    }
  }
}

void Bench::release() { signals_.released.fetch_add(1, std::memory_order_release); }

void Bench::stop() { signals_.phase.store(BenchSignals::kStop); }

bool Bench::stopped() const { return signals_.phase.load() == BenchSignals::kStop; }

void Bench::join() {
  for (auto& t : threads_) {
    if (t->thread_.joinable()) t->thread_.join();
  }
}

Status Bench::first_error() const {
  for (const auto& t : threads_) {
    if (!t->error_.ok()) return t->error_;
  }
  return OkStatus();
}

// ---- Bench: the timed stage

double Bench::run_timed(const ProgressFormat& progress) {
  if (options_.warmup_s > 0) warm_up();
  measure(progress);
  stop_ns_ = now_ns();
  stop();
  join();
  return seconds();
}

// Releases the threads into the timed stage in the warm-up phase and waits it out.
void Bench::warm_up() {
  int idle = BenchSignals::kIdle;
  if (!signals_.phase.compare_exchange_strong(idle, BenchSignals::kWarmup)) return;
  fmt::print(stderr, "  [warmup] {:.1f} s, not measured\n", options_.warmup_s);
  const uint64_t end = now_ns() + static_cast<uint64_t>(options_.warmup_s * 1e9);
  release();
  while (!stopped() && now_ns() < end) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// Measures for --duration seconds (releasing the threads if warm-up did not), with a progress
// line a second on runs longer than 3 s.
void Bench::measure(const ProgressFormat& progress) {
  int phase = signals_.phase.load();
  const bool warmed = phase == BenchSignals::kWarmup;
  start_ns_ = now_ns();
  if (phase == BenchSignals::kStop ||
      !signals_.phase.compare_exchange_strong(phase, BenchSignals::kMeasure)) {
    return;
  }
  if (!warmed) release();
  const uint64_t end = start_ns_ + static_cast<uint64_t>(options_.duration_s * 1e9);
  uint64_t next_progress = start_ns_ + kSecondNs;
  uint64_t last_ops = ops_now(), last_t = start_ns_;
  while (!stopped() && now_ns() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const uint64_t now = now_ns();
    if (options_.duration_s > 3 && now >= next_progress) {
      print_progress(progress, now, &last_ops, &last_t);
      next_progress += kSecondNs;
    }
  }
}

void Bench::print_progress(const ProgressFormat& progress, uint64_t now, uint64_t* last_ops,
                           uint64_t* last_t) const {
  const uint64_t total = ops_now();
  const double elapsed_s = (now - start_ns_) / 1e9;
  const double rate = (total - *last_ops) * 1e9 / static_cast<double>(now - *last_t);
  std::string extra;
  if (progress.extra && progress.extra_every_s != 0 &&
      static_cast<uint64_t>(elapsed_s) % progress.extra_every_s == 0) {
    extra = progress.extra();
  }
  fmt::print(stderr, "  [{:5.1f}s] {:.{}f} {}{}\n", elapsed_s, rate * progress.scale,
             progress.decimals, progress.unit, extra);
  *last_ops = total;
  *last_t = now;
}

uint64_t Bench::ops_now() const {
  uint64_t total = 0;
  for (const auto& t : threads_) total += t->ops_.load(std::memory_order_relaxed);
  return total;
}

// ---- Bench: results

// A thread that never saw the measurement begin (it stopped first, or was stuck in operations
// throughout) contributes nothing: whatever it counted was warm-up.
uint64_t Bench::ops() const {
  uint64_t total = 0;
  for (const auto& t : threads_) {
    if (t->measuring_) total += t->ops_.load() - t->ops_at_measure_;
  }
  return total;
}

Histogram Bench::histogram(int type) const {
  Histogram h;
  for (const auto& t : threads_) {
    if (t->measuring_) h.merge(t->hist_[type]);
  }
  return h;
}

Histogram Bench::histogram_all() const {
  Histogram h;
  for (size_t i = 0; i < op_names_.size(); ++i) h.merge(histogram(static_cast<int>(i)));
  return h;
}

std::string Bench::result_suffix() const {
  return fmt::format("{} seed={}", local() ? " cluster=local" : "", options_.seed);
}

nlohmann::ordered_json Bench::report_record() const {
  nlohmann::ordered_json r;
  r["bench"] = name_;
  return r;
}

int Bench::finish_report(nlohmann::ordered_json record) const {
  if (options_.out.empty()) return 0;
  record["seed"] = options_.seed;
  record["unix_time"] = static_cast<int64_t>(std::time(nullptr));
  Status s = append_report(options_.out, record);
  return s.ok() ? 0 : fail(1, s.to_string());
}

}  // namespace farmem::bench
