// `farmem bench far cold-path` (farmem/bench/far_apps.h): the latency of a far object's miss
// (64 B and 4 KiB objects), of a hit, and of a raw one-sided read of the same size in the same
// run (ThreadClient::read of equally cold far bytes into local memory: the ratio's reference),
// and ucx_perftest's latency for the size (one cache-resident buffer; a round trip of messages
// over TCP), and a paged region's page fault of the same size.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "far_apps.h"
#include "farmem/bench/harness/bench.h"
#include "farmem/bench/workload/rng.h"
#include "farmem/common/clock.h"
#include "farmem/far/far_ptr.h"
#include "farmem/paged/page_manager.h"

namespace farmem::bench {
namespace {

using runtime::Task;

template <size_t N>
struct Obj {
  std::array<uint8_t, N> b;
};

template <size_t N>
Task<Status> cold_path_size(far::ThreadCache* cache, uint64_t n, workload::Rng* rng,
                            double out[3]) {
  // Objects [0, n) are dereferenced (misses, then hits); [n, 2n), written and evicted with
  // them, are read raw, so that both start equally cold.
  std::vector<far::UniquePtr<Obj<N>>> objs;
  for (uint64_t i = 0; i < 2 * n; ++i) {
    auto p = co_await far::allocate_unique<Obj<N>>(cache);
    FARMEM_CO_TRY(p);
    objs.push_back(std::move(*p));
  }
  auto left = co_await cache->evict_all();
  FARMEM_CO_TRY(left);
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  for (uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng->next_u64() % i]);
  std::vector<uint64_t> miss, hit, raw;
  uint64_t sink = 0;
  auto scope = co_await far::DerefScope::enter(*cache);
  FARMEM_CO_TRY(scope);
  for (uint64_t i : order) {  // misses: one read into the cache each
    const uint64_t t0 = cycles();
    auto r = co_await objs[i].deref(*scope);
    FARMEM_CO_TRY(r);
    sink += (*r)->b[N - 1];
    miss.push_back(cycles() - t0);
  }
  for (uint64_t i : order) {  // hits
    const uint64_t t0 = cycles();
    auto r = co_await objs[i].deref(*scope);
    FARMEM_CO_TRY(r);
    sink += (*r)->b[N - 1];
    hit.push_back(cycles() - t0);
  }
  std::vector<uint8_t> buf(N);
  for (uint64_t i : order) {  // the raw one-sided read of the same far bytes
    const uint64_t t0 = cycles();
    Status s = co_await cache->client()->read(objs[n + i].remote(), buf.data(), N);
    FARMEM_CO_TRY(s);
    sink += buf[N - 1];
    raw.push_back(cycles() - t0);
  }
  out[0] = median_ns(&miss) + static_cast<double>(sink & 0);
  out[1] = median_ns(&hit);
  out[2] = median_ns(&raw);
  co_return OkStatus();
}

// ucx_perftest's latency for `bytes` on the transports of UCX_TLS, in ns, or a negative value
// when it is not installed or failed. A get with one operation outstanding (ucp_get -O 1) on
// shared memory; over TCP a round trip of active messages (2 x ucp_am_lat), because Debian's
// UCX 1.13 serves a lone ucp_get over TCP late (bench/compare_perftest.sh). ucx_perftest
// rereads one buffer, so its data is cache-resident, unlike the cold objects measured here.
double perftest_ns(bool tcp, uint64_t bytes) {
  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  const std::string test = tcp ? "ucp_am_lat" : "ucp_get -O 1";
  const std::string cmd = fmt::format(
      "command -v ucx_perftest >/dev/null || exit 0; ucx_perftest -p {0} >/dev/null 2>&1 & "
      "s=$!; sleep 0.5; timeout 60 ucx_perftest 127.0.0.1 -p {0} -t {1} -s {2} -n {3} "
      "2>/dev/null | awk '/^Final:/ {{print $3}}'; kill $s 2>/dev/null; wait $s 2>/dev/null",
      port, test, bytes, tcp ? 20000 : 200000);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  double us = -1;
  if (std::fscanf(p, "%lf", &us) != 1) us = -1;
  ::pclose(p);
  return us < 0 ? -1 : us * 1000 * (tcp ? 2 : 1);
}

// Median latency of a missing-page fault on a paged region (farmem::paged) with pages of
// `page_bytes`: `pages` pages are written, pushed out by a local buffer of 4 pages, then each
// is read once in a shuffled order (the first read of a page faults and fetches it).
Result<double> page_fault_ns(client::Cluster& cluster, uint64_t page_bytes, uint64_t pages,
                             workload::Rng* rng) {
  paged::PageManagerOptions mo;
  mo.local_bytes = 4 * page_bytes;
  auto m = paged::PageManager::create(cluster, mo);
  FARMEM_TRY(m);
  paged::RegionOptions ro;
  ro.page_bytes = page_bytes;
  ro.name = "cold-path";
  auto region = (*m)->allocate(pages * page_bytes, ro);
  FARMEM_TRY(region);
  auto* base = static_cast<volatile uint8_t*>((*region)->data());
  for (uint64_t i = 0; i < pages; ++i) base[i * page_bytes] = static_cast<uint8_t>(i | 1);
  if (Status s = (*region)->flush(); !s.ok()) return s;
  std::vector<uint64_t> order(pages - 8);  // the last pages written may still be resident
  for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
  for (uint64_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng->next_u64() % i]);
  std::vector<uint64_t> took;
  uint64_t sink = 0;
  for (uint64_t i : order) {
    const uint64_t t0 = cycles();
    sink += base[i * page_bytes + page_bytes - 1];
    took.push_back(cycles() - t0);
  }
  return median_ns(&took) + static_cast<double>(sink & 0);
}

