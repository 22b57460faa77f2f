// Linearizability across kills of a durable node, shared by the kv pool, hash table and B+tree
// tests: coroutines apply history.h's mixed operations to a few hot keys; a watcher kill -9s
// the node after a seeded number of operations (by default a power loss: the node's files take
// writes only at sync, so the kill takes everything not yet synced); the operations in flight
// fail, their outcome unknown until the node's death (a write may have reached the log, but
// none takes effect in a later life: that is the deadline lincheck gets); the node restarts on
// its directory, the structure is reopened and the next life goes on with the same keys. The
// last life runs without a kill and every operation in it succeeds. Porcupine then checks the
// whole history: an acknowledged write that a restart lost, or a write in flight that shows up,
// disappears and shows up again, is a violation. Every wait is a hang guard.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "durable_node.h"
#include "farmem/common/clock.h"
#include "farmem/runtime/when_all.h"
#include "history.h"
#include "test_knob.h"

namespace farmem::testing {

// What a run does. H is any handle with get/put/insert/update/erase tasks (history.h's
// apply_op); it owns what it needs (a kv handle owns its store and pool).
template <typename H>
struct HistoryAcrossKills {
  std::function<runtime::Task<Result<std::unique_ptr<H>>>(client::ThreadClient*)> open;
  // 2 in make test; the long run of the persistence work sets 50.
  int kills = static_cast<int>(test_knob("FARMEM_DURABLE_HISTORY_KILLS", 2));
  int coroutines = 16;
  int keys = 8;
  bool has_update = true;  // false: dice for update become inserts (the kv store)
  int last_life_ops = 40;  // per coroutine, in the life without a kill
  std::string durability = "power";
  std::string checkpoint_log = "256KiB";  // small: checkpoints happen during the writes
  // The node's files take writes only at sync (--simulate-power-loss): each kill -9 is then a
  // power loss, which takes everything not yet synced.
  bool power_loss = true;
};

// A HistoryAcrossKills::open for a structure with T::open(client, name) and
// T::create(client, name, options): opens `name`, or creates it in the first life.
template <typename T, typename Options>
runtime::Task<Result<std::unique_ptr<T>>> open_or_create(client::ThreadClient* c, std::string name,
                                                         Options options) {
  auto opened = co_await T::open(c, name);
  if (opened.ok() || opened.status().code() != StatusCode::kNotFound) co_return opened;
  co_return co_await T::create(c, name, options);
}

namespace durable_history_detail {

// What the coroutines of one life share: operations done, when the kill comes, and the first
// failure that came before it (an error of the structure, not of the kill).
struct Life {
  std::atomic<uint64_t> done{0};
  uint64_t kill_after = 0;  // 0: no kill in this life
  std::string premature;
};

// One coroutine of one life: operations until one fails (the node died) or, in the last life,
// `ops` of them. Values name the coroutine, life and step, so none is written twice.
template <typename H>
runtime::Task<void> worker(H* h, const HistoryAcrossKills<H>& run, int id, int life, uint64_t seed,
                           int ops, History* history, Life* l) {
  std::mt19937_64 r(seed + static_cast<uint64_t>(life) * 1000 + static_cast<uint64_t>(id));
  for (int i = 0; ops < 0 || i < ops; ++i) {
    HistoryOp o;
    o.client = id;
    o.key = fmt::format("hot{}", r() % static_cast<uint64_t>(run.keys));
    int dice = static_cast<int>(r() % 10);
    if (!run.has_update && dice == 7) dice = 6;
    if (dice >= 4) o.value = fmt::format("c{}l{}n{}", id, life, i);
    co_await apply_op(h, dice, &o);
    const bool failed = o.unknown;
    if (failed && l->premature.empty() && (l->kill_after == 0 || l->done < l->kill_after)) {
      l->premature = o.op + " " + o.key + ": " + o.error;
      l->done += l->kill_after;  // the watcher need not wait for its hang guard
    }
    history->add(std::move(o));
    l->done.fetch_add(1);
    if (failed) co_return;
  }
}

}  // namespace durable_history_detail

// Runs run.kills lives that end in a kill -9 and one that does not, on `node` (not started),
// then checks the history with lincheck under `name`.
template <typename H>
void history_across_kills(DurableNode& node, const HistoryAcrossKills<H>& run, uint64_t seed,
                          const std::string& name) {
  std::mt19937_64 rng(seed);
  History history;
  std::string why;
  if (run.power_loss) node.extra_args.push_back("--simulate-power-loss");
  for (int life = 0; life <= run.kills; ++life) {
    const bool last = life == run.kills;
    ASSERT_TRUE(node.start(&why, run.durability, run.checkpoint_log)) << why;
    client::ThreadClient& c = node.client();
    auto opened = c.run(run.open(&c));
    ASSERT_TRUE(opened.ok()) << "seed " << seed << " life " << life << ": "
                             << opened.status().to_string();
    std::unique_ptr<H> h = std::move(*opened);
    durable_history_detail::Life l;
    const uint64_t kill_after = 100 + rng() % 700;
    std::thread killer;
    if (!last) {
      l.kill_after = kill_after;
      killer = node.kill_when(l.done, kill_after);
    }
    const size_t first = history.ops.size();
    std::vector<runtime::Task<void>> tasks;
    for (int k = 0; k < run.coroutines; ++k) {
      tasks.push_back(durable_history_detail::worker(h.get(), run, k, life, seed,
                                                     last ? run.last_life_ops : -1, &history, &l));
    }
    c.run(runtime::when_all(std::move(tasks)));
    h.reset();
    EXPECT_EQ(l.premature, "") << "seed " << seed << " life " << life
                               << ": an operation failed before the kill";
    uint64_t unknown = 0;
    if (!last) {
      killer.join();
      node.kill();
      const auto died = static_cast<int64_t>(now_ns());  // the node is reaped: it is dead
      for (size_t i = first; i < history.ops.size(); ++i) {
        if (!history.ops[i].unknown) continue;
        history.ops[i].deadline = died;
        ++unknown;
      }
    }
    std::printf("[ LIFE     ] %d: %zu operations, %lu in flight at the kill (killed after %lu)\n",
                life, history.ops.size() - first, unknown, last ? 0 : kill_after);
  }
  expect_linearizable(history, name);
}

}  // namespace farmem::testing
