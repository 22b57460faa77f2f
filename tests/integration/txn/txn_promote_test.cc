// Promotion (txn/promote.h, docs/formats/txn.md "Promotion"): three memory nodes, replicas 2;
// a node that is neither the table's metadata/root node nor the coordinators' log node is
// killed (SIGKILL). Transactions on buckets whose primary it held fail with an error (no hang),
// others commit; `farmem txn promote` makes the backups primaries; a fresh client that names
// the node down reads every committed record and commits on the formerly dead-primary buckets,
// and a running client does too after Table::refresh.
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "farmem/client/cluster.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/txn/transaction.h"
#include "harness.h"
#include "txn_fixture.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using txn::Table;
using txn::Transaction;

constexpr uint16_t kNodes = 3;
constexpr uint64_t kKeys = 90;

class TxnPromoteTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    for (uint16_t id = 0; id < kNodes; ++id) {
      ServerOptions o;
      o.tls = GetParam().tls;
      o.node_id = id;
      servers_.push_back(ServerProcess::start(o));
      ASSERT_NE(servers_.back(), nullptr);
    }
  }
  client::ClusterConfig config(bool name_dead_down) const {
    client::ClusterConfig cfg =
        config_for({servers_[0].get(), servers_[1].get(), servers_[2].get()}, GetParam().tls, 2000);
    if (name_dead_down) {
      auto hp = parse_host_port(servers_[dead_]->address());
      cfg.options.down_nodes.push_back(client::DownNode{*hp, dead_});
    }
    return cfg;
  }
  std::string server_list() const {
    return servers_[0]->address() + "," + servers_[1]->address() + "," + servers_[2]->address();
  }
  // Runs `farmem txn promote` for node `node` with the nodes `down` named down; returns its
  // exit status.
  int promote(uint16_t node, const std::vector<uint16_t>& down, std::string* output,
              const std::string& table = "promo") {
    std::string list;
    for (uint16_t d : down) {
      if (!list.empty()) list.push_back(',');
      list.append(fmt::format("{}={}", servers_[d]->address(), d));
    }
    auto child =
        ChildProcess::start({FARMEM_CLI_BIN, "txn", "promote", "--node", std::to_string(node),
                             "--table", table, "--servers", server_list(), "--down-nodes", list},
                            {"UCX_TLS=" + GetParam().tls});
    if (child == nullptr) return -1;
    const int status = child->wait_exit(120000);  // hang guard
    *output = child->output();
    return status;
  }

  std::vector<std::unique_ptr<ServerProcess>> servers_;
  uint16_t dead_ = 0;
};

// Commits `value` for every key of `keys` in one transaction (insert when absent).
Status put_all(client::ThreadClient* c, txn::TxnClient* tc, const Table& t,
               const std::map<uint64_t, uint64_t>& kv) {
  Transaction x = tc->begin();
  for (const auto& [k, v] : kv) {
    Status s = c->run(x.update(t, k, u64_value(v)));
    if (s.code() == StatusCode::kNotFound) s = c->run(x.insert(t, k, u64_value(v)));
    if (!s.ok()) return s;
  }
  return c->run(x.commit());
}

Status get(client::ThreadClient* c, txn::TxnClient* tc, const Table& t, uint64_t key,
           uint64_t* value) {
  Transaction x = tc->begin_read_only();
  std::string v;
  Status s = c->run(x.read(t, key, &v));
  if (!s.ok()) return s;
  *value = value_u64(v);
  return c->run(x.commit());
}

bool is_node_error(const Status& s) {
  return s.code() == StatusCode::kPeerFailed || s.code() == StatusCode::kTimedOut ||
         s.code() == StatusCode::kUnavailable;
}

