// What the backends of `farmem bench far frontend` (farmem/bench/far_apps.h: AIFM's web front
// end) share: the items, the request shape, the checks of a request's sum, and each backend's
// set-up and client loop (frontend.cc runs them: the local backend and the run; frontend_far.cc:
// far objects; frontend_mapped.cc: the mmap baseline and the paged region).
// Thread safety: the shapes and backends are read-only once prepared and shared by the run's
// threads; each client loop runs on its own thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "farmem/bench/baseline/memory_cgroup.h"
#include "farmem/bench/far_apps.h"
#include "farmem/bench/harness/bench.h"
#include "farmem/bench/workload/key_format.h"
#include "farmem/bench/workload/scrambled_zipfian_chooser.h"
#include "farmem/common/local_budget.h"
#include "farmem/far/object_manager.h"
#include "farmem/paged/page_manager.h"

namespace farmem::bench {

inline constexpr size_t kItemBytes = 8192;
struct Item {
  std::array<uint8_t, kItemBytes> b;
};

// Compressible text-like bytes (a few distinct words), different per item.
void make_item(uint64_t i, Item* it);
// LZ4 of one item into *out (sized LZ4_compressBound(kItemBytes)); the compressed size, <= 0 on
// failure.
int compress(const uint8_t* data, std::vector<char>* out);
// LZ4_compressBound(kItemBytes).
size_t compress_bound();

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
std::vector<uint64_t> load_order(const FrontShape& shape, uint64_t seed);

// What a lookup that finds no key adds to a request's sum: a value no sum of right values
// reaches, so object_of() fails the request.
inline constexpr uint64_t kMissingKeyValue = uint64_t{1} << 63;

// Checks a request's value sum (every key found, every value right) and names its object.
Result<uint64_t> object_of(const FrontShape& shape, uint64_t r, uint64_t sum);

using RequestChooser = workload::ScrambledZipfianChooser;

// ---- far backend (frontend_far.cc)

// A thread of the far backend: its far table and array (created and loaded by each thread in
// its own cache of `manager`), then --coroutines clients.
void far_frontend_thread(const FarAppOptions& f, const FrontShape& shape,
                         const std::vector<uint64_t>* order, far::ObjectManager* manager,
                         const RequestChooser* requests, BenchThread& t, client::ThreadClient* c);

// ---- mmap and paged backends (frontend_mapped.cc)

// The paged baseline's layout: the table (open addressing, 16-byte slots {key + 1, value},
// capacity a power of two >= 2 x keys, probing from far::hash_key like the far table), then the
// items, each 8 KiB, page aligned.
struct MmapFront {
  const uint8_t* base = nullptr;
  uint64_t mask = 0;      // table slots - 1
  uint64_t items_at = 0;  // byte offset of item 0
  uint64_t file_bytes = 0;
};

// The mapping and the cgroup of the paged baseline, for one run.
struct MmapRun {
  std::string file;
  int fd = -1;
  MmapFront front;
  std::unique_ptr<MemoryCgroup> cgroup;
  ~MmapRun();
};

// The paged version: the same layout in a paged region whose local buffer is the budget,
// written through the region (pages beyond the budget are written back as it fills).
struct PagedRun {
  std::unique_ptr<paged::PageManager> manager;
  MmapFront front;
};

Status prepare_mmap(const FarAppOptions& f, const FrontShape& shape,
                    const std::vector<uint64_t>& order, uint64_t budget, MmapRun* r);
Status prepare_paged(const FarAppOptions& f, client::Cluster& cluster, const FrontShape& shape,
                     const std::vector<uint64_t>& order, uint64_t budget, LocalBudget* shared,
                     PagedRun* r);
// Pages of [p, p + bytes) resident now.
uint64_t resident_pages(const void* p, uint64_t bytes);
// The client loop of the mmap and paged backends (the same layout).
void mmap_client(BenchThread* t, const FrontShape* shape, const MmapFront* m,
                 const RequestChooser* requests);

}  // namespace farmem::bench
