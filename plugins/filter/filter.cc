// The filter plugin (libfarmem_ado_filter.so): a server-side filter/aggregate over the records
// of a pool, in place (filter_query.h has the query language and the answer's layout).
//
// A key-less invocation with a query walks the pool with iterate() (up to
// FARMEM_ADO_MAX_ITERATE_REFS records per callback), reads each record's fields straight from
// the pool's memory, and checks afterwards that the record did not change meanwhile
// (ref_is_current); a record that did is read again under a read lock (open_key, unlock_key),
// or skipped if it was erased. Only the answer travels back: a FilterResult, the top-k items
// and a text summary. Requests that do not parse as a query answer FARMEM_ADO_NOT_MINE.
#include <string>
#include <string_view>

#include "farmem/kv/ado_plugin.h"
#include "filter_query.h"

namespace {

namespace af = farmem::ado_filter;

struct Filter {
  farmem_ado_store* store;
  const farmem_ado_store_ops* ops;
};

// A record that changed while it was read: read it again under a read lock.
int32_t recheck(Filter* f, uint64_t work_id, const farmem_ado_ref& ref, af::Accumulator* acc) {
  std::string key(reinterpret_cast<const char*>(ref.key), ref.key_bytes);
  farmem_ado_value v{};
  int32_t s = f->ops->open_key(f->store, work_id, key.data(), static_cast<uint32_t>(key.size()),
                               FARMEM_ADO_LOCK_READ, &v);
  if (s == FARMEM_ADO_E_NOT_FOUND) return FARMEM_ADO_OK;  // erased meanwhile
  if (s != FARMEM_ADO_OK) return s;
  acc->note_recheck();
  if (acc->key_matches(key)) acc->add(key, v.data, v.bytes);
  return f->ops->unlock_key(f->store, work_id, key.data(), static_cast<uint32_t>(key.size()));
}

int32_t scan(Filter* f, const farmem_ado_work* w, const af::Query& q) {
  af::Accumulator acc(q);
  farmem_ado_ref refs[FARMEM_ADO_MAX_ITERATE_REFS];
  uint64_t cursor = 0;
  while (cursor != UINT64_MAX) {
    uint32_t n = 0;
    int32_t s = f->ops->iterate(f->store, &cursor, refs, FARMEM_ADO_MAX_ITERATE_REFS, &n);
    if (s != FARMEM_ADO_OK) return s;
    for (uint32_t i = 0; i < n; ++i) {
      const farmem_ado_ref& r = refs[i];
      std::string_view key(reinterpret_cast<const char*>(r.key), r.key_bytes);
      // Read first, then check that the record stayed the same; only then count it.
      bool match = acc.key_matches(key);
      af::Accumulator::Eval e;
      if (match) e = acc.evaluate(r.value, r.value_bytes);
      if (f->ops->ref_is_current(f->store, &r)) {
        if (match) acc.apply(key, e);
        continue;
      }
      s = recheck(f, w->work_id, r, &acc);
      if (s != FARMEM_ADO_OK) return s;
    }
  }
  const af::FilterResult& res = acc.result();
  std::string text = acc.summary();
  f->ops->respond(f->store, w->work_id, af::kLayerText, text.data(), text.size());
  f->ops->respond(f->store, w->work_id, af::kLayerResult, &res, sizeof(res));
  if (q.agg == af::Agg::kTop) {
    for (const auto& [value, key] : acc.top()) {
      std::string item(reinterpret_cast<const char*>(&value), sizeof(value));
      item += key;
      f->ops->respond(f->store, w->work_id, af::kLayerTop, item.data(), item.size());
    }
  }
  return FARMEM_ADO_OK;
}

void* launch(const farmem_ado_launch* l, farmem_ado_store* store, const farmem_ado_store_ops* ops,
             char* error, uint32_t error_capacity) {
  return new Filter{store, ops};
}

int32_t do_work(void* self, const farmem_ado_work* w) {
  if (w->flags & FARMEM_ADO_WORK_SIGNAL) return FARMEM_ADO_NOT_MINE;
  std::string_view req(reinterpret_cast<const char*>(w->request), w->request_bytes);
  af::Query q;
  std::string error;
  if (!af::parse_query(req, &q, &error)) return FARMEM_ADO_NOT_MINE;
  return scan(static_cast<Filter*>(self), w, q);
}

void shutdown(void* self) { delete static_cast<Filter*>(self); }

}  // namespace

FARMEM_ADO_PLUGIN("filter", &launch, &do_work, nullptr, &shutdown)