// One object size's figures.
struct ColdPath {
  uint64_t size = 0;
  double r[3] = {0, 0, 0};  // miss, hit, raw read: medians in ns
  std::string transport;
  bool tcp = false;
  double perftest = -1;
  uint64_t page = 0;
  double fault = 0;
};

// Prints the size's line and appends its record; finish_report's code.
int report(const Bench& bench, const ColdPath& c, uint64_t n) {
  const double load = load_average_1m();
  fmt::print(
      "far cold-path: object={}B miss_p50={:.0f}ns hit_p50={:.1f}ns raw_read_p50={:.0f}ns "
      "miss/raw={:.2f} ucx_perftest_{}_p50={:.0f}ns page_fault_{}B_p50={:.0f}ns transport={} "
      "load={:.2f}{}\n",
      c.size, c.r[0], c.r[1], c.r[2], c.r[0] / c.r[2], c.tcp ? "am_rtt" : "get", c.perftest, c.page,
      c.fault, c.transport, load, bench.result_suffix());
  auto rec = bench.report_record();
  rec["app"] = "cold-path";
  rec["object_bytes"] = c.size;
  rec["transport"] = c.transport;
  rec["miss_p50_ns"] = c.r[0];
  rec["hit_p50_ns"] = c.r[1];
  rec["raw_read_p50_ns"] = c.r[2];
  rec["page_fault_p50_ns"] = c.fault;
  rec["page_fault_page_bytes"] = c.page;
  if (c.perftest >= 0) {
    rec[c.tcp ? "ucx_perftest_am_rtt_p50_ns" : "ucx_perftest_get_p50_ns"] = c.perftest;
  }
  rec["load_avg_1m"] = load;
  rec["objects"] = n;
  return bench.finish_report(rec);
}

// Measures one object size through the cache and ucx_perftest (the page fault is the caller's).
Status measure_objects(client::ThreadClient* tc, far::ThreadCache* cache, uint64_t n,
                       workload::Rng* rng, ColdPath* c) {
  FARMEM_TRY(c->size == 64 ? tc->run(cold_path_size<64>(cache, n, rng, c->r))
                           : tc->run(cold_path_size<4096>(cache, n, rng, c->r)));
  c->transport = tc->transports();
  c->tcp = c->transport.find("served") != std::string::npos;
  c->perftest = perftest_ns(c->tcp, c->size);
  // A page fault of the same size (the smallest page, 4 KiB, for the 64 B object).
  c->page = std::max<uint64_t>(c->size, paged::kMinPageBytes);
  return OkStatus();
}

}  // namespace

int run_cold_path(const FarAppOptions& f) {
  Bench bench("far cold-path", f.bench, {"miss"});
  if (int rc = bench.connect(2ull << 30); rc != 0) return rc;
  auto tc = bench.cluster()->thread_client();
  if (!tc.ok()) return bench.fail(1, tc.status().to_string());
  const uint64_t n = f.objects != 0 ? f.objects : 100000;
  far::ObjectManagerOptions mo;
  mo.local_bytes = std::max<uint64_t>(n * (4096 + 64) * 3, 64 << 20);  // all of it fits
  auto m = far::ObjectManager::create(mo);
  if (!m.ok()) return bench.fail(2, m.status().to_string());
  int rc = 0;
  {
    far::ThreadCache cache(m->get(), *tc);
    workload::Rng rng(f.bench.seed);
    for (uint64_t size : {64, 4096}) {
      ColdPath c;
      c.size = size;
      Status s = measure_objects(*tc, &cache, n, &rng, &c);
      if (!s.ok()) return bench.fail(1, s.to_string());
      auto fault = page_fault_ns(*bench.cluster(), c.page, std::min<uint64_t>(n, 20000), &rng);
      if (!fault.ok()) return bench.fail(1, "paged region: " + fault.status().to_string());
      c.fault = *fault;
      rc |= report(bench, c, n);
    }
  }
  bench.cluster()->release_thread_client();
  return rc;
}

}  // namespace farmem::bench
