// farmem bench ops: the op-rate benchmark (SMART's test_rdma; farmem/bench/ops.h).
//
// Each of --threads threads owns a private span of far memory on one memory node (thread t on
// node t mod N) and runs --depth coroutines; each coroutine issues one operation at a time at a
// uniformly random, block-aligned offset of the span, so each thread keeps --depth operations in
// flight (a sliding window, like ucx_perftest -O). Latency is measured per operation with the
// TSC. Offsets come from --seed (each coroutine's xorshift state is drawn from its thread's
// stream). Prints one line; --out appends JSON or CSV. Runs on the harness (harness/bench.h).
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "farmem/bench/harness/bench.h"
#include "farmem/bench/harness/latency.h"
#include "farmem/bench/ops.h"
#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"

namespace farmem::bench {
namespace {

using client::ThreadClient;
using farmem::GlobalAddress;
using runtime::Task;

using Op = OneSidedOp;
constexpr uint64_t kSampleEvery = 32;

struct OpsShared {
  Op op;
  uint64_t block_bytes;
  uint32_t depth;
  uint64_t span_bytes;  // per thread
};

// What a thread keeps beside the harness's counts.
struct alignas(64) OpsThread {
  GlobalAddress span{};
  uint64_t slots = 0;
  uint64_t retries_base = 0;  // the thread's CAS retries when the measurement began
  uint64_t retries = 0;       // CAS retries in atomic_update loops (op inc), measurement only
};

Task<void> issue_loop(ThreadClient* c, const OpsShared* sh, BenchThread* th, OpsThread* pt,
                      uint32_t coro, uint64_t seed) {
  std::vector<uint8_t> buf(sh->block_bytes, static_cast<uint8_t>(coro));
  uint64_t rng = seed | 1;  // xorshift64: any non-zero state
  uint64_t n = coro;
  const uint64_t stride = sh->block_bytes;
  while (th->running()) {
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
      case Op::kRead:
        s = co_await c->read(a, buf.data(), buf.size());
        break;
      case Op::kWrite:
        s = co_await c->write(a, buf.data(), buf.size());
        break;
      case Op::kCas:
        s = co_await c->cas(a, rng, rng + 1, &old);
        break;
      case Op::kFaa:
        s = co_await c->faa(a, 1, &old);
        break;
      case Op::kInc: {
        // A CAS retry loop (read, CAS, back off on conflict): the contended-update case.
        auto r = co_await c->atomic_update(a, [](uint64_t v) { return v + 1; });
        s = r.ok() ? OkStatus() : r.status();
        break;
      }
    }
    if (!s.ok()) {
      th->fail(s);
      break;
    }
    if (sample) th->record(0, cycles() - t0);  // in TSC cycles; converted at the end
    th->completed();
  }
}

Task<void> setup_span(ThreadClient* c, uint16_t node, uint64_t bytes, BenchThread* th,
                      OpsThread* pt) {
  auto a = co_await c->allocate_on(node, bytes, 4096);
  if (!a.ok()) {
    th->fail(a.status());
    co_return;
  }
  pt->span = *a;
}

// A thread: allocate its span, wait for the timed stage, run --depth issue loops, free the span.
void thread_body(BenchThread& th, ThreadClient* c, client::Cluster* cluster, const OpsShared* sh,
                 OpsThread* pt) {
  const auto& nodes = cluster->nodes();
  uint16_t node = nodes[th.index() % nodes.size()].node_id;
  c->run(setup_span(c, node, sh->span_bytes, &th, pt));
  pt->slots = std::max<uint64_t>(1, sh->span_bytes / sh->block_bytes);
  if (!th.error().ok()) return;
  th.on_measure([pt, c] { pt->retries_base = c->backoff_policy().retries(); });
  if (th.arrive_and_wait()) {
    bench::workload::Rng rng = th.rng();
    for (uint32_t i = 0; i < sh->depth; ++i) {
      Status s = c->scheduler().spawn(issue_loop(c, sh, &th, pt, i, rng.next_u64()));
      if (!s.ok()) {
        th.fail(s);
        break;
      }
    }
    c->scheduler().run_until_idle();
  }
  pt->retries = c->backoff_policy().retries() - pt->retries_base;
  (void)c->run(c->free_on(pt->span));
}

std::string op_name(Op op) { return std::string(name_of(kOneSidedOpNames, op)); }

// Applies --throttle, --backoff and --direct to the client options.
void adjust_options(const OpsOptions& f, client::ClientOptions* o) {
  if (f.throttle) o->throttle = *f.throttle;
  if (f.backoff) o->backoff = *f.backoff;
  if (f.direct) o->direct_access = *f.direct;
}

// The per-thread span: --span-bytes, at least a block, at most half a node's region per thread.
uint64_t span_for(const client::Cluster& cluster, const OpsShared& sh, uint64_t span,
                  uint32_t threads) {
  for (const auto& n : cluster.nodes()) {
    span = std::min(span, std::max<uint64_t>(sh.block_bytes, n.region_bytes / (2 * threads)));
  }
  return span;
}

int report(const Bench& bench, const OpsOptions& f, const OpsShared& sh,
           const std::vector<OpsThread>& per) {
  const double secs = bench.seconds();
  const uint64_t ops = bench.ops();
  uint64_t retries = 0;
  for (const auto& p : per) retries += p.retries;
  const Histogram hist = bench.histogram(0);
  const LatencyUs lat = latency_us(hist);
  const double mops = ops / secs / 1e6;
  const double mbps = ops * static_cast<double>(sh.block_bytes) / secs / 1e6;
  const client::Cluster& cluster = *bench.cluster();
  const std::string transport = cluster.transports();
  const std::string throttle = runtime::throttle_mode_name(bench.config().options.throttle);
  const bool backoff = bench.config().options.backoff;
  fmt::print(
      "ops: op={} threads={} depth={} block={}B MB/s={:.2f} Mops/s={:.3f} p50={:.2f}us "
      "p99={:.2f}us connect={:.1f}ms span={}B transport={} throttle={} backoff={}{}\n",
      op_name(sh.op), f.bench.threads, f.depth, sh.block_bytes, mbps, mops, lat.p50, lat.p99,
      cluster.connect_ms(), sh.span_bytes, transport, throttle, backoff ? "on" : "off",
      bench.result_suffix());
  nlohmann::ordered_json r = bench.report_record();
  r["op"] = op_name(sh.op);
  r["threads"] = f.bench.threads;
  r["depth"] = f.depth;
  r["block_bytes"] = sh.block_bytes;
  r["duration_s"] = secs;
  r["ops"] = ops;
  r["mops"] = mops;
  r["mb_per_s"] = mbps;
  r["p50_us"] = lat.p50;
  r["p99_us"] = lat.p99;
  r["p999_us"] = lat.p999;
  r["mean_us"] = lat.mean;
  r["latency_samples"] = hist.count();
  r["connect_ms"] = cluster.connect_ms();
  r["transport"] = transport;
  r["throttle"] = throttle;
  r["backoff"] = backoff;
  r["cas_retries"] = retries;
  r["span_bytes"] = sh.span_bytes;
  r["cluster"] = bench.local() ? "local" : "remote";
  return bench.finish_report(std::move(r));
}

}  // namespace

