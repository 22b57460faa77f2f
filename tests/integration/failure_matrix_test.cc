// The failure matrix: {kill -9, SIGSTOP then SIGCONT} x {memory node, a client} x {workload}
// over shared memory and TCP, every process started by the test and signalled by its PID.
//
// Expected outcomes (docs/ARCHITECTURE.md "Failure matrix"):
//  - a killed or stopped client never takes the node down; other clients go on; writes it had
//    acknowledged are there; memory its session owned comes back; a stopped client carries on
//    after SIGCONT;
//  - a killed node makes its clients fail cleanly (kPeerFailed, no hang) and can be restarted
//    on the same port at once; a stopped node makes them fail cleanly (heartbeat silence or a
//    deadline) or simply wait, and after SIGCONT it serves a fresh client with every
//    acknowledged write intact.
// Every wait below is a hang guard (a generous bound), never a measurement.
//
// Rows: each workload is one Row {name, client mode, table options}; structures of later
// issues add theirs to kRows. The kv store's row (kv_puts) runs a client putting into a pool of
// the node's kv service. Beside the matrix: kill -9 of a node that runs an ADO process (the
// process goes with it), and kill -9 of a client that created a temporary kv pool (the node
// deletes the pool and gets its memory back).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "farmem/ds/btree/btree.h"
#include "farmem/ds/hash/hash_table.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"
#include "harness.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using client::Cluster;
using client::ThreadClient;
using ds::btree::BTree;
using ds::hash::HashTable;
using ds::hash::HashTableOptions;

constexpr uint32_t kOpTimeoutMs = 1000;  // clients' deadline: detection is bounded by it
constexpr int kGuardMs = 30'000;         // hang guard for any single wait

struct Row {
  const char* name;
  const char* mode;   // farmem_fault_client --mode
  bool table;         // needs a hash table (object-owned: survives its writers)
  bool tiny;          // a table that splits all the time
  bool tree = false;  // needs a B+tree (object-owned), instead of a hash table
  bool pool = false;  // needs a kv pool (the node's kv service), instead of a hash table
};

const Row kRows[] = {
    {"idle", "idle", false, false},
    {"reads", "reads", false, false},
    {"writes", "writes", false, false},
    {"hash_inserts", "hash", true, false},
    // Inserts, updates and gets of the hash table: over TCP the updates and gets are the node's
    // procedures inside served messages; a fault mid-call loses no acknowledged update.
    {"hash_updates", "hash-update", true, false},
    {"split_in_progress", "split", true, true},
    // Inserts into a B+tree: a killed client may hold a page lock (and die mid-write): the
    // observer's reads take it over and repair the page from its redo copy.
    {"btree_inserts", "btree", false, false, true},
    // Inserts, each followed by a scan from its key: over TCP a call of the node's btree scan
    // procedure; a fault mid-call loses no acknowledged insert and leaves the node serving.
    {"btree_scans", "btree-scan", false, false, true},
    // Puts into a kv pool: the node does every write, so a killed or stopped client holds
    // nothing but its open handle (closed with its session); its acknowledged puts are there.
    {"kv_puts", "kv", false, false, false, true},
};

enum class Fault { kKill, kStopCont };
enum class Victim { kNode, kClient };

struct Case {
  Transport transport;
  Fault fault;
  Victim victim;
  Row row;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.transport.name << (c.fault == Fault::kKill ? " kill -9 " : " SIGSTOP+SIGCONT ")
      << (c.victim == Victim::kNode ? "of the node, " : "of a client, ") << c.row.name;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("{}_{}_{}_{}", c.transport.name, c.fault == Fault::kKill ? "kill" : "stop",
                     c.victim == Victim::kNode ? "node" : "client", c.row.name);
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const Transport& t : all_transports()) {
    for (Fault f : {Fault::kKill, Fault::kStopCont}) {
      for (Victim v : {Victim::kNode, Victim::kClient}) {
        for (const Row& r : kRows) out.push_back(Case{t, f, v, r});
      }
    }
  }
  return out;
}

