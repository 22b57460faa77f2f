// The commands of `farmem kv` on one pool (kv_cmd.h): put, get, erase, find, count, invoke,
// configure. Each opens the pool (read-only for get, find and count) and closes it after.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "kv_session.h"

namespace farmem::apps {
namespace {

Status key_absent(const KvOptions& f) {
  return NotFound(fmt::format("no key '{}' in pool '{}'", f.key, f.pool));
}

Result<std::string> value_of(const KvOptions& f) {
  if (f.value_file.empty()) return f.value;
  if (!f.value.empty()) return InvalidArgument("give the value or --value-file, not both");
  std::stringstream ss;
  if (f.value_file == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream in(f.value_file, std::ios::binary);
    if (!in) return InvalidArgument(fmt::format("cannot read {}", f.value_file));
    ss << in.rdbuf();
  }
  return ss.str();
}

int cmd_put(const KvOptions& f, kv::Pool* p) {
  auto value = value_of(f);
  if (!value.ok()) return kv_fail(f, value.status());
  uint8_t flags = (f.create_only ? kv::wire::kPutCreateOnly : 0) |
                  (f.dont_overwrite ? kv::wire::kPutDontOverwrite : 0);
  bool existed = false;
  Status st = runtime::sync_wait(p->put(f.key, *value, flags, &existed));
  if (!st.ok()) return kv_fail(f, st);
  if (existed) fmt::print(stderr, "key '{}' exists: its value was kept\n", f.key);
  return kKvExitOk;
}

int cmd_get(const KvOptions& f, kv::Pool* p) {
  std::string value;
  auto found = runtime::sync_wait(p->get(f.key, &value));
  if (!found.ok()) return kv_fail(f, found.status());
  if (!*found) return kv_fail(f, key_absent(f));
  std::cout.write(value.data(), static_cast<std::streamsize>(value.size()));
  if (!f.raw) std::cout << '\n';
  std::cout.flush();
  return kKvExitOk;
}

int cmd_erase(const KvOptions& f, kv::Pool* p) {
  Status st = runtime::sync_wait(p->erase(f.key));
  if (st.code() == StatusCode::kNotFound) st = key_absent(f);
  return st.ok() ? kKvExitOk : kv_fail(f, st);
}

int cmd_find(const KvOptions& f, kv::Pool* p) {
  uint64_t start = f.start, shown = 0;
  const bool single = f.expression.rfind("next:", 0) == 0 && f.limit == 0;
  for (;;) {
    auto m = runtime::sync_wait(p->find(f.expression, start));
    if (!m.ok()) {
      if (m.status().code() == StatusCode::kNotFound && shown > 0) return kKvExitOk;
      if (m.status().code() == StatusCode::kNotFound) {
        return kv_fail(f, NotFound(fmt::format("no key of pool '{}' at position >= {} matches '{}'",
                                               f.pool, f.start, f.expression)));
      }
      return kv_fail(f, m.status());
    }
    fmt::print("{} {}\n", m->position, m->key);
    ++shown;
    if ((f.limit > 0 && shown >= f.limit) || single) return kKvExitOk;
    start = m->position + 1;
  }
}

int cmd_count(const KvOptions& f, kv::Pool* p) {
  auto n = runtime::sync_wait(p->count());
  if (!n.ok()) return kv_fail(f, n.status());
  fmt::print("{}\n", *n);
  return kKvExitOk;
}

int cmd_invoke(const KvOptions& f, kv::Pool* p) {
  auto r = f.put_value.empty()
               ? runtime::sync_wait(p->invoke_ado(f.key, f.request, f.ado_flags, f.ado_value_size))
               : runtime::sync_wait(p->invoke_put_ado(f.key, f.put_value, f.request, f.ado_flags));
  if (!r.ok()) return kv_fail(f, r.status());
  fmt::print("plugin status {}, {} response(s)\n", r->plugin_status, r->responses.size());
  for (const auto& resp : r->responses) {
    fmt::print("[layer {}] {}\n", resp.layer, resp.data);
  }
  return r->plugin_status == 0 ? kKvExitOk : kKvExitError;
}

int cmd_configure(const KvOptions& f, kv::Pool* p) {
  Status st = runtime::sync_wait(p->configure(f.configure));
  if (!st.ok()) return kv_fail(f, st);
  fmt::print("pool '{}': {}\n", f.pool, f.configure);
  return kKvExitOk;
}

}  // namespace

int kv_put(const KvOptions& o) {
  return with_pool(o, false, [&](kv::Pool* p) { return cmd_put(o, p); });
}
int kv_get(const KvOptions& o) {
  return with_pool(o, true, [&](kv::Pool* p) { return cmd_get(o, p); });
}
int kv_erase(const KvOptions& o) {
  return with_pool(o, false, [&](kv::Pool* p) { return cmd_erase(o, p); });
}
int kv_find(const KvOptions& o) {
  return with_pool(o, true, [&](kv::Pool* p) { return cmd_find(o, p); });
}
int kv_count(const KvOptions& o) {
  return with_pool(o, true, [&](kv::Pool* p) { return cmd_count(o, p); });
}
int kv_invoke(const KvOptions& o) {
  return with_pool(o, false, [&](kv::Pool* p) { return cmd_invoke(o, p); });
}
int kv_configure(const KvOptions& o) {
  return with_pool(o, false, [&](kv::Pool* p) { return cmd_configure(o, p); });
}

}  // namespace farmem::apps
