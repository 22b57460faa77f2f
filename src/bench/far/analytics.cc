// `farmem bench far analytics` (farmem/bench/far_apps.h): a columnar trip table of --rows rows
// in far vectors; two queries (a filtered group-by aggregate; the top-10 fares), once fetching
// the columns through the cache and once with remote compute on the memory node: bytes moved
// and seconds of each, and both answers must agree.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "far_apps.h"
#include "farmem/bench/harness/bench.h"
#include "farmem/bench/workload/rng.h"
#include "farmem/common/clock.h"
#include "farmem/far/vector.h"

namespace farmem::bench {
namespace {

using runtime::Task;

struct Table {
  far::Vector<double>* fare;
  far::Vector<double>* distance;
  far::Vector<uint64_t>* passengers;
  far::Vector<uint64_t>* pickup;
};

Task<Status> load_table(Table t, uint64_t rows, uint64_t seed) {
  workload::Rng rng(seed);
  for (uint64_t i = 0; i < rows; ++i) {
    const double d = static_cast<double>(rng.next_u64() % 3000) / 100;
    Status s = co_await t.distance->push_back(d);
    if (s.ok())
      s = co_await t.fare->push_back(2.5 + d * 1.8 +
                                     static_cast<double>(rng.next_u64() % 500) / 100);
    if (s.ok()) s = co_await t.passengers->push_back(1 + rng.next_u64() % 6);
    if (s.ok()) s = co_await t.pickup->push_back(1'700'000'000 + i * 3);
    FARMEM_CO_TRY(s);
  }
  co_return OkStatus();
}

struct QueryOut {
  std::vector<double> sum_by_pax = std::vector<double>(16, 0);
  std::vector<uint64_t> count_by_pax = std::vector<uint64_t>(16, 0);
  std::vector<std::pair<double, uint64_t>> top;
};

// Q1 (trips longer than 10 miles: count and mean fare by passenger count) and Q2 (top 10
// fares) by reading every column through the cache.
Task<Status> queries_fetch(Table t, QueryOut* out) {
  const uint64_t n = t.fare->size();
  auto scope = co_await far::DerefScope::enter(*t.fare->store().cache());
  FARMEM_CO_TRY(scope);
  std::vector<std::pair<double, uint64_t>> top;
  for (uint64_t i = 0; i < n; ++i) {
    if (i % 4096 == 0) scope->renew();
    auto d = co_await t.distance->at(*scope, i);
    FARMEM_CO_TRY(d);
    auto fv = co_await t.fare->at(*scope, i);
    FARMEM_CO_TRY(fv);
    if (**d > 10.0) {
      auto p = co_await t.passengers->at(*scope, i);
      FARMEM_CO_TRY(p);
      out->sum_by_pax[**p] += **fv;
      ++out->count_by_pax[**p];
    }
    top.emplace_back(**fv, i);
    if (top.size() >= 4096) {
      std::partial_sort(top.begin(), top.begin() + 10, top.end(),
                        [](auto& a, auto& b) { return a.first > b.first; });
      top.resize(10);
    }
  }
  std::partial_sort(top.begin(), top.begin() + std::min<size_t>(10, top.size()), top.end(),
                    [](auto& a, auto& b) { return a.first > b.first; });
  top.resize(std::min<size_t>(10, top.size()));
  out->top = top;
  co_return OkStatus();
}

Task<Status> queries_offload(Table t, QueryOut* out) {
  auto cells = co_await t.fare->aggregate(far::make_predicate(far::wire::Pred::kGt, 10.0),
                                          t.distance, t.passengers);
  FARMEM_CO_TRY(cells);
  for (size_t g = 0; g < cells->size(); ++g) {
    out->count_by_pax[g] = (*cells)[g].count;
    out->sum_by_pax[g] = (*cells)[g].count ? far::wire::from_bits<double>((*cells)[g].sum) : 0;
  }
  auto top = co_await t.fare->top_k(10);
  FARMEM_CO_TRY(top);
  out->top = *top;
  co_return OkStatus();
}

// Runs one mode's queries from a cold cache; prints its line and appends its record. 0, or the
// error printed and 1; *rc collects finish_report's codes.
int run_mode(const Bench& bench, const FarAppOptions& f, client::ThreadClient* tc,
             far::ThreadCache* cache, uint64_t local_bytes, Table t, int mode, QueryOut* out,
             int* rc) {
  auto flushed = tc->run(cache->evict_all());  // start cold, all data far
  if (!flushed.ok()) return bench.fail(1, flushed.status().to_string());
  const far::CacheStats before = cache->stats();
  const uint64_t t0 = now_ns();
  Status s = mode == 0 ? tc->run(queries_fetch(t, out)) : tc->run(queries_offload(t, out));
  if (!s.ok()) return bench.fail(1, s.to_string());
  const double secs = static_cast<double>(now_ns() - t0) / 1e9;
  const far::CacheStats& after = cache->stats();
  const uint64_t moved = (after.fetch_bytes - before.fetch_bytes) +
                         (after.writeback_bytes - before.writeback_bytes) +
                         (after.rpc_bytes - before.rpc_bytes);
  const char* name = mode == 0 ? "fetch" : "offload";
  const double load = load_average_1m();
  fmt::print(
      "far analytics: mode={} query=q1+q2 rows={} bytes_moved={} seconds={:.3f} "
      "local_memory={}B load={:.2f}{}\n",
      name, f.rows, moved, secs, local_bytes, load, bench.result_suffix());
  auto rec = bench.report_record();
  rec["app"] = "analytics";
  rec["mode"] = name;
  rec["query"] = "q1_filter_groupby+q2_top10";
  rec["rows"] = f.rows;
  rec["bytes_moved"] = moved;
  rec["seconds"] = secs;
  rec["load_avg_1m"] = load;
  *rc |= bench.finish_report(rec);
  return 0;
}

// Both modes must agree; 0, or the disagreement printed and 1.
int compare(const Bench& bench, const QueryOut (&results)[2]) {
  for (size_t g = 0; g < 16; ++g) {
    const double a = results[0].sum_by_pax[g], b = results[1].sum_by_pax[g];
    if (results[0].count_by_pax[g] != results[1].count_by_pax[g] ||
        std::abs(a - b) > 1e-6 * std::max(1.0, std::abs(a))) {
      return bench.fail(1, fmt::format("fetch and offload disagree on group {}", g));
    }
  }
  for (size_t k = 0; k < results[0].top.size(); ++k) {
    if (results[0].top[k].first != results[1].top[k].first) {
      return bench.fail(1, "fetch and offload disagree on the top fares");
    }
  }
  fmt::print("far analytics: fetch and offload agree; trips > 10 miles with 1 passenger: {}\n",
             results[1].count_by_pax[1]);
  return 0;
}

}  // namespace

int run_analytics(const FarAppOptions& f) {
  Bench bench("far analytics", f.bench, {"query"});
  const uint64_t working_set = f.rows * 32;
  auto budget = local_budget(f.local_memory, working_set);
  if (!budget.ok()) return bench.fail(2, budget.status().to_string());
  if (int rc = bench.connect(working_set * 2 + (256ull << 20)); rc != 0) return rc;
  auto tc = bench.cluster()->thread_client();
  if (!tc.ok()) return bench.fail(1, tc.status().to_string());
  far::ObjectManagerOptions mo;
  mo.local_bytes = std::max<uint64_t>(*budget, 4 << 20);
  auto m = far::ObjectManager::create(mo);
  if (!m.ok()) return bench.fail(2, m.status().to_string());
  int rc = 0;
  {
    far::ThreadCache cache(m->get(), *tc);
    far::Vector<double> fare(&cache), distance(&cache);
    far::Vector<uint64_t> pax(&cache), pickup(&cache);
    Table t{&fare, &distance, &pax, &pickup};
    Status s = (*tc)->run(load_table(t, f.rows, f.bench.seed));
    if (!s.ok()) return bench.fail(1, s.to_string());
    QueryOut results[2];
    for (int mode = 0; mode < 2; ++mode) {
      const int e = run_mode(bench, f, *tc, &cache, mo.local_bytes, t, mode, &results[mode], &rc);
      if (e != 0) return e;
    }
    if (int e = compare(bench, results); e != 0) return e;
  }
  bench.cluster()->release_thread_client();
  return rc;
}

}  // namespace farmem::bench