HashTableOptions table_options(const Row& r) {
  HashTableOptions o;
  if (r.tiny) {
    o.main_buckets_log2 = 4;
    o.initial_depth = 0;
  } else {
    o.main_buckets_log2 = 10;
    o.initial_depth = 1;
  }
  o.split_wait_ms = 3000;
  return o;
}

class FailureMatrixTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.tls = GetParam().transport.tls;
    o.node_id = 3;
    o.capacity_bytes = 256ull << 20;
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    observer_ = connect();
    ASSERT_NE(observer_, nullptr);
    obs_ = *observer_->thread_client();
    // The observer's own chunk is part of the baseline.
    auto warm = obs_->run(obs_->allocate(64));
    ASSERT_TRUE(warm.ok());
    ASSERT_TRUE(obs_->run(obs_->free(*warm, 64)).ok());
    baseline_ = used_bytes(obs_);
  }

  std::unique_ptr<Cluster> connect() {
    auto c = Cluster::connect(config_for({server_.get()}, GetParam().transport.tls, kOpTimeoutMs));
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(*c) : nullptr;
  }

  uint64_t used_bytes(ThreadClient* c) {
    auto st = c->run(c->stats(3));
    EXPECT_TRUE(st.ok()) << st.status().to_string();
    return st.ok() ? st->used_bytes : 0;
  }

  std::unique_ptr<ChildProcess> start_client(const std::string& table) {
    std::vector<std::string> args = {FARMEM_FAULT_CLIENT_BIN,
                                     "--servers",
                                     server_->address(),
                                     "--mode",
                                     GetParam().row.mode,
                                     "--table",
                                     table,
                                     "--op-timeout-ms",
                                     std::to_string(kOpTimeoutMs)};
    auto c = ChildProcess::start(args, {"UCX_TLS=" + GetParam().transport.tls});
    EXPECT_NE(c, nullptr);
    if (c == nullptr) return nullptr;
    EXPECT_NE(c->wait_for_line("ready", kGuardMs), "") << c->output();
    return c;
  }

  // Lets the client make progress: a few acknowledged operations (idle ones have none).
  void let_it_work(ChildProcess& c) {
    if (std::string(GetParam().row.mode) == "idle") {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return;
    }
    for (int waited = 0; c.acked() < 50 && waited < kGuardMs && c.running(); waited += 5) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_GE(c.acked(), 50u) << c.output();
  }

  // Every key the client acknowledged is in the table (read by a fresh handle).
  void expect_acked_keys(ThreadClient* c, const std::string& table, uint64_t acked) {
    if (GetParam().row.tree) {
      expect_acked_tree_keys(c, table, acked);
      return;
    }
    if (GetParam().row.pool) {
      expect_acked_pool_keys(c, table, acked);
      return;
    }
    auto t = c->run(HashTable::open(c, table, table_options(GetParam().row)));
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    std::string v;
    for (uint64_t i = 0; i < acked; ++i) {
      auto r = sync_wait((*t)->get(fmt::format("{}-k{}", table, i), &v));
      ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
      ASSERT_TRUE(*r) << "acknowledged key " << i << " of " << acked << " is missing";
      EXPECT_EQ(v, fmt::format("v{}", i));
    }
  }

  void expect_acked_tree_keys(ThreadClient* c, const std::string& table, uint64_t acked) {
    auto t = c->run(BTree::open(c, table, tree_options()));
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    std::string v;
    for (uint64_t i = 0; i < acked; ++i) {
      auto r = sync_wait((*t)->get(fmt::format("{}-k{}", table, i), &v));
      ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
      ASSERT_TRUE(*r) << "acknowledged key " << i << " of " << acked << " is missing";
      EXPECT_EQ(v, fmt::format("v{}", i));
    }
    std::vector<uint64_t> pages;
    Status s = c->run((*t)->check(&pages));
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  void expect_acked_pool_keys(ThreadClient* c, const std::string& name, uint64_t acked) {
    auto store = kv::Store::open(c);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    auto pool = sync_wait((*store)->open_pool(name));
    ASSERT_TRUE(pool.ok()) << pool.status().to_string();
    std::string v;
    for (uint64_t i = 0; i < acked; ++i) {
      auto r = sync_wait((*pool)->get(fmt::format("{}-k{}", name, i), &v));
      ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
      ASSERT_TRUE(*r) << "acknowledged key " << i << " of " << acked << " is missing";
      EXPECT_EQ(v, fmt::format("v{}", i));
    }
    EXPECT_TRUE(sync_wait((*store)->close_pool(**pool)).ok());
  }
  static ds::btree::BTreeOptions tree_options() {
    ds::btree::BTreeOptions o;
    o.lock_wait_ms = 3000;
    return o;
  }
  // Creates the row's structure; destroys it.
  void create_structure(const std::string& name) {
    const Row& r = GetParam().row;
    if (r.tree) {
      auto t = obs_->run(BTree::create(obs_, name, tree_options()));
      ASSERT_TRUE(t.ok()) << t.status().to_string();
    } else if (r.table) {
      auto t = obs_->run(HashTable::create(obs_, name, table_options(r)));
      ASSERT_TRUE(t.ok()) << t.status().to_string();
    } else if (r.pool) {  // created, then closed: the client is the only one with it open
      auto store = kv::Store::open(obs_);
      ASSERT_TRUE(store.ok()) << store.status().to_string();
      auto p = sync_wait((*store)->create_pool(name, 16ull << 20, 1000, kv::wire::kPoolCreateOnly));
      ASSERT_TRUE(p.ok()) << p.status().to_string();
      ASSERT_TRUE(sync_wait((*store)->close_pool(**p)).ok());
    }
  }
  void destroy_structure(ThreadClient* c, const std::string& name) {
    const Row& r = GetParam().row;
    if (r.tree) {
      ASSERT_TRUE(c->run(BTree::destroy(c, name)).ok());
    } else if (r.table) {
      ASSERT_TRUE(c->run(HashTable::destroy(c, name)).ok());
    } else if (r.pool) {
      // kBusy until the node has ended the victim's session (and so closed its handle).
      auto store = kv::Store::open(c);
      ASSERT_TRUE(store.ok()) << store.status().to_string();
      Status s = sync_wait((*store)->delete_pool(name));
      for (int w = 0; s.code() == StatusCode::kBusy && w < kGuardMs; w += 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        s = sync_wait((*store)->delete_pool(name));
      }
      ASSERT_TRUE(s.ok()) << s.to_string();
    }
  }
  bool has_structure() const {
    return GetParam().row.table || GetParam().row.tree || GetParam().row.pool;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Cluster> observer_;
  ThreadClient* obs_ = nullptr;
  uint64_t baseline_ = 0;
};

TEST_P(FailureMatrixTest, OutcomeIsClean) {
  const Case& k = GetParam();
  const std::string table = "t" + std::to_string(getpid());
  create_structure(table);
  auto client = start_client(table);
  ASSERT_NE(client, nullptr);
  let_it_work(*client);

  if (k.victim == Victim::kClient) {
    if (k.fault == Fault::kKill) {
      client->signal(SIGKILL);
      ASSERT_NE(client->wait_exit(kGuardMs), -1);
    } else {
      client->signal(SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * kOpTimeoutMs / 2));
    }
    // The node lives and other clients go on (split rows: the observer's own inserts need the
    // subtables the victim may hold; a stopped holder makes them wait, a dead one is taken over).
    EXPECT_TRUE(server_->pid() > 0 && ::kill(server_->pid(), 0) == 0);
    uint64_t probe = 0;
    auto a = obs_->run(obs_->allocate(64));
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    EXPECT_TRUE(sync_wait(obs_->write(*a, &probe, 8)).ok());
    EXPECT_TRUE(obs_->run(obs_->free(*a, 64)).ok());
    if (k.fault == Fault::kStopCont) {
      const uint64_t before = client->acked();
      client->signal(SIGCONT);
      if (std::string(k.row.mode) != "idle") {
        for (int w = 0; client->acked() <= before + 10 && w < kGuardMs && client->running();
             w += 5) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        EXPECT_GT(client->acked(), before + 10)
            << "the client did not carry on: " << client->output();
      }
      EXPECT_TRUE(client->running()) << client->output();
      client->signal(SIGKILL);
      ASSERT_NE(client->wait_exit(kGuardMs), -1);
    }
    const uint64_t acked = client->acked();
    if (has_structure()) {
      expect_acked_keys(obs_, table, acked);
      destroy_structure(obs_, table);
    }
    // The client's session ended (EOF on its door connection): what it owned comes back.
    uint64_t used = used_bytes(obs_);
    for (int w = 0; used != baseline_ && w < kGuardMs; w += 10) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      used = used_bytes(obs_);
    }
    EXPECT_EQ(used, baseline_);
    return;
  }

  // The memory node is the victim.
  if (k.fault == Fault::kKill) {
    const uint16_t port = server_->port();
    server_->signal(SIGKILL);
    const int status = client->wait_exit(kGuardMs);
    ASSERT_NE(status, -1) << "the client hung after its node was killed: " << client->output();
    EXPECT_EQ(WEXITSTATUS(status), 1) << client->output();
    EXPECT_NE(client->output().find("error PeerFailed"), std::string::npos) << client->output();
    // The observer learns it too, and a new node binds the same port at once.
    Status s;
    for (int w = 0; w < kGuardMs; w += 5) {
      s = obs_->run(obs_->stats(3)).status();
      if (!s.ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(s.code(), StatusCode::kPeerFailed) << s.to_string();
    ServerOptions o;
    o.tls = k.transport.tls;
    o.node_id = 3;
    o.port = port;
    auto again = ServerProcess::start(o);
    ASSERT_NE(again, nullptr) << "could not restart on port " << port;
    EXPECT_EQ(again->port(), port);
    return;
  }
  server_->signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * kOpTimeoutMs));
  server_->signal(SIGCONT);
  // The client either failed cleanly (it noticed the silence) or carries on.
  const int status = client->wait_exit(3 * kOpTimeoutMs);
  if (status != -1) {
    const std::string out = client->output();
    EXPECT_TRUE(out.find("error PeerFailed") != std::string::npos ||
                out.find("error TimedOut") != std::string::npos)
        << out;
  }
  const uint64_t acked = client->acked();
  client.reset();  // SIGKILL if still running
  // The node lives and serves a fresh client; what was acknowledged is there.
  auto fresh = connect();
  ASSERT_NE(fresh, nullptr);
  ThreadClient* fc = *fresh->thread_client();
  if (has_structure()) {
    expect_acked_keys(fc, table, acked);
    destroy_structure(fc, table);
  }
  uint64_t used = used_bytes(fc);
  for (int w = 0; used != baseline_ && w < kGuardMs; w += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    used = used_bytes(fc);
  }
  EXPECT_EQ(used, baseline_);
}

