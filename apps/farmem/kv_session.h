// What the commands of `farmem kv` share (kv_cmd.h): a connection with a Store, the pool a
// command works on, and how a failure becomes its line and exit code.
// Thread safety: the main thread.
#pragma once

#include <memory>

#include "farmem/client/cluster.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"
#include "kv_cmd.h"

namespace farmem::apps {

// The exit code of a status (kv_cmd.h).
int kv_exit_code(const Status& s);
// Prints "farmem kv <command>: <status>" to stderr; the exit code.
int kv_fail(const KvOptions& f, const Status& s);

// A connected thread with a Store.
struct KvSession {
  std::unique_ptr<client::Cluster> cluster;
  client::ThreadClient* client = nullptr;
  std::unique_ptr<kv::Store> store;
};

// Connects to --servers/--config (no local node: a pool lives on a real cluster) with a Store.
Status kv_connect(const KvOptions& f, KvSession* s);

// Opens f.pool; a missing pool becomes "no pool NAME (on node N)".
Result<std::unique_ptr<kv::Pool>> kv_open_pool(const KvOptions& f, KvSession* s, uint32_t flags);

// Connects, then runs `body` on the session; the exit code.
template <typename Body>
int with_session(const KvOptions& f, Body body) {
  KvSession s;
  if (Status st = kv_connect(f, &s); !st.ok()) return kv_fail(f, st);
  return body(&s);
}

// Connects and opens the pool (read-only for readers), runs `body` on it, closes it.
template <typename Body>
int with_pool(const KvOptions& f, bool reader, Body body) {
  return with_session(f, [&](KvSession* s) {
    auto p = kv_open_pool(f, s, reader ? kv::wire::kPoolReadOnly : 0);
    if (!p.ok()) return kv_fail(f, p.status());
    const int rc = body(p->get());
    Status st = runtime::sync_wait(s->store->close_pool(**p));
    if (!st.ok() && rc == kKvExitOk) return kv_fail(f, st);
    return rc;
  });
}

}  // namespace farmem::apps