int run_ops(const OpsOptions& f) {
  OpsShared sh;
  sh.op = f.op;
  const bool word_op = sh.op != Op::kRead && sh.op != Op::kWrite;
  sh.block_bytes = word_op ? 8 : f.block_bytes;
  sh.depth = f.depth;
  Bench bench("ops", f.bench, {op_name(sh.op)});
  if (sh.block_bytes * f.depth > (1ull << 30)) {
    return bench.fail(2, "--block-bytes x --depth exceeds 1 GiB of buffers");
  }
  const uint64_t span = std::max<uint64_t>(f.span_bytes, sh.block_bytes);
  int rc = bench.connect(span * f.bench.threads + (256ull << 20),
                         [&f](client::ClientOptions* o) { adjust_options(f, o); });
  if (rc != 0) return rc;
  sh.span_bytes = span_for(*bench.cluster(), sh, span, f.bench.threads);

  std::vector<OpsThread> per(f.bench.threads);
  client::Cluster* cluster = bench.cluster();
  bench.start_threads([cluster, &sh, &per](BenchThread& th, ThreadClient* c) {
    thread_body(th, c, cluster, &sh, &per[th.index()]);
  });
  bench.wait_arrived();
  ProgressFormat progress;
  progress.unit = "Mops/s";
  progress.scale = 1e-6;
  progress.decimals = 3;
  bench.run_timed(progress);
  if (Status s = bench.first_error(); !s.ok()) return bench.fail(1, s.to_string());
  return report(bench, f, sh, per);
}

}  // namespace farmem::bench
