// The far backend of `farmem bench far frontend` (frontend.h): a far hash table of the keys and a
// far array of the items, created and loaded by each thread in its own cache of the run's
// Manager, then --coroutines clients per thread.
#include <lz4.h>

#include "farmem/common/clock.h"
#include "farmem/far/array.h"
#include "farmem/far/cached_hash_table.h"
#include "frontend.h"

namespace farmem::bench {
namespace {

using runtime::Task;

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
    FARMEM_CO_TRY(v);
    if (!v->has_value()) co_return Internal("front end: key missing");
    sum += **v;
  }
  co_return sum;
}

Task<void> far_client(BenchThread* t, FarFront fe, const RequestChooser* requests,
                      uint64_t stream) {
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
    FARMEM_CO_TRY(s);
  }
  for (uint64_t i : *fe.order) {
    Status s = co_await fe.table->put(fe.shape.key_of(i), fe.shape.value_of(i));
    FARMEM_CO_TRY(s);
  }
  co_return OkStatus();
}

}  // namespace

void far_frontend_thread(const FarAppOptions& f, const FrontShape& shape,
                         const std::vector<uint64_t>* order, far::ObjectManager* manager,
                         const RequestChooser* requests, BenchThread& t, client::ThreadClient* c) {
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

}  // namespace farmem::bench
