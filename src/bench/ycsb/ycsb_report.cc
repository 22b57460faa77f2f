// The report of `farmem bench ycsb` (ycsb_run.h): throughput and p50/p99/p999 per operation type,
// the structure's own figures (hash: round trips per get counted by the table itself, the
// speculative cache; tree: page reads per get and per operation, the index cache's hit rate,
// scanned records per second; kv store: its mode, the one-sided hit rate and the operations per
// coalesced message), the memory nodes' usage, and the record --out appends.
#include <fmt/format.h>

#include "farmem/bench/harness/latency.h"
#include "ycsb_run.h"

namespace farmem::bench {
namespace {

using workload::OpType;

struct YcsbTotals {
  std::array<uint64_t, kYcsbOps> misses{};
  DsCounters stats;  // run phase
  double rtt_per_get = 0;
  double spec_rate = 0;
  double cache_rate = 0;  // tree: index-cache hits per lookup, percent
};

YcsbTotals totals(const std::vector<YcsbThread>& per) {
  YcsbTotals t;
  DsCounters& st = t.stats;
  for (const auto& p : per) {
    for (int i = 0; i < kYcsbOps; ++i) t.misses[i] += p.misses[i];
    st.add(p.stats);
  }
  t.rtt_per_get = st.gets ? static_cast<double>(st.get_round_trips) / st.gets : 0.0;
  t.spec_rate =
      st.spec_hits + st.spec_misses ? 100.0 * st.spec_hits / (st.gets ? st.gets : 1) : 0.0;
  t.cache_rate = st.cache_hits + st.cache_misses
                     ? 100.0 * st.cache_hits / static_cast<double>(st.cache_hits + st.cache_misses)
                     : 0.0;
  return t;
}

double keys_per_message(const DsCounters& c) {
  return c.kv_messages ? double(c.kv_ops) / c.kv_messages : 0.0;
}

double page_reads_per_op(const DsCounters& c, const Histogram& all) {
  return all.count() ? c.page_reads / double(all.count()) : 0.0;
}

// The structure's own figures on the result line.
std::string own_figures(const Bench& bench, const YcsbOptions& f, const YcsbTotals& t,
                        const YcsbRun& run) {
  switch (f.structure) {
    case YcsbStructure::kKv:
      return fmt::format(
          "rtt/get={:.3f} kv_mode={} one_sided_hits={:.1f}% keys/msg={:.1f} coalesce={} "
          "in_flight={} batch={}",
          t.rtt_per_get, kv::kv_mode_name(f.kv_mode), t.spec_rate, keys_per_message(t.stats),
          f.coalesce ? "on" : "off", f.kv_in_flight, f.kv_batch);
    case YcsbStructure::kBtree:
      return fmt::format(
          "page_reads/get={:.3f} page_reads/op={:.3f} index_cache_hits={:.1f}% "
          "scan_records/s={:.0f} lock_retries={} height={} served_calls={} served_fallbacks={}",
          t.rtt_per_get, page_reads_per_op(t.stats, bench.histogram_all()), t.cache_rate,
          t.stats.scan_records / bench.seconds(), t.stats.cas_failures, run.height,
          t.stats.served_ops, t.stats.served_fallbacks);
    case YcsbStructure::kHash:
      break;
  }
  return fmt::format(
      "rtt/get={:.3f} spec_hits={:.1f}% cas_retries={} spec_cache=2^{} served_ops={} "
      "served_fallbacks={}",
      t.rtt_per_get, t.spec_rate, t.stats.cas_failures, f.spec_cache_log2, t.stats.served_ops,
      t.stats.served_fallbacks);
}

std::string distribution_words(const YcsbOptions& f) {
  const std::string_view name = workload::distribution_name(f.distribution);
  if (f.distribution == workload::Distribution::kZipfian)
    return fmt::format("{}({})", name, f.zipf);
  return std::string(name);
}

void print_lines(const Bench& bench, const YcsbOptions& f, const YcsbTotals& t,
                 const YcsbRun& run) {
  const double secs = bench.seconds();
  const Histogram all = bench.histogram_all();
  const LatencyUs lat = latency_us(all);
  fmt::print(
      "ycsb: structure={} workload={} records={} key={}B value={}B {} threads={} coroutines={} "
      "ops/s={:.0f} p50={:.2f}us p99={:.2f}us p999={:.2f}us {} transport={}{}\n",
      name_of(kYcsbStructureNames, f.structure), name_of(kYcsbWorkloadNames, f.workload), f.records,
      f.key_bytes, f.value_bytes, distribution_words(f), f.bench.threads, f.coroutines,
      all.count() / secs, lat.p50, lat.p99, lat.p999, own_figures(bench, f, t, run),
      bench.cluster()->transports(), bench.result_suffix());
  for (int i = 0; i < kYcsbOps; ++i) {
    const Histogram h = bench.histogram(i);
    if (h.count() == 0) continue;
    const LatencyUs l = latency_us(h);
    fmt::print("  {:<7} count={} ops/s={:.0f} p50={:.2f}us p99={:.2f}us p999={:.2f}us{}\n",
               kYcsbOpNames[i], h.count(), h.count() / secs, l.p50, l.p99, l.p999,
               t.misses[i] ? fmt::format(" absent={}", t.misses[i]) : "");
  }
  fmt::print(
      "  memory nodes: {} bytes used before, {} after load, {} at the end, {} after {}\n",
      run.used_before, run.used_after_load, run.used_end, run.used_after,
      f.keep_table.empty() ? "the table was destroyed" : "(table kept: " + f.keep_table + ")");
  if (run.syncs_end > run.syncs_after_load) {
    const double syncs = static_cast<double>(run.syncs_end - run.syncs_after_load);
    fmt::print("  journal: {:.0f} syncs/s, {:.1f} operations per sync\n", syncs / secs,
               all.count() / syncs);
  }
}

nlohmann::ordered_json per_op_json(const Bench& bench, const YcsbTotals& t) {
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  for (int i = 0; i < kYcsbOps; ++i) {
    const Histogram h = bench.histogram(i);
    if (h.count() == 0) continue;
    const LatencyUs l = latency_us(h);
    ops[kYcsbOpNames[i]] = {{"count", h.count()}, {"ops_per_s", h.count() / bench.seconds()},
                            {"p50_us", l.p50},    {"p99_us", l.p99},
                            {"p999_us", l.p999},  {"absent", t.misses[i]}};
  }
  return ops;
}

void add_kv_fields(const YcsbOptions& f, const YcsbTotals& t, nlohmann::ordered_json* r) {
  (*r)["kv_mode"] = kv::kv_mode_name(f.kv_mode);
  (*r)["coalesce"] = f.coalesce;
  (*r)["kv_in_flight"] = f.kv_in_flight;
  (*r)["kv_batch"] = f.kv_batch;
  (*r)["one_sided_hit_percent"] = t.spec_rate;
  (*r)["keys_per_message"] = keys_per_message(t.stats);
  (*r)["kv_messages"] = t.stats.kv_messages;
  (*r)["kv_cache_log2"] = f.kv_cache_log2;
}

void add_btree_fields(const Bench& bench, const YcsbOptions& f, const YcsbTotals& t,
                      const YcsbRun& run, nlohmann::ordered_json* r) {
  const double secs = bench.seconds();
  (*r)["page_reads_per_get"] = t.rtt_per_get;
  (*r)["page_reads_per_op"] = page_reads_per_op(t.stats, bench.histogram_all());
  (*r)["index_cache_hit_percent"] = t.cache_rate;
  (*r)["index_cache_bytes"] = f.index_cache_bytes;
  (*r)["scans_per_s"] = bench.histogram(static_cast<int>(OpType::kScan)).count() / secs;
  (*r)["scan_records_per_s"] = t.stats.scan_records / secs;
  (*r)["max_scan_length"] = f.max_scan_length;
  (*r)["tree_height"] = run.height;
}

int write_json(const Bench& bench, const YcsbOptions& f, const YcsbTotals& t, const YcsbRun& run) {
  const Histogram all = bench.histogram_all();
  const LatencyUs lat = latency_us(all);
  nlohmann::ordered_json r = bench.report_record();
  r["structure"] = name_of(kYcsbStructureNames, f.structure);
  r["workload"] = name_of(kYcsbWorkloadNames, f.workload);
  r["records"] = f.records;
  r["key_bytes"] = f.key_bytes;
  r["value_bytes"] = f.value_bytes;
  r["distribution"] = workload::distribution_name(f.distribution);
  r["zipf"] = f.zipf;
  r["durability"] = f.bench.cluster.local_durability.empty() && f.bench.cluster.servers.empty()
                        ? "volatile"
                        : f.bench.cluster.local_durability;
  r["threads"] = f.bench.threads;
  r["coroutines"] = f.coroutines;
  r["duration_s"] = bench.seconds();
  r["ops_per_s"] = all.count() / bench.seconds();
  r["p50_us"] = lat.p50;
  r["p99_us"] = lat.p99;
  r["p999_us"] = lat.p999;
  r["get_round_trips_avg"] = t.rtt_per_get;
  r["spec_hit_percent"] = t.spec_rate;
  r["cas_retries"] = t.stats.cas_failures;
  r["spec_cache_log2"] = f.spec_cache_log2;
  if (f.structure != YcsbStructure::kKv) {
    r["served_procedures"] = !f.no_served;
    r["served_ops"] = t.stats.served_ops;
    r["served_fallbacks"] = t.stats.served_fallbacks;
  }
  r["load_s"] = run.load_s;
  r["used_bytes_after_load"] = run.used_after_load;
  r["used_bytes_end"] = run.used_end;
  r["syncs_per_s"] = (run.syncs_end - run.syncs_after_load) / bench.seconds();
  r["used_bytes_before"] = run.used_before;
  r["used_bytes_after_destroy"] = run.used_after;
  r["subtables_after_load"] = run.subtables;
  r["load_splits"] = run.load_splits;
  r["run_splits"] = t.stats.splits;
  if (f.structure == YcsbStructure::kKv) add_kv_fields(f, t, &r);
  if (f.structure == YcsbStructure::kBtree) add_btree_fields(bench, f, t, run, &r);
  r["transport"] = bench.cluster()->transports();
  r["cluster"] = bench.local() ? "local" : "remote";
  r["ops"] = per_op_json(bench, t);
  return bench.finish_report(std::move(r));
}

}  // namespace

int ycsb_report(const Bench& bench, const YcsbOptions& f, const std::vector<YcsbThread>& per,
                const YcsbRun& run) {
  if (Status s = bench.first_error(); !s.ok()) return bench.fail(1, s.to_string());
  const YcsbTotals t = totals(per);
  print_lines(bench, f, t, run);
  return write_json(bench, f, t, run);
}

}  // namespace farmem::bench