INSTANTIATE_TEST_SUITE_P(Matrix, FailureMatrixTest, ::testing::ValuesIn(all_cases()), case_name);

// Whether `pid` has exited (gone, or a zombie waiting for its new parent to reap it).
bool process_gone(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] == 'Z' ||
         line[paren + 2] == 'X';
}

// kill -9 of a memory node whose pool runs an ADO process: the process dies with its node
// (PR_SET_PDEATHSIG), so nothing is left orphaned. The node keeps its default transports (an
// ADO maps the region through shared memory); the client's transport does not matter.
TEST(FailureMatrixAdoTest, KillNineOfTheNodeTakesItsAdoProcess) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / fmt::format("fm-ado-{}", getpid())).string();
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/node.toml";
  std::ofstream(config) << fmt::format(
      "[memnode]\n[kv]\nado_plugin_dir = \"{}\"\nado_binary = \"{}\"\n", FARMEM_ADO_PLUGIN_DIR,
      FARMEM_ADO_BIN);
  ServerOptions o;
  o.extra_args = {"--config", config};
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  auto cluster = Cluster::connect(config_for({server.get()}, "sm,tcp", kOpTimeoutMs));
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  ThreadClient* c = *(*cluster)->thread_client();
  auto store = kv::Store::open(c);
  ASSERT_TRUE(store.ok());
  auto pool = sync_wait((*store)->create_pool("ado", 16ull << 20, 100, kv::wire::kPoolCreateOnly));
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  ASSERT_TRUE(sync_wait((*pool)->configure("AdoPlugins::libfarmem_ado_testing.so")).ok());
  auto r = sync_wait((*pool)->invoke_ado("", "pid"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->responses.size(), 1u);
  const pid_t ado = std::stoi(r->responses[0].data);
  ASSERT_GT(ado, 0);
  ASSERT_FALSE(process_gone(ado));
  server->signal(SIGKILL);
  bool gone = false;
  for (int w = 0; !gone && w < kGuardMs; w += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gone = process_gone(ado);
  }
  EXPECT_TRUE(gone) << "ADO process " << ado << " outlived its node";
  // The client fails cleanly.
  Status s;
  for (int w = 0; w < kGuardMs; w += 10) {
    s = sync_wait((*pool)->invoke_ado("", "pid")).status();
    if (!s.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(s.code() == StatusCode::kPeerFailed || s.code() == StatusCode::kTimedOut)
      << s.to_string();
  pool->reset();
  store->reset();
  cluster->reset();
  std::filesystem::remove_all(dir);
}

// kill -9 of a client that created a temporary kv pool (kPoolTemporary, as `farmem bench ycsb
// --structure kv` does): the node deletes the pool when the client's session ends, and its
// used_bytes returns to the starting figure.
class TemporaryPoolTest : public ::testing::TestWithParam<Transport> {};

TEST_P(TemporaryPoolTest, KillNineOfItsCreatorDeletesATemporaryPool) {
  ServerOptions o;
  o.tls = GetParam().tls;
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  auto cluster = Cluster::connect(config_for({server.get()}, GetParam().tls, kOpTimeoutMs));
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  ThreadClient* c = *(*cluster)->thread_client();
  auto used = [c] {
    auto st = c->run(c->stats(0));
    EXPECT_TRUE(st.ok()) << st.status().to_string();
    return st.ok() ? st->used_bytes : 0;
  };
  const uint64_t baseline = used();
  const std::string name = "temp" + std::to_string(getpid());
  auto client = ChildProcess::start(
      {FARMEM_FAULT_CLIENT_BIN, "--servers", server->address(), "--mode", "kv-temporary", "--table",
       name, "--op-timeout-ms", std::to_string(kOpTimeoutMs)},
      {"UCX_TLS=" + GetParam().tls});
  ASSERT_NE(client, nullptr);
  ASSERT_NE(client->wait_for_line("ready", kGuardMs), "") << client->output();
  for (int w = 0; client->acked() < 50 && w < kGuardMs && client->running(); w += 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(client->acked(), 50u) << client->output();
  EXPECT_GT(used(), baseline);  // the pool holds node memory while its creator lives
  auto store = kv::Store::open(c);
  ASSERT_TRUE(store.ok());
  {
    auto seen = sync_wait((*store)->open_pool(name));  // others may use it meanwhile
    ASSERT_TRUE(seen.ok()) << seen.status().to_string();
    EXPECT_TRUE(sync_wait((*store)->close_pool(**seen)).ok());
  }
  client->signal(SIGKILL);
  ASSERT_NE(client->wait_exit(kGuardMs), -1);
  uint64_t now = used();
  for (int w = 0; now != baseline && w < kGuardMs; w += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    now = used();
  }
  EXPECT_EQ(now, baseline);
  EXPECT_EQ(sync_wait((*store)->open_pool(name)).status().code(), StatusCode::kNotFound);
  auto pools = sync_wait((*store)->list_pools());
  ASSERT_TRUE(pools.ok());
  EXPECT_TRUE(pools->empty());
}

INSTANTIATE_TEST_SUITE_P(Transports, TemporaryPoolTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
