// `farmem bench far`: the far-object benchmarks of issue 13.
//
//   cold-path  latency of a miss (64 B and 4 KiB objects), of a hit, and of a raw one-sided read
//              of the same size in the same run (ThreadClient::read of equally cold far bytes
//              into local memory: the ratio's reference), and ucx_perftest's latency for the
//              size (one cache-resident buffer; a round trip of messages over TCP)
//   frontend   AIFM's web front end (its fig. 6 program): a far hash table of --keys entries
//              indexing a far array of --objects 8 KiB objects; each request picks one of
//              keys / --keys-per-request requests from a Zipfian distribution (--zipf-theta),
//              looks up its --keys-per-request keys (AIFM: 32), sums their values into the index
//              of the object it reads and compresses that object with LZ4 (every value and the
//              sum are checked); --backend far (local budget --local-memory), local
//              (std containers) or mmap (the paged baseline: the same table and objects in a
//              file mapped by the program, inside a memory cgroup limited to the budget, the
//              file's page cache dropped first; page faults block the thread) or paged (the
//              same layout in a paged far-memory region, farmem::paged, with the budget as its
//              local buffer and --page-bytes pages: the page-granular design AIFM compares with)
//   analytics  a columnar trip table of --rows rows in far vectors; two queries (filtered
//              group-by aggregate; top-10 fares), once fetching the columns through the cache
//              and once with remote compute: bytes moved and seconds
#include "bench_far.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <lz4.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "bench_harness.h"
#include "farmem/common/clock.h"
#include "farmem/common/local_budget.h"
#include "farmem/common/units.h"
#include "farmem/far/array.h"
#include "farmem/far/cached_hash_table.h"
#include "farmem/far/far_ptr.h"
#include "farmem/far/vector.h"
#include "farmem/paged/page_manager.h"
#include "farmem/workload/key_format.h"
#include "farmem/workload/scrambled_zipfian_chooser.h"
#include "memory_cgroup.h"