TEST_P(TxnPromoteTest, BackupsTakeOverFromADeadPrimary) {
  auto a = client::Cluster::connect(config(false));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  client::ThreadClient* ca = *(*a)->thread_client();
  auto tca = ca->run(txn::TxnClient::create(ca));
  ASSERT_TRUE(tca.ok()) << tca.status().to_string();
  txn::TableOptions o;
  o.record_bytes = 8;
  o.capacity = 96;
  auto created = ca->run(Table::create(ca, "promo", o));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  Table t = std::move(*created);
  ASSERT_EQ(t.replicas(), 2u);
  // The node to kill: not the metadata's (the lowest), not the root's, not the logs' (node 0
  // for the first thread of every client here).
  const uint16_t root = (*a)->root_node("txn/promo");
  dead_ = root == 1 ? 2 : 1;
  ASSERT_NE(t.meta_address().node(), dead_);
  std::printf("killing node %u (root on node %u)\n", dead_, root);

  // Committed state: every key loaded, then some updated.
  std::map<uint64_t, uint64_t> expected;
  for (uint64_t k = 0; k < kKeys; k += 10) {
    std::map<uint64_t, uint64_t> batch;
    for (uint64_t i = k; i < k + 10; ++i) batch[i] = i * 10;
    ASSERT_TRUE(put_all(ca, tca->get(), t, batch).ok());
    expected.insert(batch.begin(), batch.end());
  }
  for (uint64_t k = 0; k < kKeys; k += 3) {
    ASSERT_TRUE(put_all(ca, tca->get(), t, {{k, k * 10 + 1}}).ok());
    expected[k] = k * 10 + 1;
  }
  // Keys by where their bucket's replicas are (node index = node id here).
  std::vector<uint64_t> on_dead_primary, untouched;
  for (uint64_t k = 0; k < kKeys; ++k) {
    const uint64_t b = t.bucket_of(k);
    if (b % kNodes == dead_) on_dead_primary.push_back(k);
    if (b % kNodes == (dead_ + 1u) % kNodes) untouched.push_back(k);  // neither replica on it
  }
  ASSERT_FALSE(on_dead_primary.empty());
  ASSERT_FALSE(untouched.empty());

  servers_[dead_]->signal(SIGKILL);
  // Wait (hang guard) until this client has noticed; on shared memory a read could otherwise
  // still find the dead node's mapping.
  for (int i = 0; i < 2000 && ca->node_status(dead_).ok(); ++i) {
    ca->check_liveness(now_ns());
    uint64_t v = 0;
    (void)get(ca, tca->get(), t, on_dead_primary[0], &v);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(ca->node_status(dead_).ok());

  {  // On a dead-primary bucket: an error, not a hang and not a commit.
    Transaction x = tca->get()->begin();
    std::string v;
    Status s = ca->run(x.read_for_update(t, on_dead_primary[0], &v));
    if (s.ok()) s = ca->run(x.commit());
    EXPECT_TRUE(is_node_error(s)) << s.to_string();
  }
  // Not touching the dead node: commits.
  ASSERT_TRUE(put_all(ca, tca->get(), t, {{untouched[0], 777}}).ok());
  expected[untouched[0]] = 777;

  std::string out;
  // Refused: node 0 keeps the metadata (and this client's logs).
  int status = promote(0, {0, dead_}, &out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status << ": " << out;
  EXPECT_NE(out.find("not promoted"), std::string::npos) << out;

  status = promote(dead_, {dead_}, &out);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ": " << out;
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find("table promo: promoted"), std::string::npos) << out;
  // Idempotent.
  status = promote(dead_, {dead_}, &out);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ": " << out;
  EXPECT_NE(out.find("already"), std::string::npos) << out;

  {  // A fresh client naming the dead node down.
    auto b = client::Cluster::connect(config(true));
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ((*b)->nodes().size(), kNodes);
    EXPECT_EQ((*b)->root_node("txn/promo"), root);  // roots stay where they were
    client::ThreadClient* cb = *(*b)->thread_client();
    uint64_t word = 0;
    Status direct = sync_wait(cb->read(GlobalAddress(dead_, 4096), &word, 8));
    EXPECT_EQ(direct.code(), StatusCode::kUnavailable) << direct.to_string();
    EXPECT_NE(direct.message().find("down"), std::string_view::npos) << direct.to_string();
    auto tcb = cb->run(txn::TxnClient::create(cb));
    ASSERT_TRUE(tcb.ok()) << tcb.status().to_string();
    auto opened = cb->run(Table::open(cb, "promo"));
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    EXPECT_EQ(opened->failed_nodes(), 1ull << dead_);
    for (const auto& [k, v] : expected) {
      uint64_t got = 0;
      Status s = get(cb, tcb->get(), *opened, k, &got);
      ASSERT_TRUE(s.ok()) << "key " << k << ": " << s.to_string();
      EXPECT_EQ(got, v) << "key " << k;
    }
    // New transactions commit on formerly dead-primary buckets, inserts included.
    std::map<uint64_t, uint64_t> change;
    for (uint64_t k : on_dead_primary) change[k] = k + 5000;
    ASSERT_TRUE(put_all(cb, tcb->get(), *opened, change).ok());
    uint64_t fresh = kKeys;
    while (opened->bucket_of(fresh) % kNodes != dead_) ++fresh;
    ASSERT_TRUE(put_all(cb, tcb->get(), *opened, {{fresh, 99}}).ok());
    for (const auto& [k, v] : change) expected[k] = v;
    expected[fresh] = 99;
    for (const auto& [k, v] : expected) {
      uint64_t got = 0;
      ASSERT_TRUE(get(cb, tcb->get(), *opened, k, &got).ok()) << k;
      EXPECT_EQ(got, v) << "key " << k;
    }
    EXPECT_TRUE(cb->run((*tcb)->close()).ok());
  }
  // The running client picks the promotion up with refresh().
  ASSERT_TRUE(ca->run(t.refresh(ca)).ok());
  ASSERT_TRUE(put_all(ca, tca->get(), t, {{on_dead_primary[0], 4242}}).ok());
  uint64_t got = 0;
  ASSERT_TRUE(get(ca, tca->get(), t, on_dead_primary[0], &got).ok());
  EXPECT_EQ(got, 4242u);
  // Nothing stays behind on the surviving nodes' side of this client.
  (void)ca->run((*tca)->close());
}

// A coordinator killed right after writing its redo log (FARMEM_TXN_CRASH_AT=after_log: its
// locks held, nothing written in place), then a node holding the primary of some of its
// records killed: promotion finds the log through the locks on the surviving primaries and
// rolls it forward, the dead primaries' records onto their backups (by version).
TEST_P(TxnPromoteTest, PromotionRollsForwardACommittedTransactionOfADeadCoordinator) {
  auto a = client::Cluster::connect(config(false));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  client::ThreadClient* ca = *(*a)->thread_client();
  auto tca = ca->run(txn::TxnClient::create(ca));
  ASSERT_TRUE(tca.ok()) << tca.status().to_string();
  // The crash client updates keys 0..3, inserts 500 and erases 4. Find a table name whose
  // placement puts some of keys 0..3 on the dead node's primaries and some on neither of its
  // replicas (their locks survive and name the log).
  Table t;
  std::string name;
  for (int attempt = 0; attempt < 64 && !t.valid(); ++attempt) {
    name = "promo" + std::to_string(attempt);
    txn::TableOptions o;
    o.record_bytes = 8;
    o.capacity = 96;
    o.temporary = true;
    auto created = ca->run(Table::create(ca, name, o));
    ASSERT_TRUE(created.ok()) << created.status().to_string();
    const uint16_t root = (*a)->root_node("txn/" + name);
    dead_ = root == 1 ? 2 : 1;
    bool on_dead = false, elsewhere = false;
    for (uint64_t k = 0; k < 4; ++k) {
      const uint64_t b = created->bucket_of(k);
      on_dead |= b % kNodes == dead_;
      elsewhere |= b % kNodes == (dead_ + 1u) % kNodes;
    }
    if (on_dead && elsewhere) {
      t = std::move(*created);
    } else {
      ASSERT_TRUE(ca->run(created->destroy(ca)).ok());
    }
  }
  ASSERT_TRUE(t.valid()) << "no table name splits keys 0..3 as needed";
  std::printf("table %s, killing node %u\n", name.c_str(), dead_);
  std::map<uint64_t, uint64_t> load;
  for (uint64_t k = 0; k <= 4; ++k) load[k] = k;
  ASSERT_TRUE(put_all(ca, tca->get(), t, load).ok());

  auto child = ChildProcess::start({FARMEM_TXN_CRASH_CLIENT_BIN, "--servers", server_list(),
                                    "--table", name, "--keys", "4", "--tls", GetParam().tls},
                                   {"UCX_TLS=" + GetParam().tls, "FARMEM_TXN_CRASH_AT=after_log"});
  ASSERT_NE(child, nullptr);
  const int cs = child->wait_exit(60000);  // hang guard
  ASSERT_TRUE(WIFSIGNALED(cs) && WTERMSIG(cs) == SIGKILL) << cs << ": " << child->output();
  servers_[dead_]->signal(SIGKILL);

  // The log's node notices the coordinator's ended session when its connection closes; until
  // then promotion refuses (kBusy, nothing changed). A hang guard bounds the attempts.
  std::string out;
  int status = -1;
  for (int i = 0; i < 50; ++i) {
    status = promote(dead_, {dead_}, &out, name);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
    EXPECT_NE(out.find("still running"), std::string::npos) << out;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ": " << out;
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find("1 logs rolled forward"), std::string::npos) << out;

  auto b = client::Cluster::connect(config(true));
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  client::ThreadClient* cb = *(*b)->thread_client();
  auto tcb = cb->run(txn::TxnClient::create(cb));
  ASSERT_TRUE(tcb.ok()) << tcb.status().to_string();
  auto opened = cb->run(Table::open(cb, name));
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  // Every record of the transaction is visible, and nothing stays locked: one read-write
  // transaction locks them all at its first attempt.
  Transaction x = (*tcb)->begin();
  std::string v;
  for (uint64_t k = 0; k < 4; ++k) {
    Status s = cb->run(x.read_for_update(*opened, k, &v));
    ASSERT_TRUE(s.ok()) << "key " << k << ": " << s.to_string();
    EXPECT_EQ(value_u64(v), 1000 + k) << "key " << k;
  }
  Status s = cb->run(x.read_for_update(*opened, 500, &v));
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(value_u64(v), 500u);
  EXPECT_EQ(cb->run(x.read_for_update(*opened, 4, &v)).code(), StatusCode::kNotFound);
  EXPECT_TRUE(cb->run(x.commit()).ok());
  EXPECT_TRUE(cb->run((*tcb)->close()).ok());
  (void)ca->run((*tca)->close());
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnPromoteTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
