// farmem bench ops: the op-rate benchmark (SMART's test_rdma).
//
// Each of --threads threads owns a private span of far memory on one memory node (thread t on
// node t mod N) and runs --depth coroutines; each coroutine issues one operation at a time at a
// uniformly random, block-aligned offset of the span, so each thread keeps --depth operations in
// flight (a sliding window, like ucx_perftest -O). Latency is measured per operation with the
// TSC. Prints one line; --out appends JSON or CSV.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>
#include <vector>

#include "commands.h"
#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/common/histogram.h"
#include "report.h"

namespace farmem::apps {
namespace {

using farmem::GlobalAddress;
using client::ThreadClient;
using runtime::Task;

enum class Op { kRead, kWrite, kCas, kFaa, kInc };
constexpr uint64_t kSampleEvery = 32;

struct Shared {
  Op op;
  uint64_t block_bytes;
  uint32_t depth;
  std::atomic<uint32_t> ready{0};
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
};

struct alignas(64) PerThread {
  std::atomic<uint64_t> ops{0};
  Histogram hist;
  Status error;
  GlobalAddress span{};
  uint64_t slots = 0;
  uint64_t retries = 0;  // CAS retries in atomic_update loops (op inc)
};

Task<void> issue_loop(ThreadClient* c, Shared* sh, PerThread* pt, uint32_t coro) {
  std::vector<uint8_t> buf(sh->block_bytes, static_cast<uint8_t>(coro));
  uint64_t rng = 0x9E3779B97F4A7C15ull * (coro + 1) + pt->span.offset();
  uint64_t n = coro;
  const uint64_t stride = sh->block_bytes;
  while (!sh->stop.load(std::memory_order_relaxed)) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    // Uniform slot without a divide (multiply-high).
    uint64_t slot = static_cast<uint64_t>((static_cast<unsigned __int128>(rng) * pt->slots) >> 64);
    GlobalAddress a = pt->span + slot * stride;
    uint64_t old = 0;
    // Latency is sampled on one operation in kSampleEvery: reading the TSC costs as much as a
    // shared-memory operation on some VMs.
    const bool sample = (++n & (kSampleEvery - 1)) == 0;
    uint64_t t0 = sample ? cycles() : 0;
    Status s;
    switch (sh->op) {
      case Op::kRead: s = co_await c->read(a, buf.data(), buf.size()); break;
      case Op::kWrite: s = co_await c->write(a, buf.data(), buf.size()); break;
      case Op::kCas: s = co_await c->cas(a, rng, rng + 1, &old); break;
      case Op::kFaa: s = co_await c->faa(a, 1, &old); break;
      case Op::kInc: {
        // A CAS retry loop (read, CAS, back off on conflict): the contended-update case.
        auto r = co_await c->atomic_update(a, [](uint64_t v) { return v + 1; });
        s = r.ok() ? OkStatus() : r.status();
        break;
      }
    }
    if (!s.ok()) {
      if (pt->error.ok()) pt->error = s;
      sh->stop.store(true);
      break;
    }
    if (sample) pt->hist.record(cycles() - t0);  // in TSC cycles; converted at the end
    // Single writer per thread; the main thread only reads (progress line).
    pt->ops.store(pt->ops.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

Task<void> setup_span(ThreadClient* c, uint16_t node, uint64_t bytes, PerThread* pt) {
  auto a = co_await c->allocate_on(node, bytes, 4096);
  if (!a.ok()) {
    pt->error = a.status();
    co_return;
  }
  pt->span = *a;
}

void thread_main(client::Cluster* cluster, Shared* sh, PerThread* pt, uint32_t t,
                 uint64_t span_bytes) {
  auto tcr = cluster->thread_client();
  if (!tcr.ok()) {
    pt->error = tcr.status();
    sh->ready.fetch_add(1);
    return;
  }
  ThreadClient* c = *tcr;
  const auto& nodes = cluster->nodes();
  uint16_t node = nodes[t % nodes.size()].node_id;
  c->run(setup_span(c, node, span_bytes, pt));
  uint64_t stride = sh->block_bytes;
  pt->slots = std::max<uint64_t>(1, span_bytes / stride);
  sh->ready.fetch_add(1);
  if (!pt->error.ok()) return;
  while (!sh->go.load()) std::this_thread::yield();
  for (uint32_t i = 0; i < sh->depth; ++i) {
    Status s = c->scheduler().spawn(issue_loop(c, sh, pt, i));
    if (!s.ok()) {
      pt->error = s;
      sh->stop.store(true);
      break;
    }
  }
  c->scheduler().run_until_idle();
  pt->retries = c->backoff_policy().retries();
  (void)c->run(c->free_on(pt->span));
  cluster->release_thread_client();
}

const char* op_name(Op op) {
  switch (op) {
    case Op::kRead: return "read";
    case Op::kWrite: return "write";
    case Op::kCas: return "cas";
    case Op::kFaa: return "faa";
    case Op::kInc: return "inc";
  }
  return "?";
}

}  // namespace

int run_bench_ops(const BenchOpsFlags& f) {
  Shared sh;
  sh.op = f.op == "read"    ? Op::kRead
          : f.op == "write" ? Op::kWrite
          : f.op == "cas"   ? Op::kCas
          : f.op == "faa"   ? Op::kFaa
                            : Op::kInc;
  const bool word_op = sh.op != Op::kRead && sh.op != Op::kWrite;
  sh.block_bytes = word_op ? 8 : f.block_bytes;
  sh.depth = f.depth;
  if (sh.block_bytes * f.depth > (1ull << 30)) {
    fmt::print(stderr, "farmem bench ops: --block-bytes x --depth exceeds 1 GiB of buffers\n");
    return 2;
  }
  uint64_t span = std::max<uint64_t>(f.span_bytes, sh.block_bytes);
  ClusterFlags cf = f.cluster;
  cf.local_capacity_bytes = span * f.threads + (256ull << 20);
  std::unique_ptr<LocalNode> local;
  auto config = resolve_cluster(cf, &local);
  if (!config.ok()) {
    fmt::print(stderr, "farmem bench ops: {}\n", config.status().to_string());
    return 2;
  }
  if (!f.throttle.empty()) config->options.throttle = runtime::parse_throttle_mode(f.throttle).value();
  if (!f.backoff.empty()) config->options.backoff = f.backoff == "on";
  if (!f.direct.empty()) config->options.direct_access = f.direct == "on";
  auto cluster = client::Cluster::connect(*config);
  if (!cluster.ok()) {
    fmt::print(stderr, "farmem bench ops: {}\n", cluster.status().to_string());
    return 1;
  }
  for (const auto& n : (*cluster)->nodes()) {
    span = std::min(span, std::max<uint64_t>(sh.block_bytes, n.region_bytes / (2 * f.threads)));
  }

  std::vector<PerThread> per(f.threads);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < f.threads; ++t) {
    threads.emplace_back(thread_main, cluster->get(), &sh, &per[t], t, span);
  }
  while (sh.ready.load() < f.threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  uint64_t start = now_ns();
  sh.go.store(true);
  const uint64_t end = start + static_cast<uint64_t>(f.duration_s * 1e9);
  uint64_t next_progress = start + 1'000'000'000ull;
  uint64_t last_ops = 0, last_t = start;
  while (!sh.stop.load() && now_ns() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    uint64_t now = now_ns();
    if (f.duration_s > 3 && now >= next_progress) {
      uint64_t total = 0;
      for (auto& p : per) total += p.ops.load(std::memory_order_relaxed);
      fmt::print(stderr, "  [{:5.1f}s] {:.3f} Mops/s\n", (now - start) / 1e9,
                 (total - last_ops) * 1e3 / static_cast<double>(now - last_t));
      last_ops = total;
      last_t = now;
      next_progress += 1'000'000'000ull;
    }
  }
  uint64_t stop_t = now_ns();
  sh.stop.store(true);
  for (auto& t : threads) t.join();
  double secs = (stop_t - start) / 1e9;

  Histogram hist;
  uint64_t ops = 0, retries = 0;
  for (auto& p : per) {
    retries += p.retries;
    if (!p.error.ok()) {
      fmt::print(stderr, "farmem bench ops: {}\n", p.error.to_string());
      return 1;
    }
    hist.merge(p.hist);
    ops += p.ops.load();
  }
  double mops = ops / secs / 1e6;
  double mbps = ops * static_cast<double>(sh.block_bytes) / secs / 1e6;
  const double us_per_cycle = 1.0 / (cycles_per_ns() * 1e3);
  double p50 = hist.quantile(0.50) * us_per_cycle, p99 = hist.quantile(0.99) * us_per_cycle;
  double p999 = hist.quantile(0.999) * us_per_cycle;
  std::string transport = (*cluster)->transports();
  std::string throttle = runtime::throttle_mode_name(config->options.throttle);
  fmt::print(
      "ops: op={} threads={} depth={} block={}B MB/s={:.2f} Mops/s={:.3f} p50={:.2f}us "
      "p99={:.2f}us connect={:.1f}ms span={}B transport={} throttle={} backoff={}{}\n",
      op_name(sh.op), f.threads, f.depth, sh.block_bytes, mbps, mops, p50, p99,
      (*cluster)->connect_ms(), span, transport, throttle, config->options.backoff ? "on" : "off",
      local ? " cluster=local" : "");
  if (!f.out.empty()) {
    nlohmann::ordered_json r;
    r["bench"] = "ops";
    r["op"] = op_name(sh.op);
    r["threads"] = f.threads;
    r["depth"] = f.depth;
    r["block_bytes"] = sh.block_bytes;
    r["duration_s"] = secs;
    r["ops"] = ops;
    r["mops"] = mops;
    r["mb_per_s"] = mbps;
    r["p50_us"] = p50;
    r["p99_us"] = p99;
    r["p999_us"] = p999;
    r["mean_us"] = hist.mean() * us_per_cycle;
    r["latency_samples"] = hist.count();
    r["connect_ms"] = (*cluster)->connect_ms();
    r["transport"] = transport;
    r["throttle"] = throttle;
    r["backoff"] = config->options.backoff;
    r["cas_retries"] = retries;
    r["span_bytes"] = span;
    r["cluster"] = local ? "local" : "remote";
    r["unix_time"] = static_cast<int64_t>(std::time(nullptr));
    Status s = append_report(f.out, r);
    if (!s.ok()) {
      fmt::print(stderr, "farmem bench ops: {}\n", s.to_string());
      return 1;
    }
  }
  return 0;
}

}  // namespace farmem::apps
