// The mmap and paged backends of `farmem bench far frontend` (frontend.h): the same layout of
// the table and the items, in a file the program maps (the paged baseline, inside a memory
// cgroup of the budget, the file's page cache dropped first: page faults block the thread) or
// in a paged far-memory region (farmem::paged, the budget as its local buffer).
#include <fcntl.h>
#include <fmt/format.h>
#include <lz4.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "farmem/common/clock.h"
#include "farmem/far/cached_hash_table.h"
#include "frontend.h"

namespace farmem::bench {
namespace {

constexpr uint64_t kMmapSlotBytes = 16;

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
  FARMEM_TRY(s);
  if (::fdatasync(fd) != 0 || ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) {
    return Internal("dropping the mmap file's page cache");
  }
  return OkStatus();
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

}  // namespace

Status prepare_paged(const FarAppOptions& f, client::Cluster& cluster, const FrontShape& shape,
                     const std::vector<uint64_t>& order, uint64_t budget, LocalBudget* shared,
                     PagedRun* r) {
  paged::PageManagerOptions mo;
  mo.local_bytes = budget;
  mo.shared_budget = shared;
  auto m = paged::PageManager::create(cluster, mo);
  FARMEM_TRY(m);
  r->manager = std::move(*m);
  const uint64_t bytes = front_layout(shape).file_bytes;
  paged::RegionOptions ro;
  ro.page_bytes = f.page_bytes;
  ro.name = "frontend";
  auto region = r->manager->allocate(bytes, ro);
  FARMEM_TRY(region);
  auto* base = static_cast<uint8_t*>((*region)->data());
  Status s = write_front(shape, order, &r->front, [base](const void* p, uint64_t n, uint64_t at) {
    std::memcpy(base + at, p, n);
    return true;
  });
  FARMEM_TRY(s);
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

void mmap_client(BenchThread* t, const FrontShape* shape, const MmapFront* m,
                 const RequestChooser* requests) {
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

MmapRun::~MmapRun() {
  if (front.base != nullptr) ::munmap(const_cast<uint8_t*>(front.base), front.file_bytes);
  if (fd >= 0) ::close(fd);
  if (!file.empty()) ::unlink(file.c_str());
}

Status prepare_mmap(const FarAppOptions& f, const FrontShape& shape,
                    const std::vector<uint64_t>& order, uint64_t budget, MmapRun* r) {
  r->file = f.mmap_dir + fmt::format("/farmem-frontend-{}.dat", ::getpid());
  r->fd = ::open(r->file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (r->fd < 0) return Internal(fmt::format("cannot create {}", r->file));
  Status s = write_mmap_file(r->fd, shape, order, &r->front);
  FARMEM_TRY(s);
  void* p = ::mmap(nullptr, r->front.file_bytes, PROT_READ, MAP_SHARED, r->fd, 0);
  if (p == MAP_FAILED) return Internal("mmap of the front end's file failed");
  r->front.base = static_cast<const uint8_t*>(p);
  if (f.madvise == MmapAdvice::kRandom) ::madvise(p, r->front.file_bytes, MADV_RANDOM);
  auto g = bench::MemoryCgroup::create(fmt::format("farmem-frontend-{}", ::getpid()), budget);
  FARMEM_TRY(g);
  r->cgroup = std::move(*g);
  return OkStatus();
}

}  // namespace farmem::bench