namespace farmem::apps {

CLI::Validator bytes_unit();

namespace {

using runtime::Task;

// --local-memory: "N%" of the working set, or a size.
Result<uint64_t> local_budget(const std::string& spec, uint64_t working_set) {
  if (!spec.empty() && spec.back() == '%') {
    double pct = std::atof(spec.c_str());
    if (pct <= 0 || pct > 1000) return InvalidArgument("--local-memory percentage out of range");
    return static_cast<uint64_t>(static_cast<double>(working_set) * pct / 100);
  }
  return parse_bytes(spec);
}

double median_ns(std::vector<uint64_t>* cycles) {
  if (cycles->empty()) return 0;
  std::nth_element(cycles->begin(), cycles->begin() + cycles->size() / 2, cycles->end());
  return cycles_to_ns((*cycles)[cycles->size() / 2]);
}

// ---------------------------------------------------------------- cold path

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
    if (!p.ok()) co_return p.status();
    objs.push_back(std::move(*p));
  }
  auto left = co_await cache->evict_all();
  if (!left.ok()) co_return left.status();
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  for (uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng->next_u64() % i]);
  std::vector<uint64_t> miss, hit, raw;
  uint64_t sink = 0;
  auto scope = co_await far::DerefScope::enter(*cache);
  if (!scope.ok()) co_return scope.status();
  for (uint64_t i : order) {  // misses: one read into the cache each
    const uint64_t t0 = cycles();
    auto r = co_await objs[i].deref(*scope);
    if (!r.ok()) co_return r.status();
    sink += (*r)->b[N - 1];
    miss.push_back(cycles() - t0);
  }
  for (uint64_t i : order) {  // hits
    const uint64_t t0 = cycles();
    auto r = co_await objs[i].deref(*scope);
    if (!r.ok()) co_return r.status();
    sink += (*r)->b[N - 1];
    hit.push_back(cycles() - t0);
  }
  std::vector<uint8_t> buf(N);
  for (uint64_t i : order) {  // the raw one-sided read of the same far bytes
    const uint64_t t0 = cycles();
    Status s = co_await cache->client()->read(objs[n + i].remote(), buf.data(), N);
    if (!s.ok()) co_return s;
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
  if (!m.ok()) return m.status();
  paged::RegionOptions ro;
  ro.page_bytes = page_bytes;
  ro.name = "cold-path";
  auto region = (*m)->allocate(pages * page_bytes, ro);
  if (!region.ok()) return region.status();
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

int run_cold_path(const BenchFarFlags& f) {
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
      double r[3];
      Status s = size == 64 ? (*tc)->run(cold_path_size<64>(&cache, n, &rng, r))
                            : (*tc)->run(cold_path_size<4096>(&cache, n, &rng, r));
      if (!s.ok()) return bench.fail(1, s.to_string());
      const std::string transport = (*tc)->transports();
      const bool tcp = transport.find("served") != std::string::npos;
      const double perftest = perftest_ns(tcp, size);
      // A page fault of the same size (the smallest page, 4 KiB, for the 64 B object).
      const uint64_t page = std::max<uint64_t>(size, paged::kMinPageBytes);
      auto fault = page_fault_ns(*bench.cluster(), page, std::min<uint64_t>(n, 20000), &rng);
      if (!fault.ok()) return bench.fail(1, "paged region: " + fault.status().to_string());
      double load[3] = {0, 0, 0};
      (void)::getloadavg(load, 3);
      fmt::print(
          "far cold-path: object={}B miss_p50={:.0f}ns hit_p50={:.1f}ns raw_read_p50={:.0f}ns "
          "miss/raw={:.2f} ucx_perftest_{}_p50={:.0f}ns page_fault_{}B_p50={:.0f}ns transport={} "
          "load={:.2f}{}\n",
          size, r[0], r[1], r[2], r[0] / r[2], tcp ? "am_rtt" : "get", perftest, page, *fault,
          transport, load[0], bench.result_suffix());
      auto rec = bench.report_record();
      rec["app"] = "cold-path";
      rec["object_bytes"] = size;
      rec["transport"] = transport;
      rec["miss_p50_ns"] = r[0];
      rec["hit_p50_ns"] = r[1];
      rec["raw_read_p50_ns"] = r[2];
      rec["page_fault_p50_ns"] = *fault;
      rec["page_fault_page_bytes"] = page;
      if (perftest >= 0) {
        rec[tcp ? "ucx_perftest_am_rtt_p50_ns" : "ucx_perftest_get_p50_ns"] = perftest;
      }
      rec["load_avg_1m"] = load[0];
      rec["objects"] = n;
      rc |= bench.finish_report(rec);
    }
  }
  bench.cluster()->release_thread_client();
  return rc;
}

// ---------------------------------------------------------------- front end

constexpr size_t kItemBytes = 8192;
struct Item {
  std::array<uint8_t, kItemBytes> b;
};

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

// The request shape (AIFM's web front end): request r owns the key indices r * per_request + j
// for j < per_request; index r * per_request maps to r, the others to 0, so the sum of a
// request's values is r and it reads object r % objects. A request is drawn from a Zipfian over
// the requests. Keys are the indices scrambled by a bijective mix (AIFM's are random strings)
// and are loaded in a shuffled order (load_order), so that no backend finds a request's keys
// next to each other (std::hash of an integer is the integer, and nodes inserted in index order
// would sit side by side).
struct FrontShape {
  uint64_t per_request = 1;
  uint64_t requests = 1;
  uint64_t objects = 1;
  uint64_t keys() const { return per_request * requests; }
  uint64_t key(uint64_t r, uint64_t j) const { return key_of(r * per_request + j); }
  uint64_t key_of(uint64_t index) const { return workload::scramble_index(index); }
  uint64_t value_of(uint64_t index) const {
    return index % per_request == 0 ? index / per_request : 0;
  }
};

