// The testing plugin (libfarmem_ado_testing.so): misbehaviour on request, for the isolation
// tests (tests/integration/kv/kv_ado_test.cc). Not for production pools.
//
// Launch parameters: refuse_launch=<text> makes launch() fail with that text; hang_file=<path> is
// created by tx-write:hang once its writes are done (a test's signal).
// Requests: abort (calls abort()), hang (sleeps forever), sleep:<ms>, echo:<text> (responds the
// text), respond:<n> (n responses of 1 KiB, layers 0..n-1), write:<text> (writes text at the
// start of the target value, in place), write-abort:<text> (writes it, then calls abort()), events
// (responds the op events and signals seen so far, one line each), status:<n> (returns n), erase-me
// (returns FARMEM_ADO_ERASE_TARGET), create:<key>:<bytes> / open:<key> / erase:<key> / unlock:<key>
// (store callbacks: responds the status and the value's length), params (responds key=value lines),
// pid (responds the process id), tx-write:<mode>:<key>:<text> (transactions: see tx_write).
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/kv/ado_plugin.h"

namespace {

struct Testing {
  farmem_ado_store* store;
  const farmem_ado_store_ops* ops;
  std::string events;
  std::string params;
  std::string hang_file;  // hang_file=<path>: tx-write:hang creates it once its writes are done
};

void say(Testing* t, const farmem_ado_work* w, std::string_view text) {
  t->ops->respond(t->store, w->work_id, 0, text.data(), text.size());
}

int64_t number(std::string_view s) { return std::strtoll(std::string(s).c_str(), nullptr, 10); }

// Whether *s starts with `prefix`; if so, the prefix is taken off.
bool take_prefix(std::string_view* s, std::string_view prefix) {
  if (!s->starts_with(prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

int32_t callback(Testing* t, const farmem_ado_work* w, std::string_view req) {
  size_t colon = req.find(':');
  std::string_view op = req.substr(0, colon);
  std::string_view arg = colon == std::string_view::npos ? "" : req.substr(colon + 1);
  std::string key(arg);
  uint64_t bytes = 0;
  if (op == "create") {
    size_t c2 = arg.find(':');
    key = std::string(arg.substr(0, c2));
    bytes = c2 == std::string_view::npos ? 0 : static_cast<uint64_t>(number(arg.substr(c2 + 1)));
  }
  farmem_ado_value v{};
  int32_t s = FARMEM_ADO_E_INVALID;
  uint32_t kb = static_cast<uint32_t>(key.size());
  if (op == "create") s = t->ops->create_key(t->store, w->work_id, key.data(), kb, bytes, &v);
  if (op == "open") {
    s = t->ops->open_key(t->store, w->work_id, key.data(), kb, FARMEM_ADO_LOCK_WRITE, &v);
  }
  if (op == "erase") s = t->ops->erase_key(t->store, key.data(), kb);
  if (op == "unlock") s = t->ops->unlock_key(t->store, w->work_id, key.data(), kb);
  std::string out = "status=";
  out.append(std::to_string(s)).append(" bytes=").append(std::to_string(v.bytes));
  if (s != FARMEM_ADO_OK) out.append(" error=").append(t->ops->last_error(t->store));
  say(t, w, out);
  return FARMEM_ADO_OK;
}

// tx-write:<mode>:<key>:<text>: writes text at the start of the target and of `key` (opened for
// writing), each after tx_add; then by mode: commit (returns), crash (abort()), hang (sleeps
// forever), undo (tx_abort, then returns), resize (resize_value of the target: responds its
// status), outside (tx_add of the request's own bytes: responds its status).
int32_t tx_write(Testing* t, const farmem_ado_work* w, std::string_view req) {
  const size_t c1 = req.find(':');
  const size_t c2 = c1 == std::string_view::npos ? c1 : req.find(':', c1 + 1);
  if (c2 == std::string_view::npos || w->value_count == 0) return FARMEM_ADO_E_INVALID;
  const std::string_view mode = req.substr(0, c1);
  const std::string key(req.substr(c1 + 1, c2 - c1 - 1));
  const std::string_view text = req.substr(c2 + 1);
  farmem_ado_value other{};
  int32_t s = t->ops->open_key(t->store, w->work_id, key.data(), static_cast<uint32_t>(key.size()),
                               FARMEM_ADO_LOCK_WRITE, &other);
  if (s != FARMEM_ADO_OK) return s;
  if (w->values[0].bytes < text.size() || other.bytes < text.size()) return FARMEM_ADO_E_INVALID;
  for (const farmem_ado_value* v : {&w->values[0], static_cast<const farmem_ado_value*>(&other)}) {
    s = t->ops->tx_add(t->store, w->work_id, v->data, text.size());
    if (s != FARMEM_ADO_OK) return s;
    std::memcpy(v->data, text.data(), text.size());
  }
  if (mode == "crash") std::abort();
  if (mode == "hang") {
    if (!t->hang_file.empty()) close(open(t->hang_file.c_str(), O_CREAT | O_WRONLY, 0644));
    for (;;) pause();
  }
  if (mode == "undo") return t->ops->tx_abort(t->store, w->work_id);
  if (mode == "resize") {
    farmem_ado_value v{};
    s = t->ops->resize_value(t->store, w->work_id, w->key, w->key_bytes, w->values[0].bytes + 8,
                             &v);
    say(t, w, "status=" + std::to_string(s));
  }
  if (mode == "outside") {
    s = t->ops->tx_add(t->store, w->work_id, w->request, w->request_bytes);
    say(t, w, "status=" + std::to_string(s));
  }
  return FARMEM_ADO_OK;
}

void* launch(const farmem_ado_launch* l, farmem_ado_store* store, const farmem_ado_store_ops* ops,
             char* error, uint32_t error_capacity) {
  auto* t = new Testing{store, ops, {}, {}, {}};
  for (uint32_t i = 0; i < l->param_count; ++i) {
    std::string_view k = l->params[i].key;
    std::string_view v = l->params[i].value;
    t->params.append(k).append("=").append(v).append("\n");
    if (k == "hang_file") t->hang_file = v;
    if (k == "refuse_launch") {
      std::string text(v);
      std::strncpy(error, text.c_str(), error_capacity - 1);
      error[error_capacity - 1] = '\0';
      delete t;
      return nullptr;
    }
  }
  if (l->flags & FARMEM_ADO_LAUNCH_NEW_POOL) t->events += "launch new\n";
  return t;
}

int32_t do_work(void* self, const farmem_ado_work* w) {
  auto* t = static_cast<Testing*>(self);
  std::string_view req(reinterpret_cast<const char*>(w->request), w->request_bytes);
  if (w->flags & FARMEM_ADO_WORK_SIGNAL) {
    t->events.append("signal ").append(std::to_string(w->signal)).append(" ");
    t->events.append(reinterpret_cast<const char*>(w->key), w->key_bytes).append("\n");
    return FARMEM_ADO_OK;
  }
  if (req == "abort") std::abort();
  if (req == "hang") {
    for (;;) pause();
  }
  if (take_prefix(&req, "sleep:")) {
    usleep(static_cast<useconds_t>(number(req) * 1000));
    say(t, w, "slept");
    return FARMEM_ADO_OK;
  }
  if (take_prefix(&req, "echo:")) {
    say(t, w, req);
    return FARMEM_ADO_OK;
  }
  if (take_prefix(&req, "respond:")) {
    int64_t n = number(req);
    std::vector<char> kib(1024, 'r');
    for (int64_t i = 0; i < n; ++i) {
      int32_t s =
          t->ops->respond(t->store, w->work_id, static_cast<uint32_t>(i), kib.data(), kib.size());
      if (s != FARMEM_ADO_OK) return s;
    }
    return FARMEM_ADO_OK;
  }
  if (take_prefix(&req, "tx-write:")) return tx_write(t, w, req);
  if (take_prefix(&req, "write-abort:")) {  // a crash in the middle of an update
    if (w->value_count == 0 || w->values[0].bytes < req.size()) return FARMEM_ADO_E_INVALID;
    std::memcpy(w->values[0].data, req.data(), req.size());
    std::abort();
  }
  if (take_prefix(&req, "write:")) {
    std::string_view text = req;
    if (w->value_count == 0 || w->values[0].bytes < text.size()) return FARMEM_ADO_E_INVALID;
    std::memcpy(w->values[0].data, text.data(), text.size());
    say(t, w, "wrote");
    return FARMEM_ADO_OK;
  }
  if (req == "events") {
    say(t, w, t->events);
    return FARMEM_ADO_OK;
  }
  if (req == "pid") {
    say(t, w, std::to_string(getpid()));
    return FARMEM_ADO_OK;
  }
  if (req == "params") {
    say(t, w, t->params);
    return FARMEM_ADO_OK;
  }
  if (take_prefix(&req, "status:")) return static_cast<int32_t>(number(req));
  if (req == "erase-me") return FARMEM_ADO_ERASE_TARGET;
  if (req.starts_with("create:") || req.starts_with("open:") || req.starts_with("erase:") ||
      req.starts_with("unlock:")) {
    return callback(t, w, req);
  }
  return FARMEM_ADO_NOT_MINE;
}

void op_event(void* self, uint32_t event, const void* key, uint32_t key_bytes) {
  auto* t = static_cast<Testing*>(self);
  t->events.append("event ").append(std::to_string(event));
  if (key != nullptr) t->events.append(" ").append(static_cast<const char*>(key), key_bytes);
  t->events.append("\n");
}

void shutdown(void* self) { delete static_cast<Testing*>(self); }

}  // namespace

FARMEM_ADO_PLUGIN("testing", &launch, &do_work, &op_event, &shutdown)
