// farmem_fault_client: a client process for the failure matrix (failure_matrix_test.cc).
//
//   farmem_fault_client --servers h:p
//                       --mode idle|reads|writes|hash|hash-update|split|btree|btree-scan|
//                              btree-hold|kv|kv-temporary
//                       [--table NAME] [--count N] [--op-timeout-ms MS]
//
// Prints "ready" once connected and set up, then "acked N" lines (at most every 20 ms and at
// the end) where N is how many of its writes or inserts have completed: writes store i at slot
// i of an array it allocated (its address is printed as "array NODE OFFSET"); hash and split
// insert keys "<table>-k<i>" -> "v<i>" into the existing table NAME, btree into the existing
// B+tree NAME (btree-scan also scans from each key it inserted, over TCP a call the node runs,
// and checks the key comes first before acknowledging it); hash-update inserts "<table>-k<i>" ->
// "u<i>", updates it to "v<i>" and reads it back before acknowledging it. btree-hold puts
// "<table>-held" -> "held" into the B+tree NAME with a writer that stops in the middle of the page
// write (holding the page's lock, the page torn, its redo copy written), prints "holding" and waits
// to be killed. kv puts "<table>-k<i>" -> "v<i>" into the existing kv pool NAME; kv-temporary first
// creates the pool NAME as a temporary pool (kPoolTemporary: the node deletes it when this client's
// session ends). It runs until --count operations are done (0: until killed) and exits 0, or exits
// 1 printing "error CODE: message" at the first failed operation. The test kills or stops it by
// PID.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/ds/btree/btree.h"
#include "farmem/ds/hash/hash_table.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"

using farmem::runtime::sync_wait;

namespace {

using farmem::Status;
using farmem::client::ThreadClient;
using farmem::ds::btree::BTree;
using farmem::ds::hash::HashTable;
using farmem::ds::hash::HashTableOptions;
using farmem::runtime::Task;

struct Args {
  std::string servers, mode = "idle", table = "matrix";
  uint64_t count = 0;
  uint32_t op_timeout_ms = 1000;
};

int fail(const Status& s) {
  std::printf("error %s: %s\n", std::string(farmem::status_code_name(s.code())).c_str(),
              std::string(s.message()).c_str());
  std::fflush(stdout);
  return 1;
}

class Reporter {
 public:
  void acked(uint64_t n, bool force = false) {
    const uint64_t now = farmem::now_ns();
    if (!force && now - last_ns_ < 20'000'000) return;
    last_ns_ = now;
    std::printf("acked %llu\n", static_cast<unsigned long long>(n));
    std::fflush(stdout);
  }

