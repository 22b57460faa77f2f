// Helpers of the serializability tests: a thread running the micro-workload (txn_micro.h) and
// the check of a recorded history by tools/sercheck.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <latch>
#include <string>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/runtime/when_all.h"
#include "harness.h"
#include "txn_micro.h"

namespace farmem::testing {

inline void micro_thread(client::Cluster* cluster, const Table* t, uint64_t keys, int coroutines,
                         int n, uint64_t seed, Recorder* rec, MicroStats* st, Status* status,
                         std::latch* start) {
  auto c = cluster->thread_client();
  start->arrive_and_wait();  // every thread connected: they run their transactions together
  if (!c.ok()) {
    *status = c.status();
    return;
  }
  auto tc = (*c)->run(TxnClient::create(*c));
  if (!tc.ok()) {
    *status = tc.status();
    return;
  }
  std::vector<Task<Status>> tasks;
  for (int i = 0; i < coroutines; ++i) {
    tasks.push_back(micro(tc->get(), t, keys, n, seed + static_cast<uint64_t>(i), rec, st));
  }
  std::vector<Status> r = (*c)->run(runtime::when_all(std::move(tasks)));
  for (const Status& s : r) {
    if (!s.ok() && status->ok()) *status = s;
  }
  st->unvalidated = (*tc)->counters().unvalidated_commits;
  Status cs = (*c)->run((*tc)->close());
  if (status->ok()) *status = cs;
  tc->reset();
  cluster->release_thread_client();
}

// Writes the history and runs tools/sercheck on it; the file is kept when it fails.
inline void expect_serializable(const std::vector<std::string>& lines, const std::string& name) {
  const std::string path =
      "/tmp/farmem-txn-history-" + name + "-" + std::to_string(getpid()) + ".jsonl";
  {
    std::ofstream f(path);
    for (const auto& l : lines) f << l << "\n";
  }
  std::string out;
  const int rc = run_command(std::string(FARMEM_PYTHON) + " " + FARMEM_SERCHECK + " " + path, &out);
  EXPECT_EQ(rc, 0) << out << " (history kept at " << path << ")";
  std::printf("%s", out.c_str());
  if (rc == 0) std::remove(path.c_str());
}

}  // namespace farmem::testing