// The key indices in the order every backend loads them (a seeded shuffle).
std::vector<uint64_t> load_order(const FrontShape& shape, uint64_t seed) {
  std::vector<uint64_t> order(shape.keys());
  for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
  workload::Rng rng(seed);
  for (uint64_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next_u64() % i]);
  return order;
}

// What a lookup that finds no key adds to a request's sum: a value no sum of right values
// reaches, so object_of() fails the request.
constexpr uint64_t kMissingKeyValue = uint64_t{1} << 63;

// Checks a request's value sum (every key found, every value right) and names its object.
Result<uint64_t> object_of(const FrontShape& shape, uint64_t r, uint64_t sum) {
  if (sum != r) return Internal(fmt::format("front end: request {} summed to {}", r, sum));
  return r % shape.objects;
}

struct FarFront {
  FrontShape shape;
  const std::vector<uint64_t>* order;  // load order of the key indices
  far::CachedHashTable<uint64_t, uint64_t>* table;
  far::Array<Item>* items;
  far::ThreadCache* cache;
};

// The sum of request r's values, looked up in the far table.
Task<Result<uint64_t>> far_lookups(const FarFront& fe, uint64_t r) {
  uint64_t sum = 0;
  for (uint64_t j = 0; j < fe.shape.per_request; ++j) {
    auto v = co_await fe.table->find(fe.shape.key(r, j));
    if (!v.ok()) co_return v.status();
    if (!v->has_value()) co_return Internal("front end: key missing");
    sum += **v;
  }
  co_return sum;
}

Task<void> far_client(BenchThread* t, FarFront fe,
                      const workload::ScrambledZipfianChooser* requests, uint64_t stream) {
  workload::Rng rng = workload::Rng::for_thread(t->seed(), t->index() * 1024 + stream);
  std::vector<char> out(LZ4_compressBound(kItemBytes));
  while (t->running()) {
    const uint64_t t0 = cycles();
    const uint64_t r = requests->next(rng);
    auto sum = co_await far_lookups(fe, r);
    Result<uint64_t> idx = sum.ok() ? object_of(fe.shape, r, *sum) : sum.status();
    if (!idx.ok()) {
      t->fail(idx.status());
      co_return;
    }
    auto scope = co_await far::DerefScope::enter(*fe.cache);
    if (!scope.ok()) {
      t->fail(scope.status());
      co_return;
    }
    auto item = co_await fe.items->at(*scope, *idx);
    if (!item.ok()) {
      t->fail(item.status());
      co_return;
    }
    if (compress((*item)->b.data(), &out) <= 0) t->fail(Internal("lz4 failed"));
    t->record(0, cycles() - t0);
    t->completed();
  }
}

Task<Status> far_load(FarFront fe) {
  Item it;
  for (uint64_t i = 0; i < fe.shape.objects; ++i) {
    make_item(i, &it);
    Status s = co_await fe.items->write(i, it);
    if (!s.ok()) co_return s;
  }
  for (uint64_t i : *fe.order) {
    Status s = co_await fe.table->put(fe.shape.key_of(i), fe.shape.value_of(i));
    if (!s.ok()) co_return s;
  }
  co_return OkStatus();
}

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

