// `farmem bench far frontend` (farmem/bench/far_apps.h): AIFM's web front end (its fig. 6
// program). A far hash table of --keys entries indexes a far array of --objects 8 KiB objects;
// each request picks one of keys / --keys-per-request requests from a Zipfian distribution
// (--zipf-theta), looks up its --keys-per-request keys (AIFM: 32), sums their values into the
// index of the object it reads and compresses that object with LZ4 (every value and the sum are
// checked). Backends (frontend.h): far (local budget --local-memory), local (std containers),
// mmap (the paged baseline) or paged (farmem::paged with --page-bytes pages: the page-granular
// design AIFM compares with). This file holds the shared pieces, the local backend and the run.
#include "frontend.h"

#include <fmt/format.h>
#include <lz4.h>

#include <algorithm>

#include "far_apps.h"
#include "farmem/bench/harness/latency.h"
#include "farmem/common/clock.h"
#include "farmem/far/object_manager.h"

namespace farmem::bench {

void make_item(uint64_t i, Item* it) {
  // Compressible text-like bytes (a few distinct words), different per item.
  static const char* kWords[] = {"far ", "memory ", "object ", "scope ", "cache ", "node "};
  size_t at = 0;
  uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
  while (at < kItemBytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const char* w = kWords[x % 6];
    for (size_t k = 0; w[k] != 0 && at < kItemBytes; ++k) it->b[at++] = static_cast<uint8_t>(w[k]);
  }
}

int compress(const uint8_t* data, std::vector<char>* out) {
  return LZ4_compress_default(reinterpret_cast<const char*>(data), out->data(),
                              static_cast<int>(kItemBytes), static_cast<int>(out->size()));
}

size_t compress_bound() { return static_cast<size_t>(LZ4_compressBound(kItemBytes)); }

// The key indices in the order every backend loads them (a seeded shuffle).
std::vector<uint64_t> load_order(const FrontShape& shape, uint64_t seed) {
  std::vector<uint64_t> order(shape.keys());
  for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
  workload::Rng rng(seed);
  for (uint64_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next_u64() % i]);
  return order;
}

// Checks a request's value sum (every key found, every value right) and names its object.
Result<uint64_t> object_of(const FrontShape& shape, uint64_t r, uint64_t sum) {
  if (sum != r) return Internal(fmt::format("front end: request {} summed to {}", r, sum));
  return r % shape.objects;
}

