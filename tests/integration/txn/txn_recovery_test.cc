// Recovery: a coordinator killed (SIGKILL, by its FARMEM_TXN_CRASH_AT test hook) at each point
// of its commit leaves no lock stuck and no partial transaction visible: a surviving client
// that meets its locks rolls the transaction forward (its redo log was complete) or releases
// them (it was not).
#include <signal.h>
#include <sys/wait.h>

#include <string>
#include <thread>
#include <tuple>

#include "farmem/txn/transaction.h"
#include "txn_fixture.h"

namespace farmem::testing {
namespace {

using txn::Table;
using txn::Transaction;

struct Phase {
  std::string name;
  bool committed;  // whether the transaction must be visible after recovery
};

class TxnRecoveryTest : public TxnTest {};

constexpr uint64_t kKeys = 4;  // the child updates 0..3, erases 4, inserts 500

// One attempt to read (and lock) every key the child touched; fills *values (~0 for absent).
Status read_all(client::ThreadClient* c, txn::TxnClient* tc, const Table& t,
                std::vector<uint64_t>* values) {
  Transaction x = tc->begin();
  values->clear();
  std::string v;
  for (uint64_t k : {0, 1, 2, 3, 4, 500}) {
    Status s = c->run(x.read_for_update(t, k, &v));
    if (s.code() == StatusCode::kNotFound) {
      values->push_back(~0ull);
      continue;
    }
    if (!s.ok()) return s;
    values->push_back(value_u64(v));
  }
  return c->run(x.commit());
}

void run_phase(TxnRecoveryTest* test, const Phase& phase, const std::string& tls,
               client::ThreadClient* c, txn::TxnClient* tc, const Table& t,
               const std::vector<std::unique_ptr<ServerProcess>>& servers) {
  {
    Transaction load = tc->begin();
    for (uint64_t k = 0; k <= kKeys; ++k) ASSERT_TRUE(c->run(load.insert(t, k, u64_value(k))).ok());
    ASSERT_TRUE(c->run(load.commit()).ok());
  }
  auto child = ChildProcess::start({FARMEM_TXN_CRASH_CLIENT_BIN, "--servers",
                                    servers[0]->address() + "," + servers[1]->address(), "--table",
                                    t.name(), "--keys", std::to_string(kKeys), "--tls", tls},
                                   {"UCX_TLS=" + tls, "FARMEM_TXN_CRASH_AT=" + phase.name});
  ASSERT_NE(child, nullptr);
  const int status = child->wait_exit(60000);  // hang guard
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "status " << status << ", output: " << child->output();
  EXPECT_NE(child->output().find("committing"), std::string::npos) << child->output();

  // Meet the dead coordinator's locks until recovery has dealt with them (a hang guard bounds
  // the attempts: the node notices the ended session when the connection closes).
  std::vector<uint64_t> values;
  Status s;
  int attempts = 0;
  for (; attempts < 3000; ++attempts) {
    s = read_all(c, tc, t, &values);
    if (s.code() != StatusCode::kAborted) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(s.ok()) << s.to_string() << " after " << attempts << " attempts";
  std::printf("phase %s: recovered after %d aborted attempts\n", phase.name.c_str(), attempts);
  const std::vector<uint64_t> before = {0, 1, 2, 3, 4, ~0ull};
  const std::vector<uint64_t> after = {1000, 1001, 1002, 1003, ~0ull, 500};
  EXPECT_EQ(values, phase.committed ? after : before);
  // Nothing stays locked: a new transaction locks every record at its first attempt.
  s = read_all(c, tc, t, &values);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(values, phase.committed ? after : before);
  (void)test;
}

TEST_P(TxnRecoveryTest, CoordinatorKilledBeforeItsLogRollsBack) {
  Table t = make_table("crash", 8, 64);
  run_phase(this, {"before_log", false}, GetParam().tls, c_, tc_.get(), t, servers_);
}

TEST_P(TxnRecoveryTest, CoordinatorKilledAfterItsLogRollsForward) {
  Table t = make_table("crash", 8, 64);
  run_phase(this, {"after_log", true}, GetParam().tls, c_, tc_.get(), t, servers_);
}

TEST_P(TxnRecoveryTest, CoordinatorKilledAfterItsWritesRollsForward) {
  Table t = make_table("crash", 8, 64);
  run_phase(this, {"after_write", true}, GetParam().tls, c_, tc_.get(), t, servers_);
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnRecoveryTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