 private:
  uint64_t last_ns_ = 0;
};

int run_one_sided(ThreadClient* c, const Args& a) {
  const uint64_t slots = a.count ? a.count : 1u << 16;
  auto array = c->run(c->allocate(slots * 8));
  if (!array.ok()) return fail(array.status());
  std::printf("array %u %llu\n", array->node(), static_cast<unsigned long long>(array->offset()));
  std::printf("ready\n");
  std::fflush(stdout);
  Reporter r;
  uint64_t v = 0;
  for (uint64_t i = 0; a.count == 0 || i < a.count; ++i) {
    const farmem::GlobalAddress slot = *array + 8 * (i % slots);
    Status s;
    if (a.mode == "writes") {
      v = i + 1;
      s = sync_wait(c->write(slot, &v, 8));
      if (s.ok()) r.acked(i + 1);
    } else if (a.mode == "reads") {
      s = sync_wait(c->read(slot, &v, 8));
      if (s.ok()) r.acked(i + 1);
    } else {  // idle: keep the scheduler (and so the heartbeats) going; notice a lost node
      c->scheduler().poll_once();
      s = c->node_status(array->node());
      if (a.count == 0) usleep(1000);
    }
    if (!s.ok()) return fail(s);
  }
  r.acked(a.count, true);
  return 0;
}

int run_hash(ThreadClient* c, const Args& a) {
  HashTableOptions o;
  auto t = c->run(HashTable::open(c, a.table, o));
  if (!t.ok()) return fail(t.status());
  std::printf("ready\n");
  std::fflush(stdout);
  Reporter r;
  const bool updates = a.mode == "hash-update";
  std::string v;
  for (uint64_t i = 0; a.count == 0 || i < a.count; ++i) {
    // hash-update: the key is inserted with a first value, updated (over TCP by the node's
    // procedure) and read back before it counts as acknowledged.
    const std::string key = fmt::format("{}-k{}", a.table, i);
    Status s = sync_wait((*t)->insert(key, (updates ? "u" : "v") + std::to_string(i)));
    if (s.ok() && updates) s = sync_wait((*t)->update(key, fmt::format("v{}", i)));
    if (s.ok() && updates) {
      auto got = sync_wait((*t)->get(key, &v));
      s = !got.ok() ? got.status()
          : (*got && v == fmt::format("v{}", i))
              ? farmem::OkStatus()
              : farmem::Internal(fmt::format("{} reads back as {}", key, *got ? v : "absent"));
    }
    if (!s.ok()) return fail(s);
    r.acked(i + 1);
  }
  r.acked(a.count, true);
  return 0;
}

int run_btree(ThreadClient* c, const Args& a) {
  auto t = c->run(BTree::open(c, a.table));
  if (!t.ok()) return fail(t.status());
  std::printf("ready\n");
  std::fflush(stdout);
  if (a.mode == "btree-hold") {
    (*t)->set_die_mid_write_for_test(true);
    Status s = sync_wait((*t)->put(fmt::format("{}-held", a.table), "held"));
    if (s.code() != farmem::StatusCode::kCancelled) return fail(s);
    std::printf("holding\n");
    std::fflush(stdout);
    for (;;) {  // keep the session (and so the lock's lease) alive until killed
      c->scheduler().poll_once();
      usleep(1000);
    }
  }
  Reporter r;
  std::vector<std::pair<std::string, std::string>> out;
  for (uint64_t i = 0; a.count == 0 || i < a.count; ++i) {
    const std::string key = fmt::format("{}-k{}", a.table, i);
    Status s = sync_wait((*t)->insert(key, fmt::format("v{}", i)));
    if (!s.ok()) return fail(s);
    if (a.mode == "btree-scan") {
      s = sync_wait((*t)->scan(key, "", 4, &out));
      if (!s.ok()) return fail(s);
      if (out.empty() || out.front().first != key) {
        return fail(farmem::Internal(fmt::format("a scan from {} did not return it first", key)));
      }
    }
    r.acked(i + 1);
  }
  r.acked(a.count, true);
  return 0;
}

int run_kv(ThreadClient* c, const Args& a) {
  namespace kw = farmem::kv::wire;
  auto store = farmem::kv::Store::open(c);
  if (!store.ok()) return fail(store.status());
  auto pool = a.mode == "kv-temporary"
                  ? sync_wait((*store)->create_pool(a.table, 16ull << 20, 1000,
                                                    kw::kPoolCreateOnly | kw::kPoolTemporary))
                  : sync_wait((*store)->open_pool(a.table));
  if (!pool.ok()) return fail(pool.status());
  std::printf("ready\n");
  std::fflush(stdout);
  Reporter r;
  for (uint64_t i = 0; a.count == 0 || i < a.count; ++i) {
    Status s = sync_wait((*pool)->put(fmt::format("{}-k{}", a.table, i), fmt::format("v{}", i)));
    if (!s.ok()) return fail(s);
    r.acked(i + 1);
  }
  r.acked(a.count, true);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"failure-matrix client"};
  Args a;
  app.add_option("--servers", a.servers)->required();
  app.add_option("--mode", a.mode)
      ->check(CLI::IsMember({"idle", "reads", "writes", "hash", "hash-update", "split", "btree",
                             "btree-scan", "btree-hold", "kv", "kv-temporary"}));
  app.add_option("--table", a.table);
  app.add_option("--count", a.count);
  app.add_option("--op-timeout-ms", a.op_timeout_ms);
  CLI11_PARSE(app, argc, argv);
  auto config = farmem::client::ClusterConfig::from_server_list(a.servers);
  if (!config.ok()) return fail(config.status());
  config->options.op_timeout_ms = a.op_timeout_ms;
  auto cluster = farmem::client::Cluster::connect(*config);
  if (!cluster.ok()) return fail(cluster.status());
  ThreadClient* c = *(*cluster)->thread_client();
  if (a.mode == "hash" || a.mode == "hash-update" || a.mode == "split") return run_hash(c, a);
  if (a.mode == "btree" || a.mode == "btree-scan" || a.mode == "btree-hold") {
    return run_btree(c, a);
  }
  if (a.mode == "kv" || a.mode == "kv-temporary") return run_kv(c, a);
  return run_one_sided(c, a);
}