void local_client(BenchThread* t, const LocalFront* fe,
                  const workload::ScrambledZipfianChooser* requests) {
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

// The paged baseline's file: the table (open addressing, kMmapSlotBytes slots {key + 1, value},
// capacity a power of two >= 2 x keys, probing from far::hash_key like the far table), then the
// items, each 8 KiB, page aligned.
constexpr uint64_t kMmapSlotBytes = 16;
struct MmapFront {
  const uint8_t* base = nullptr;
  uint64_t mask = 0;      // table slots - 1
  uint64_t items_at = 0;  // byte offset of item 0
  uint64_t file_bytes = 0;
};

uint64_t mmap_table_slots(uint64_t keys) {
  uint64_t n = 1;
  while (n < 2 * keys) n <<= 1;
  return n;
}

// The layout's geometry (base left null): table slots, where the items start, the total size.
MmapFront front_layout(const FrontShape& shape) {
  MmapFront m;
  const uint64_t slots = mmap_table_slots(shape.keys());
  m.mask = slots - 1;
  m.items_at = (slots * kMmapSlotBytes + 4095) & ~uint64_t{4095};
  m.file_bytes = m.items_at + shape.objects * kItemBytes;
  return m;
}

// Lays out the table and the items (m's fields are set) through put(bytes, n, at) -> bool.
template <typename Put>
Status write_front(const FrontShape& shape, const std::vector<uint64_t>& order, MmapFront* m,
                   Put put) {
  *m = front_layout(shape);
  const uint64_t slots = m->mask + 1;
  const uint64_t objects = shape.objects;
  std::vector<uint64_t> table(2 * slots, 0);
  for (uint64_t i : order) {
    const uint64_t k = shape.key_of(i);
    if (k + 1 == 0) return Internal("front end: a key is the empty-slot mark; change --keys");
    uint64_t b = far::hash_key(&k, sizeof(k)) & m->mask;
    while (table[2 * b] != 0) b = (b + 1) & m->mask;
    table[2 * b] = k + 1;
    table[2 * b + 1] = shape.value_of(i);
  }
  if (!put(table.data(), slots * kMmapSlotBytes, 0))
    return Internal("writing the front end's table");
  Item it;
  for (uint64_t i = 0; i < objects; ++i) {
    make_item(i, &it);
    if (!put(it.b.data(), kItemBytes, m->items_at + i * kItemBytes)) {
      return Internal("writing the front end's items");
    }
  }
  return OkStatus();
}

// Writes the file (the page cache it fills is then written back and dropped).
Status write_mmap_file(int fd, const FrontShape& shape, const std::vector<uint64_t>& order,
                       MmapFront* m) {
  Status s = write_front(shape, order, m, [fd](const void* p, uint64_t n, uint64_t at) {
    return ::pwrite(fd, p, n, static_cast<off_t>(at)) == static_cast<ssize_t>(n);
  });
  if (!s.ok()) return s;
  if (::fdatasync(fd) != 0 || ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) {
    return Internal("dropping the mmap file's page cache");
  }
  return OkStatus();
}

// The paged version: the same layout in a paged region whose local buffer is the budget,
// written through the region (pages beyond the budget are written back as it fills).
struct PagedRun {
  std::unique_ptr<paged::PageManager> manager;
  MmapFront front;
};

Status prepare_paged(const BenchFarFlags& f, client::Cluster& cluster, const FrontShape& shape,
                     const std::vector<uint64_t>& order, uint64_t budget, LocalBudget* shared,
                     PagedRun* r) {
  paged::PageManagerOptions mo;
  mo.local_bytes = budget;
  mo.shared_budget = shared;
  auto m = paged::PageManager::create(cluster, mo);
  if (!m.ok()) return m.status();
  r->manager = std::move(*m);
  const uint64_t bytes = front_layout(shape).file_bytes;
  paged::RegionOptions ro;
  ro.page_bytes = f.page_bytes;
  ro.name = "frontend";
  auto region = r->manager->allocate(bytes, ro);
  if (!region.ok()) return region.status();
  auto* base = static_cast<uint8_t*>((*region)->data());
  Status s = write_front(shape, order, &r->front, [base](const void* p, uint64_t n, uint64_t at) {
    std::memcpy(base + at, p, n);
    return true;
  });
  if (!s.ok()) return s;
  r->front.base = base;
  return (*region)->flush();
}

// Pages of [p, p + bytes) resident now.
uint64_t resident_pages(const void* p, uint64_t bytes) {
  const uint64_t pages = (bytes + 4095) / 4096;
  std::vector<unsigned char> v(pages);
  if (::mincore(const_cast<void*>(p), bytes, v.data()) != 0) return 0;
  uint64_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

// The value of `key` in the mapped table, or kMissingKeyValue.
uint64_t mapped_find(const MmapFront& m, uint64_t key) {
  uint64_t b = far::hash_key(&key, sizeof(key)) & m.mask;
  for (;;) {
    const auto* slot = reinterpret_cast<const uint64_t*>(m.base + b * kMmapSlotBytes);
    if (slot[0] == key + 1) return slot[1];
    if (slot[0] == 0) return kMissingKeyValue;
    b = (b + 1) & m.mask;
  }
}

void mmap_client(BenchThread* t, const FrontShape* shape, const MmapFront* m,
                 const workload::ScrambledZipfianChooser* requests) {
  workload::Rng rng = t->rng();
  std::vector<char> out(LZ4_compressBound(kItemBytes));
  while (t->running()) {
    const uint64_t t0 = cycles();
    const uint64_t r = requests->next(rng);
    uint64_t sum = 0;
    for (uint64_t j = 0; j < shape->per_request; ++j) sum += mapped_find(*m, shape->key(r, j));
    auto idx = object_of(*shape, r, sum);
    if (!idx.ok() || compress(m->base + m->items_at + *idx * kItemBytes, &out) <= 0) {
      t->fail(idx.ok() ? Internal("mapped front end: lz4 failed") : idx.status());
      return;
    }
    t->record(0, cycles() - t0);
    t->completed();
  }
}

// The mapping and the cgroup of the paged baseline, for one run.
struct MmapRun {
  std::string file;
  int fd = -1;
  MmapFront front;
  std::unique_ptr<MemoryCgroup> cgroup;
  ~MmapRun() {
    if (front.base != nullptr) ::munmap(const_cast<uint8_t*>(front.base), front.file_bytes);
    if (fd >= 0) ::close(fd);
    if (!file.empty()) ::unlink(file.c_str());
  }
};

Status prepare_mmap(const BenchFarFlags& f, const FrontShape& shape,
                    const std::vector<uint64_t>& order, uint64_t budget, MmapRun* r) {
  r->file = f.mmap_dir + fmt::format("/farmem-frontend-{}.dat", ::getpid());
  r->fd = ::open(r->file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (r->fd < 0) return Internal(fmt::format("cannot create {}", r->file));
  Status s = write_mmap_file(r->fd, shape, order, &r->front);
  if (!s.ok()) return s;
  void* p = ::mmap(nullptr, r->front.file_bytes, PROT_READ, MAP_SHARED, r->fd, 0);
  if (p == MAP_FAILED) return Internal("mmap of the front end's file failed");
  r->front.base = static_cast<const uint8_t*>(p);
  if (f.madvise == "random") ::madvise(p, r->front.file_bytes, MADV_RANDOM);
  auto g = MemoryCgroup::create(fmt::format("farmem-frontend-{}", ::getpid()), budget);
  if (!g.ok()) return g.status();
  r->cgroup = std::move(*g);
  return OkStatus();
}

void far_frontend_thread(const BenchFarFlags& f, const FrontShape& shape,
                         const std::vector<uint64_t>* order, far::ObjectManager* manager,
                         const workload::ScrambledZipfianChooser* requests, BenchThread& t,
                         client::ThreadClient* c) {
  far::ThreadCache cache(manager, c);
  uint32_t log2 = 1;
  while ((uint64_t{1} << log2) * 6 < shape.keys()) ++log2;  // <= 3/4 full buckets of 8
  auto table = c->run(far::CachedHashTable<uint64_t, uint64_t>::create(&cache, log2));
  auto items = c->run(far::Array<Item>::create(&cache, shape.objects, kItemBytes));
  if (!table.ok() || !items.ok()) {
    t.fail(table.ok() ? items.status() : table.status());
    return;
  }
  items->set_prefetch(false);  // random accesses
  FarFront fe{shape, order, &*table, &*items, &cache};
  Status s = c->run(far_load(fe));
  if (!s.ok()) {
    t.fail(s);
    return;
  }
  if (!t.arrive_and_wait()) return;
  for (uint32_t i = 0; i < f.coroutines; ++i) {
    Status sp = c->scheduler().spawn(far_client(&t, fe, requests, i));
    if (!sp.ok()) t.fail(sp);
  }
  c->scheduler().run_until_idle();
}

int run_frontend(const BenchFarFlags& f) {
  Bench bench("far frontend", f.bench, {"request"});
  FrontShape shape;
  shape.objects = f.objects != 0 ? f.objects : 32768;  // 256 MiB
  shape.per_request = f.keys_per_request;
  shape.requests = std::max<uint64_t>(1, f.keys / f.keys_per_request);
  const uint64_t objects = shape.objects;
  const uint64_t working_set = objects * kItemBytes + shape.keys() * 16;
  auto budget = local_budget(f.local_memory, working_set);
  if (!budget.ok()) return bench.fail(2, budget.status().to_string());
  const bool local = f.backend == "local";
  if (int rc = bench.connect(working_set * 2 + (512ull << 20)); rc != 0) return rc;
  workload::ScrambledZipfianChooser requests(shape.requests, f.zipf_theta);
  const std::vector<uint64_t> order = load_order(shape, f.bench.seed);
  // With --shared-budget the far or paged backend pays from a process-wide LocalBudget (the
  // path a process using both takes); its tenants' usage is printed at the end. It outlives both
  // managers.
  std::unique_ptr<LocalBudget> shared;
  if (f.shared_budget && (f.backend == "far" || f.backend == "paged")) {
    shared = std::make_unique<LocalBudget>(*budget);
  }
  std::unique_ptr<far::ObjectManager> manager;
  LocalFront lf{shape, {}, {}};
  MmapRun mm;
  PagedRun pg;
  if (local) {
    lf.items.resize(objects);
    for (uint64_t i = 0; i < objects; ++i) make_item(i, &lf.items[i]);
    lf.table.reserve(shape.keys());
    for (uint64_t i : order) lf.table[shape.key_of(i)] = shape.value_of(i);
  } else if (f.backend == "mmap") {
    Status s = prepare_mmap(f, shape, order, *budget, &mm);
    if (!s.ok()) return bench.fail(1, "mmap backend: " + s.to_string());
  } else if (f.backend == "paged") {
    Status s = prepare_paged(f, *bench.cluster(), shape, order, *budget, shared.get(), &pg);
    if (!s.ok()) return bench.fail(1, "paged backend: " + s.to_string());
  } else {
    far::ObjectManagerOptions mo;
    mo.local_bytes = *budget;
    mo.shared_budget = shared.get();
    auto m = far::ObjectManager::create(mo);
    if (!m.ok()) return bench.fail(2, m.status().to_string());
    manager = std::move(*m);
  }
  bench.start_threads([&](BenchThread& t, client::ThreadClient* c) {
    if (manager != nullptr) {
      return far_frontend_thread(f, shape, &order, manager.get(), &requests, t, c);
    }
    if (!t.arrive_and_wait()) return;
    if (local) return local_client(&t, &lf, &requests);
    mmap_client(&t, &shape, pg.manager != nullptr ? &pg.front : &mm.front, &requests);
  });
  bench.wait_arrived();
  if (!bench.first_error().ok()) return bench.fail(1, bench.first_error().to_string());
  std::string paged;
  if (mm.cgroup != nullptr) {
    // Every thread is set up: from here on the process's new pages (the file's) are charged to
    // a cgroup of the budget.
    const uint64_t resident = resident_pages(mm.front.base, mm.front.file_bytes);
    if (Status s = mm.cgroup->join(); !s.ok()) {
      bench.stop();
      bench.join();
      return bench.fail(1, "mmap backend: " + s.to_string());
    }
    paged = fmt::format(" cgroup={}({}B) file={}B resident_at_start={}B", mm.cgroup->version(),
                        *budget, mm.front.file_bytes, resident * 4096);
  }
  bench.run_timed(ProgressFormat{});
  if (mm.cgroup != nullptr) {
    paged += fmt::format(" cgroup_usage_at_end={}B", mm.cgroup->usage_bytes());
    (void)mm.cgroup->leave();
  }
  if (!bench.first_error().ok()) return bench.fail(1, bench.first_error().to_string());
  const double ops = static_cast<double>(bench.ops()) / bench.seconds();
  const LatencyUs lat = latency_us(bench.histogram(0));
  const double pct =
      local ? 100.0 : 100.0 * static_cast<double>(*budget) / static_cast<double>(working_set);
  double load[3] = {0, 0, 0};
  (void)::getloadavg(load, 3);
  if (shared != nullptr) {
    paged += fmt::format(" shared_budget(limit={}B used={}B", shared->limit_bytes(),
                         shared->used_bytes());
    for (const BudgetUsage& u : shared->usage()) {
      paged += fmt::format(" {}={}B peak={}B overdraft={}B", u.tenant, u.tenant_bytes, u.peak_bytes,
                           u.overdraft_bytes);
    }
    paged += ")";
  }
  fmt::print(
      "far frontend: backend={} local_memory={:.0f}% ({}B) ops/s={:.0f} p50={:.2f}us "
      "p99={:.2f}us threads={} coroutines={} objects={} keys={} keys_per_request={} "
      "zipf_theta={}{} load={:.2f}{}\n",
      f.backend, pct, local ? working_set : *budget, ops, lat.p50, lat.p99, f.bench.threads,
      f.coroutines, objects, shape.keys(), shape.per_request, f.zipf_theta, paged, load[0],
      bench.result_suffix());
  auto rec = bench.report_record();
  rec["app"] = "frontend";
  rec["backend"] = f.backend;
  rec["local_memory_pct"] = pct;
  rec["ops_per_s"] = ops;
  rec["p99_us"] = lat.p99;
  rec["p50_us"] = lat.p50;
  rec["threads"] = f.bench.threads;
  rec["coroutines"] = f.coroutines;
  rec["objects"] = objects;
  rec["keys"] = shape.keys();
  rec["keys_per_request"] = shape.per_request;
  rec["zipf_theta"] = f.zipf_theta;
  rec["load_avg_1m"] = load[0];
  if (mm.cgroup != nullptr) rec["cgroup"] = mm.cgroup->version();
  if (shared != nullptr) {
    rec["shared_budget_bytes"] = shared->limit_bytes();
    for (const BudgetUsage& u : shared->usage()) {
      rec["shared_" + u.tenant + "_bytes"] = u.tenant_bytes;
      rec["shared_" + u.tenant + "_peak_bytes"] = u.peak_bytes;
    }
  }
  if (pg.manager != nullptr) {
    const paged::ManagerStats ps = pg.manager->stats();
    rec["page_bytes"] = f.page_bytes;
    rec["page_faults"] = ps.total.faults;
    rec["bytes_fetched"] = ps.total.bytes_fetched;
  }
  return bench.finish_report(rec);
}

// ---------------------------------------------------------------- analytics

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
    if (!s.ok()) co_return s;
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
  if (!scope.ok()) co_return scope.status();
  std::vector<std::pair<double, uint64_t>> top;
  for (uint64_t i = 0; i < n; ++i) {
    if (i % 4096 == 0) scope->renew();
    auto d = co_await t.distance->at(*scope, i);
    if (!d.ok()) co_return d.status();
    auto fv = co_await t.fare->at(*scope, i);
    if (!fv.ok()) co_return fv.status();
    if (**d > 10.0) {
      auto p = co_await t.passengers->at(*scope, i);
      if (!p.ok()) co_return p.status();
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
  if (!cells.ok()) co_return cells.status();
  for (size_t g = 0; g < cells->size(); ++g) {
    out->count_by_pax[g] = (*cells)[g].count;
    out->sum_by_pax[g] = (*cells)[g].count ? far::wire::from_bits<double>((*cells)[g].sum) : 0;
  }
  auto top = co_await t.fare->top_k(10);
  if (!top.ok()) co_return top.status();
  out->top = *top;
  co_return OkStatus();
}

int run_analytics(const BenchFarFlags& f) {
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
      auto flushed = (*tc)->run(cache.evict_all());  // start cold, all data far
      if (!flushed.ok()) return bench.fail(1, flushed.status().to_string());
      const far::CacheStats before = cache.stats();
      const uint64_t t0 = now_ns();
      s = mode == 0 ? (*tc)->run(queries_fetch(t, &results[0]))
                    : (*tc)->run(queries_offload(t, &results[1]));
      if (!s.ok()) return bench.fail(1, s.to_string());
      const double secs = static_cast<double>(now_ns() - t0) / 1e9;
      const far::CacheStats& after = cache.stats();
      const uint64_t moved = (after.fetch_bytes - before.fetch_bytes) +
                             (after.writeback_bytes - before.writeback_bytes) +
                             (after.rpc_bytes - before.rpc_bytes);
      const char* name = mode == 0 ? "fetch" : "offload";
      double load[3] = {0, 0, 0};
      (void)::getloadavg(load, 3);
      fmt::print(
          "far analytics: mode={} query=q1+q2 rows={} bytes_moved={} seconds={:.3f} "
          "local_memory={}B load={:.2f}{}\n",
          name, f.rows, moved, secs, mo.local_bytes, load[0], bench.result_suffix());
      auto rec = bench.report_record();
      rec["app"] = "analytics";
      rec["mode"] = name;
      rec["query"] = "q1_filter_groupby+q2_top10";
      rec["rows"] = f.rows;
      rec["bytes_moved"] = moved;
      rec["seconds"] = secs;
      rec["load_avg_1m"] = load[0];
      rc |= bench.finish_report(rec);
    }
    // Both modes must agree.
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
  }
  bench.cluster()->release_thread_client();
  return rc;
}

}  // namespace

CLI::App* add_bench_far(CLI::App* bench, BenchFarFlags* f) {
  CLI::App* sub = bench->add_subcommand("far", "far objects and containers (AIFM)");
  add_bench_flags(sub, &f->bench, "seconds (frontend)");
  sub->add_option("app", f->app, "cold-path | frontend | analytics")
      ->required()
      ->check(CLI::IsMember({"cold-path", "frontend", "analytics"}));
  sub->add_option("--local-memory", f->local_memory,
                  "local cache budget: BYTES or PCT% of the working set");
  sub->add_option("--coroutines", f->coroutines, "coroutines per thread (frontend)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--objects", f->objects,
                  "cold-path: objects per size; frontend: 8 KiB array objects");
  sub->add_option("--keys", f->keys, "frontend: hash-table entries")->check(CLI::Range(1, 1 << 28));
  sub->add_option("--keys-per-request", f->keys_per_request,
                  "frontend: hash-table lookups per request (AIFM: 32)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--zipf-theta", f->zipf_theta, "frontend: skew of the request popularity")
      ->check(CLI::Range(0.01, 0.999));
  sub->add_option("--rows", f->rows, "analytics: table rows")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 34));
  sub->add_option("--backend", f->backend, "frontend: far | local | mmap | paged")
      ->check(CLI::IsMember({"far", "local", "mmap", "paged"}));
  sub->add_option("--page-bytes", f->page_bytes, "frontend --backend paged: page size")
      ->transform(bytes_unit());
  sub->add_option("--mmap-dir", f->mmap_dir,
                  "frontend --backend mmap: directory of the mapped file (a disk file system)");
  sub->add_option("--madvise", f->madvise, "frontend --backend mmap: normal | random")
      ->check(CLI::IsMember({"normal", "random"}));
  sub->add_flag("--shared-budget", f->shared_budget,
                "frontend --backend far|paged: pay from a process-wide LocalBudget of the budget "
                "and print its tenants' usage");
  return sub;
}

int run_bench_far(const BenchFarFlags& f) {
  if (f.app == "cold-path") return run_cold_path(f);
  if (f.app == "frontend") return run_frontend(f);
  return run_analytics(f);
}

}  // namespace farmem::apps