namespace {

struct LocalFront {
  FrontShape shape;
  std::unordered_map<uint64_t, uint64_t> table;
  std::vector<Item> items;
};

// The sum of request r's values in the std table (a missing key adds kMissingKeyValue).
uint64_t local_lookups(const LocalFront& fe, uint64_t r) {
  uint64_t sum = 0;
  for (uint64_t j = 0; j < fe.shape.per_request; ++j) {
    auto it = fe.table.find(fe.shape.key(r, j));
    sum += it == fe.table.end() ? kMissingKeyValue : it->second;
  }
  return sum;
}

void local_client(BenchThread* t, const LocalFront* fe, const RequestChooser* requests) {
  workload::Rng rng = t->rng();
  std::vector<char> out(LZ4_compressBound(kItemBytes));
  while (t->running()) {
    const uint64_t t0 = cycles();
    const uint64_t r = requests->next(rng);
    auto idx = object_of(fe->shape, r, local_lookups(*fe, r));
    if (!idx.ok() || compress(fe->items[*idx].b.data(), &out) <= 0) {
      t->fail(idx.ok() ? Internal("local front end: lz4 failed") : idx.status());
      return;
    }
    t->record(0, cycles() - t0);
    t->completed();
  }
}

// One run's backend and what it needs, owned by run_frontend (after the Bench: the run's threads
// use it until the Bench joins them).
struct Frontend {
  FrontShape shape;
  uint64_t working_set = 0;
  uint64_t budget = 0;
  std::vector<uint64_t> order;
  std::unique_ptr<RequestChooser> requests;
  // With --shared-budget the far or paged backend pays from a process-wide LocalBudget (the
  // path a process using both takes); its tenants' usage is printed at the end. It outlives both
  // managers.
  std::unique_ptr<LocalBudget> shared;
  std::unique_ptr<far::ObjectManager> manager;
  LocalFront local{};
  MmapRun mm;
  PagedRun pg;
  std::string words;  // the result line's backend words (cgroup, shared budget)
};

// The request shape and the budget; 0, or the error printed and 2.
int plan(const Bench& bench, const FarAppOptions& f, Frontend* fe) {
  fe->shape.objects = f.objects != 0 ? f.objects : 32768;  // 256 MiB
  fe->shape.per_request = f.keys_per_request;
  fe->shape.requests = std::max<uint64_t>(1, f.keys / f.keys_per_request);
  fe->working_set = fe->shape.objects * kItemBytes + fe->shape.keys() * 16;
  auto budget = local_budget(f.local_memory, fe->working_set);
  if (!budget.ok()) return bench.fail(2, budget.status().to_string());
  fe->budget = *budget;
  return 0;
}

// Fills the backend's table and items (the far backend's threads fill theirs).
int prepare(Bench& bench, const FarAppOptions& f, Frontend* fe) {
  const FrontShape& shape = fe->shape;
  fe->requests = std::make_unique<RequestChooser>(shape.requests, f.zipf_theta);
  fe->order = load_order(shape, f.bench.seed);
  const bool pays = f.backend == FrontendBackend::kFar || f.backend == FrontendBackend::kPaged;
  if (f.shared_budget && pays) fe->shared = std::make_unique<LocalBudget>(fe->budget);
  fe->local.shape = shape;
  switch (f.backend) {
    case FrontendBackend::kLocal:
      fe->local.items.resize(shape.objects);
      for (uint64_t i = 0; i < shape.objects; ++i) make_item(i, &fe->local.items[i]);
      fe->local.table.reserve(shape.keys());
      for (uint64_t i : fe->order) fe->local.table[shape.key_of(i)] = shape.value_of(i);
      return 0;
    case FrontendBackend::kMmap: {
      Status s = prepare_mmap(f, shape, fe->order, fe->budget, &fe->mm);
      return s.ok() ? 0 : bench.fail(1, "mmap backend: " + s.to_string());
    }
    case FrontendBackend::kPaged: {
      Status s = prepare_paged(f, *bench.cluster(), shape, fe->order, fe->budget, fe->shared.get(),
                               &fe->pg);
      return s.ok() ? 0 : bench.fail(1, "paged backend: " + s.to_string());
    }
    case FrontendBackend::kFar:
      break;
  }
  far::ObjectManagerOptions mo;
  mo.local_bytes = fe->budget;
  mo.shared_budget = fe->shared.get();
  auto m = far::ObjectManager::create(mo);
  if (!m.ok()) return bench.fail(2, m.status().to_string());
  fe->manager = std::move(*m);
  return 0;
}

void frontend_thread(const FarAppOptions& f, const Frontend* fe, BenchThread& t,
                     client::ThreadClient* c) {
  if (fe->manager != nullptr) {
    return far_frontend_thread(f, fe->shape, &fe->order, fe->manager.get(), fe->requests.get(), t,
                               c);
  }
  if (!t.arrive_and_wait()) return;
  if (f.backend == FrontendBackend::kLocal) return local_client(&t, &fe->local, fe->requests.get());
  const MmapFront* m = fe->pg.manager != nullptr ? &fe->pg.front : &fe->mm.front;
  mmap_client(&t, &fe->shape, m, fe->requests.get());
}

// The mmap backend: from here on the process's new pages (the file's) are charged to a cgroup
// of the budget (every thread is set up).
int join_cgroup(Bench& bench, Frontend* fe) {
  if (fe->mm.cgroup == nullptr) return 0;
  const uint64_t resident = resident_pages(fe->mm.front.base, fe->mm.front.file_bytes);
  if (Status s = fe->mm.cgroup->join(); !s.ok()) {
    bench.stop();
    bench.join();
    return bench.fail(1, "mmap backend: " + s.to_string());
  }
  fe->words =
      fmt::format(" cgroup={}({}B) file={}B resident_at_start={}B", fe->mm.cgroup->version(),
                  fe->budget, fe->mm.front.file_bytes, resident * 4096);
  return 0;
}

void leave_cgroup(Frontend* fe) {
  if (fe->mm.cgroup == nullptr) return;
  fe->words += fmt::format(" cgroup_usage_at_end={}B", fe->mm.cgroup->usage_bytes());
  (void)fe->mm.cgroup->leave();
}

void add_shared_budget_words(Frontend* fe) {
  if (fe->shared == nullptr) return;
  fe->words += fmt::format(" shared_budget(limit={}B used={}B", fe->shared->limit_bytes(),
                           fe->shared->used_bytes());
  for (const BudgetUsage& u : fe->shared->usage()) {
    fe->words += fmt::format(" {}={}B peak={}B overdraft={}B", u.tenant, u.tenant_bytes,
                             u.peak_bytes, u.overdraft_bytes);
  }
  fe->words += ")";
}

// The result line and the record; finish_report's code.
int report(const Bench& bench, const FarAppOptions& f, const Frontend& fe) {
  const bool local = f.backend == FrontendBackend::kLocal;
  const double ops = static_cast<double>(bench.ops()) / bench.seconds();
  const LatencyUs lat = latency_us(bench.histogram(0));
  const double pct =
      local ? 100.0 : 100.0 * static_cast<double>(fe.budget) / static_cast<double>(fe.working_set);
  const double load = load_average_1m();
  const std::string_view backend = name_of(kFrontendBackendNames, f.backend);
  fmt::print(
      "far frontend: backend={} local_memory={:.0f}% ({}B) ops/s={:.0f} p50={:.2f}us "
      "p99={:.2f}us threads={} coroutines={} objects={} keys={} keys_per_request={} "
      "zipf_theta={}{} load={:.2f}{}\n",
      backend, pct, local ? fe.working_set : fe.budget, ops, lat.p50, lat.p99, f.bench.threads,
      f.coroutines, fe.shape.objects, fe.shape.keys(), fe.shape.per_request, f.zipf_theta, fe.words,
      load, bench.result_suffix());
  auto rec = bench.report_record();
  rec["app"] = "frontend";
  rec["backend"] = backend;
  rec["local_memory_pct"] = pct;
  rec["ops_per_s"] = ops;
  rec["p99_us"] = lat.p99;
  rec["p50_us"] = lat.p50;
  rec["threads"] = f.bench.threads;
  rec["coroutines"] = f.coroutines;
  rec["objects"] = fe.shape.objects;
  rec["keys"] = fe.shape.keys();
  rec["keys_per_request"] = fe.shape.per_request;
  rec["zipf_theta"] = f.zipf_theta;
  rec["load_avg_1m"] = load;
  if (fe.mm.cgroup != nullptr) rec["cgroup"] = fe.mm.cgroup->version();
  if (fe.shared != nullptr) {
    rec["shared_budget_bytes"] = fe.shared->limit_bytes();
    for (const BudgetUsage& u : fe.shared->usage()) {
      rec["shared_" + u.tenant + "_bytes"] = u.tenant_bytes;
      rec["shared_" + u.tenant + "_peak_bytes"] = u.peak_bytes;
    }
  }
  if (fe.pg.manager != nullptr) {
    const paged::ManagerStats ps = fe.pg.manager->stats();
    rec["page_bytes"] = f.page_bytes;
    rec["page_faults"] = ps.total.faults;
    rec["bytes_fetched"] = ps.total.bytes_fetched;
  }
  return bench.finish_report(rec);
}

}  // namespace

int run_frontend(const FarAppOptions& f) {
  Bench bench("far frontend", f.bench, {"request"});
  Frontend fe;
  if (int rc = plan(bench, f, &fe); rc != 0) return rc;
  if (int rc = bench.connect(fe.working_set * 2 + (512ull << 20)); rc != 0) return rc;
  if (int rc = prepare(bench, f, &fe); rc != 0) return rc;
  bench.start_threads(
      [&f, &fe](BenchThread& t, client::ThreadClient* c) { frontend_thread(f, &fe, t, c); });
  bench.wait_arrived();
  if (!bench.first_error().ok()) return bench.fail(1, bench.first_error().to_string());
  if (int rc = join_cgroup(bench, &fe); rc != 0) return rc;
  bench.run_timed(ProgressFormat{});
  leave_cgroup(&fe);
  if (!bench.first_error().ok()) return bench.fail(1, bench.first_error().to_string());
  add_shared_budget_words(&fe);
  return report(bench, f, fe);
}

}  // namespace farmem::bench
