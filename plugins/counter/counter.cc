// The counter plugin (libfarmem_ado_counter.so): small operations on one value, in place.
//
// Requests (text; the target key's value is the subject):
//   add:<n>       the value is an 8-byte little-endian signed counter (create it on demand
//                 with value_size 8, or it is created here): adds n; responds the new count
//                 (decimal text, layer 0)
//   transfer:<n>:<key>  moves n from the target counter to the counter `key` (opened for
//                 writing): responds both new counts ("<target> <key>"); both change or neither,
//                 even if the ADO process or the memory node dies in the middle (tx_add)
//   append:<text> appends text to the value (resize_value); responds the new length
//   read          responds the value's bytes
//   keys          responds the pool's key count (pool_info)
// Unknown requests answer FARMEM_ADO_NOT_MINE (the next plugin may take them). Errors answer a
// negative FARMEM_ADO_E_* and a text response saying why.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "farmem/kv/ado_plugin.h"

namespace {

struct Counter {
  farmem_ado_store* store;
  const farmem_ado_store_ops* ops;
};

// A counter value: one little-endian int64_t.
constexpr uint64_t kCounterBytes = sizeof(int64_t);

// Whether *s starts with `prefix`; if so, the prefix is taken off.
bool take_prefix(std::string_view* s, std::string_view prefix) {
  if (!s->starts_with(prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

int32_t reply(Counter* c, const farmem_ado_work* w, std::string_view text, int32_t status) {
  c->ops->respond(c->store, w->work_id, 0, text.data(), text.size());
  return status;
}

bool parse_int(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  bool negative = s.front() == '-';
  if (negative) s.remove_prefix(1);
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + (ch - '0');
  }
  *out = negative ? -v : v;
  return true;
}

// The value's old bytes into the invocation's undo log. A host without transactions, or a pool
// without an undo log (FARMEM_ADO_E_UNAVAILABLE: the node had no memory for it), changes values
// unprotected, as before transactions.
int32_t tx_add(Counter* c, const farmem_ado_work* w, const farmem_ado_value& v) {
  if (!FARMEM_ADO_HAS_TX(c->ops)) return FARMEM_ADO_OK;
  const int32_t s = c->ops->tx_add(c->store, w->work_id, v.data, v.bytes);
  return s == FARMEM_ADO_E_UNAVAILABLE ? FARMEM_ADO_OK : s;
}

int32_t do_add(Counter* c, const farmem_ado_work* w, std::string_view arg) {
  int64_t delta = 0;
  if (!parse_int(arg, &delta)) return reply(c, w, "add: not an integer", FARMEM_ADO_E_INVALID);
  if (w->flags & FARMEM_ADO_WORK_READ_ONLY) {
    return reply(c, w, "add: the value is read-locked", FARMEM_ADO_E_INVALID);
  }
  farmem_ado_value v = w->values[0];
  if (w->value_count == 0) return reply(c, w, "add: no target value", FARMEM_ADO_E_INVALID);
  if (v.bytes == 0) {  // an empty value becomes a counter
    int32_t s = c->ops->resize_value(c->store, w->work_id, w->key, w->key_bytes, kCounterBytes, &v);
    if (s != FARMEM_ADO_OK) return reply(c, w, c->ops->last_error(c->store), s);
  }
  if (v.bytes != kCounterBytes)
    return reply(c, w, "add: the value is not an 8-byte counter", FARMEM_ADO_E_INVALID);
  int32_t s = tx_add(c, w, v);
  if (s != FARMEM_ADO_OK) return reply(c, w, c->ops->last_error(c->store), s);
  int64_t count = 0;
  std::memcpy(&count, v.data, sizeof(count));
  count += delta;
  std::memcpy(v.data, &count, sizeof(count));
  return reply(c, w, std::to_string(count), FARMEM_ADO_OK);
}

// transfer:<n>:<key>: moves n from the target counter to the counter `key`, both or neither.
int32_t do_transfer(Counter* c, const farmem_ado_work* w, std::string_view arg) {
  const size_t colon = arg.find(':');
  int64_t n = 0;
  if (colon == std::string_view::npos || !parse_int(arg.substr(0, colon), &n)) {
    return reply(c, w, "transfer: expects transfer:<n>:<key>", FARMEM_ADO_E_INVALID);
  }
  const std::string_view key = arg.substr(colon + 1);
  if (w->value_count == 0 || (w->flags & FARMEM_ADO_WORK_READ_ONLY) ||
      w->values[0].bytes != kCounterBytes) {
    return reply(c, w, "transfer: the target must be a write-locked counter", FARMEM_ADO_E_INVALID);
  }
  if (key == std::string_view(reinterpret_cast<const char*>(w->key), w->key_bytes)) {
    return reply(c, w, "transfer: to the target itself", FARMEM_ADO_E_INVALID);
  }
  farmem_ado_value to{};
  int32_t s = c->ops->open_key(c->store, w->work_id, key.data(), static_cast<uint32_t>(key.size()),
                               FARMEM_ADO_LOCK_WRITE, &to);
  if (s != FARMEM_ADO_OK) return reply(c, w, c->ops->last_error(c->store), s);
  if (to.bytes != kCounterBytes) {
    return reply(c, w, "transfer: the other value is not an 8-byte counter", FARMEM_ADO_E_INVALID);
  }
  const farmem_ado_value& from = w->values[0];
  if ((s = tx_add(c, w, from)) != FARMEM_ADO_OK || (s = tx_add(c, w, to)) != FARMEM_ADO_OK) {
    return reply(c, w, c->ops->last_error(c->store), s);
  }
  int64_t a = 0, b = 0;
  std::memcpy(&a, from.data, sizeof(a));
  std::memcpy(&b, to.data, sizeof(b));
  a -= n;
  b += n;
  std::memcpy(from.data, &a, sizeof(a));
  std::memcpy(to.data, &b, sizeof(b));
  return reply(c, w, std::to_string(a) + " " + std::to_string(b), FARMEM_ADO_OK);
}

int32_t do_append(Counter* c, const farmem_ado_work* w, std::string_view text) {
  if (w->value_count == 0 || (w->flags & FARMEM_ADO_WORK_READ_ONLY)) {
    return reply(c, w, "append: needs a write-locked target value", FARMEM_ADO_E_INVALID);
  }
  uint64_t old_bytes = w->values[0].bytes;
  farmem_ado_value v{};
  int32_t s =
      c->ops->resize_value(c->store, w->work_id, w->key, w->key_bytes, old_bytes + text.size(), &v);
  if (s != FARMEM_ADO_OK) return reply(c, w, c->ops->last_error(c->store), s);
  std::memcpy(v.data + old_bytes, text.data(), text.size());
  return reply(c, w, std::to_string(v.bytes), FARMEM_ADO_OK);
}

void* launch(const farmem_ado_launch* l, farmem_ado_store* store, const farmem_ado_store_ops* ops,
             char* error, uint32_t error_capacity) {
  return new Counter{store, ops};
}

int32_t do_work(void* self, const farmem_ado_work* w) {
  auto* c = static_cast<Counter*>(self);
  if (w->flags & FARMEM_ADO_WORK_SIGNAL) return FARMEM_ADO_NOT_MINE;
  std::string_view req(reinterpret_cast<const char*>(w->request), w->request_bytes);
  if (take_prefix(&req, "add:")) return do_add(c, w, req);
  if (take_prefix(&req, "append:")) return do_append(c, w, req);
  if (take_prefix(&req, "transfer:")) return do_transfer(c, w, req);
  if (req == "read") {
    if (w->value_count == 0) return reply(c, w, "read: no target value", FARMEM_ADO_E_INVALID);
    c->ops->respond(c->store, w->work_id, 0, w->values[0].data, w->values[0].bytes);
    return FARMEM_ADO_OK;
  }
  if (req == "keys") {
    farmem_ado_pool_info info{};
    int32_t s = c->ops->pool_info(c->store, &info);
    if (s != FARMEM_ADO_OK) return reply(c, w, c->ops->last_error(c->store), s);
    return reply(c, w, std::to_string(info.count), FARMEM_ADO_OK);
  }
  return FARMEM_ADO_NOT_MINE;
}

void shutdown(void* self) { delete static_cast<Counter*>(self); }

}  // namespace

FARMEM_ADO_PLUGIN("counter", &launch, &do_work, nullptr, &shutdown)
