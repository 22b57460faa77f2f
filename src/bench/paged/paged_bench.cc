// `farmem bench paged` (farmem/bench/paged.h): fault latency and sequential-scan throughput of
// paged regions.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "farmem/bench/harness/cluster.h"
#include "farmem/bench/paged.h"
#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/common/units.h"
#include "farmem/paged/page_manager.h"
#include "farmem/runtime/scheduler.h"

namespace farmem::bench {

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

int fail(const std::string& what) {
  std::fprintf(stderr, "farmem bench paged: %s\n", what.c_str());
  return 1;
}

void append_json(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return;
  std::ofstream(path, std::ios::app) << j.dump() << "\n";
}

// Reads each of the first `pages` pages (of pb bytes) of `region` from `c` once untimed, then once
// timed (us). The untimed pass: this thread's client maps the node's region afresh (shared memory),
// and the pager's mapping was warm when it faulted.
Status raw_reads(client::ThreadClient* c, paged::Region& region, uint64_t pb, uint64_t pages,
                 std::vector<double>* read_us) {
  std::vector<uint8_t> buf(pb);
  for (uint64_t p = 0; p < pages; ++p) {
    FARMEM_TRY(runtime::sync_wait(c->read(region.layout().page_address(p), buf.data(), pb)));
  }
  for (uint64_t p = 0; p < pages; ++p) {
    const uint64_t t0 = steady_now_ns();
    Status st = runtime::sync_wait(c->read(region.layout().page_address(p), buf.data(), pb));
    read_us->push_back(static_cast<double>(steady_now_ns() - t0) / 1e3);
    FARMEM_TRY(st);
  }
  return OkStatus();
}

// Region A is written and pushed out by region B (every page of A stored remotely, none
// resident); B is freed; then one byte of each of the first `samples` pages of A is read
// (each a pure fetch fault: the budget has room).
int run_fault(const PagedBenchOptions& f, client::Cluster& cluster) {
  const uint64_t pb = f.page_bytes;
  const uint64_t pages = f.samples;
  paged::PageManagerOptions mo;
  mo.local_bytes = 2 * pages * pb + 8 * pb;
  auto m = paged::PageManager::create(cluster, mo);
  if (!m.ok()) return fail(m.status().to_string());
  paged::RegionOptions ro;
  ro.page_bytes = pb;
  ro.name = "fault-a";
  auto a = (*m)->allocate(2 * pages * pb, ro);
  if (!a.ok()) return fail(a.status().to_string());
  auto* am = static_cast<volatile uint8_t*>((*a)->data());
  for (uint64_t i = 0; i < (*a)->size(); i += 4096) am[i] = 1;
  ro.name = "fault-b";
  auto b = (*m)->allocate(2 * pages * pb + 8 * pb, ro);
  if (!b.ok()) return fail(b.status().to_string());
  auto* bm = static_cast<volatile uint8_t*>((*b)->data());
  for (uint64_t i = 0; i < (*b)->size(); i += 4096) bm[i] = 2;
  if (Status st = (*m)->free(*b); !st.ok()) return fail(st.to_string());
  const paged::RegionStats before = (*a)->stats();
  std::vector<double> fault_us;
  for (uint64_t p = 0; p < pages; ++p) {
    const uint64_t t0 = steady_now_ns();
    const uint8_t v = am[p * pb];
    fault_us.push_back(static_cast<double>(steady_now_ns() - t0) / 1e3);
    if (v != 1) return fail("wrong data in the fault benchmark");
  }
  const paged::RegionStats after = (*a)->stats();
  // The raw read of the same size from the test thread's client.
  auto* c = *cluster.thread_client();
  std::vector<double> read_us;
  if (Status st = raw_reads(c, **a, pb, pages, &read_us); !st.ok()) return fail(st.to_string());
  const double fp50 = percentile(fault_us, 0.5), fp99 = percentile(fault_us, 0.99);
  const double rp50 = percentile(read_us, 0.5), rp99 = percentile(read_us, 0.99);
  std::printf(
      "paged fault: page %llu B, %llu faults (%llu counted, %llu evictions meanwhile): "
      "p50 %.1f us p99 %.1f us | raw read p50 %.1f us p99 %.1f us | fault/read %.2fx | %s\n",
      static_cast<unsigned long long>(pb), static_cast<unsigned long long>(pages),
      static_cast<unsigned long long>(after.faults - before.faults),
      static_cast<unsigned long long>(after.evictions - before.evictions), fp50, fp99, rp50, rp99,
      rp50 > 0 ? fp50 / rp50 : 0.0, c->transports().c_str());
  append_json(f.out, {{"bench", "paged-fault"},
                      {"page_bytes", pb},
                      {"faults", pages},
                      {"fault_p50_us", fp50},
                      {"fault_p99_us", fp99},
                      {"read_p50_us", rp50},
                      {"read_p99_us", rp99},
                      {"transports", c->transports()}});
  cluster.release_thread_client();
  return 0;
}

int run_scan(const PagedBenchOptions& f, client::Cluster& cluster) {
  paged::PageManagerOptions mo;
  if (!f.local_memory.empty() && f.local_memory.back() == '%') {
    mo.local_percent = std::stod(f.local_memory.substr(0, f.local_memory.size() - 1));
  } else {
    auto b = parse_bytes(f.local_memory);
    if (!b.ok()) return fail("--local-memory: " + b.status().to_string());
    mo.local_bytes = *b;
  }
  auto m = paged::PageManager::create(cluster, mo);
  if (!m.ok()) return fail(m.status().to_string());
  paged::RegionOptions ro;
  ro.page_bytes = f.page_bytes;
  ro.advice = paged::Advice::kSequential;
  ro.name = "scan";
  auto r = (*m)->allocate(f.bytes, ro);
  if (!r.ok()) return fail(r.status().to_string());
  auto* w = static_cast<uint64_t*>((*r)->data());
  const uint64_t n = (*r)->size() / 8;
  std::fprintf(stderr, "filling %llu MiB (budget %llu MiB)...\n",
               static_cast<unsigned long long>((*r)->size() >> 20),
               static_cast<unsigned long long>((*m)->budget_bytes() >> 20));
  uint64_t t0 = steady_now_ns();
  for (uint64_t i = 0; i < n; ++i) w[i] = i;
  const double fill_s = static_cast<double>(steady_now_ns() - t0) / 1e9;
  const paged::RegionStats before = (*r)->stats();
  t0 = steady_now_ns();
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += w[i];
  const double scan_s = static_cast<double>(steady_now_ns() - t0) / 1e9;
  const paged::RegionStats after = (*r)->stats();
  if (sum != n * (n - 1) / 2) return fail("wrong sum in the scan");
  const double gib = static_cast<double>((*r)->size()) / (1ull << 30);
  std::printf(
      "paged scan: %.2f GiB, page %llu B, budget %llu MiB: fill %.2f s (%.2f GiB/s), scan %.2f s "
      "(%.2f GiB/s); scan faults %llu, read ahead %llu, prefetch hits %llu, fetched %.2f GiB\n",
      gib, static_cast<unsigned long long>(f.page_bytes),
      static_cast<unsigned long long>((*m)->budget_bytes() >> 20), fill_s, gib / fill_s, scan_s,
      gib / scan_s, static_cast<unsigned long long>(after.faults - before.faults),
      static_cast<unsigned long long>(after.prefetched - before.prefetched),
      static_cast<unsigned long long>(after.prefetch_hits - before.prefetch_hits),
      static_cast<double>(after.bytes_fetched - before.bytes_fetched) / (1ull << 30));
  append_json(f.out, {{"bench", "paged-scan"},
                      {"bytes", (*r)->size()},
                      {"page_bytes", f.page_bytes},
                      {"budget_bytes", (*m)->budget_bytes()},
                      {"fill_seconds", fill_s},
                      {"scan_seconds", scan_s},
                      {"scan_gib_per_s", gib / scan_s}});
  return 0;
}

}  // namespace

int run_paged_bench(const PagedBenchOptions& options) {
  PagedBenchOptions f = options;
  const bool scan = f.mode == PagedBenchMode::kScan;
  // The node's buddy allocator needs twice a block's size free for a large one.
  const uint64_t need = scan ? f.bytes : 5 * uint64_t{f.samples} * f.page_bytes;
  f.cluster.local_capacity_bytes =
      std::max<uint64_t>(f.cluster.local_capacity_bytes, 2 * need + (64ull << 20));
  std::unique_ptr<LocalNode> local;
  auto config = resolve_cluster(f.cluster, &local);
  if (!config.ok()) return fail(config.status().to_string());
  auto cluster = client::Cluster::connect(*config);
  if (!cluster.ok()) return fail(cluster.status().to_string());
  return scan ? run_scan(f, **cluster) : run_fault(f, **cluster);
}

}  // namespace farmem::bench
