// A recorded history of key-value operations for tools/lincheck (Porcupine): what each client
// called, when, and what it got. Shared by the hash-table and B+tree linearizability tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "farmem/common/clock.h"
#include "farmem/runtime/task.h"
#include "harness.h"

namespace farmem::testing {

struct HistoryOp {
  int client;
  std::string op, key, value;
  bool ok = false;
  bool unknown = false;
  int64_t call = 0, ret = 0;
  std::string error;     // why the outcome is unknown
  int64_t deadline = 0;  // unknown only: it took effect before then or never (0: any time)
};

struct History {
  std::mutex mu;
  std::vector<HistoryOp> ops;
  void add(HistoryOp op) {
    std::lock_guard<std::mutex> lock(mu);
    ops.push_back(std::move(op));
  }
  std::string write(const std::string& path) {
    std::ofstream f(path);
    for (const auto& o : ops) {
      nlohmann::json j = {{"client", o.client}, {"op", o.op}, {"key", o.key}, {"call", o.call}};
      if (o.unknown) {
        j["unknown"] = true;
        if (o.op != "erase" && o.op != "get") j["value"] = o.value;  // lincheck needs the input
        if (o.deadline != 0) j["deadline"] = o.deadline;
      } else {
        j["ok"] = o.ok;
        j["return"] = o.ret;
        if (o.op != "erase" && !(o.op == "get" && !o.ok)) j["value"] = o.value;
      }
      f << j.dump() << "\n";
    }
    return path;
  }
};

// One operation of a key-value structure (hash table, B+tree) chosen by dice (0..9: get 40%,
// put 20%, insert 10%, update 10%, erase 20%) on o->key, recorded in *o (a get's value read
// goes to o->value; writes use o->value as given). Expected refusals (kAlreadyExists of insert,
// kNotFound of update and erase) are outcomes; any other error marks the outcome unknown.
template <typename S>
runtime::Task<void> apply_op(S* t, int dice, HistoryOp* o) {
  o->call = static_cast<int64_t>(now_ns());
  Status st;
  if (dice < 4) {
    o->op = "get";
    auto r = co_await t->get(o->key, &o->value);
    st = r.ok() ? OkStatus() : r.status();
    if (r.ok()) o->ok = *r;
  } else if (dice < 6) {
    o->op = "put";
    st = co_await t->put(o->key, o->value);
    o->ok = st.ok();
  } else if (dice < 7) {
    o->op = "insert";
    st = co_await t->insert(o->key, o->value);
    o->ok = st.ok();
    if (st.code() == StatusCode::kAlreadyExists) st = OkStatus();
  } else if (dice < 8) {
    o->op = "update";
    st = co_await t->update(o->key, o->value);
    o->ok = st.ok();
    if (st.code() == StatusCode::kNotFound) st = OkStatus();
  } else {
    o->op = "erase";
    st = co_await t->erase(o->key);
    o->ok = st.ok();
    if (st.code() == StatusCode::kNotFound) st = OkStatus();
  }
  o->ret = static_cast<int64_t>(now_ns());
  if (!st.ok()) {
    o->unknown = true;
    o->error = st.to_string();
  }
}

// Writes the history and checks it with tools/lincheck (Porcupine): true when it is
// linearizable; else false, with lincheck's verdict and the kept history's path in *out.
inline bool check_linearizable(History& history, const std::string& name, std::string* out) {
  std::string path = "/tmp/farmem-history-" + name + "-" + std::to_string(getpid()) + ".jsonl";
  history.write(path);
  const int rc = run_command(std::string(FARMEM_LINCHECK_BIN) + " -timeout 120s " + path, out);
  if (rc == 0) {
    std::remove(path.c_str());
    return true;
  }
  *out += " (history kept at " + path + ")";
  return false;
}

// check_linearizable as a test expectation. Without a checker the test skips (fails in CI).
inline void expect_linearizable(History& history, const std::string& name) {
  if (std::string(FARMEM_LINCHECK_BIN).empty())
    FARMEM_SKIP_OR_FAIL("go was not found at configure time: no lincheck binary");
  std::string out;
  EXPECT_TRUE(check_linearizable(history, name, &out)) << out;
  std::printf("lincheck: %s", out.c_str());
}

}  // namespace farmem::testing
