// Recovery: a coordinator killed (SIGKILL, by its FARMEM_TXN_CRASH_AT test hook) at each point
// of its commit leaves no lock stuck and no partial transaction visible: a surviving client
// that meets its locks rolls the transaction forward (its redo log was complete) or releases
// them (it was not). A coordinator stopped (SIGSTOP) mid-commit keeps its locks: others abort on
// them, never see its uncommitted images and never take them over; after SIGCONT it commits.
#include <signal.h>
#include <sys/wait.h>

#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

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

constexpr uint64_t kKeys = 4;  // the child updates 0..3, erases 4, inserts 500

class TxnRecoveryTest : public TxnTest {
 protected:
  std::string servers() const { return servers_[0]->address() + "," + servers_[1]->address(); }
  // Commits keys 0..kKeys with value = key (what the child then changes).
  void load_keys(const Table& t) {
    Transaction load = tc_->begin();
    for (uint64_t k = 0; k <= kKeys; ++k) {
      ASSERT_TRUE(c_->run(load.insert(t, k, u64_value(k))).ok());
    }
    ASSERT_TRUE(c_->run(load.commit()).ok());
  }
  // The crash client on table t, its hook at `phase` (SIGKILL, or SIGSTOP when `stop`).
  std::unique_ptr<ChildProcess> start_child(const Table& t, const std::string& phase,
                                            bool stop = false) {
    std::vector<std::string> env = {"UCX_TLS=" + GetParam().tls, "FARMEM_TXN_CRASH_AT=" + phase};
    if (stop) env.push_back("FARMEM_TXN_CRASH_SIGNAL=stop");
    return ChildProcess::start({FARMEM_TXN_CRASH_CLIENT_BIN, "--servers", servers(), "--table",
                                t.name(), "--keys", std::to_string(kKeys), "--tls", GetParam().tls},
                               env);
  }
  // Loads the keys, runs the crash client with its hook at phase.name (SIGKILL), then meets its
  // locks until recovery dealt with them and checks all or nothing of it is visible.
  void run_phase(const Table& t, const Phase& phase);
};

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

void TxnRecoveryTest::run_phase(const Table& t, const Phase& phase) {
  ASSERT_NO_FATAL_FAILURE(load_keys(t));
  auto child = start_child(t, phase.name);
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
    s = read_all(c_, tc_.get(), t, &values);
    if (s.code() != StatusCode::kAborted) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(s.ok()) << s.to_string() << " after " << attempts << " attempts";
  std::printf("phase %s: recovered after %d aborted attempts\n", phase.name.c_str(), attempts);
  const std::vector<uint64_t> before = {0, 1, 2, 3, 4, ~0ull};
  const std::vector<uint64_t> after = {1000, 1001, 1002, 1003, ~0ull, 500};
  EXPECT_EQ(values, phase.committed ? after : before);
  // Nothing stays locked: a new transaction locks every record at its first attempt.
  s = read_all(c_, tc_.get(), t, &values);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(values, phase.committed ? after : before);
}

TEST_P(TxnRecoveryTest, CoordinatorKilledBeforeItsLogRollsBack) {
  Table t = make_table("crash", 8, 64);
  run_phase(t, {"before_log", false});
}

TEST_P(TxnRecoveryTest, CoordinatorKilledAfterItsLogRollsForward) {
  Table t = make_table("crash", 8, 64);
  run_phase(t, {"after_log", true});
}

TEST_P(TxnRecoveryTest, CoordinatorKilledAfterItsWritesRollsForward) {
  Table t = make_table("crash", 8, 64);
  run_phase(t, {"after_write", true});
}

// Waits (hang guard: real time, not a measurement) until the child has stopped itself.
bool wait_stopped(pid_t pid, int limit_ms) {
  for (int waited = 0; waited < limit_ms; waited += 2) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WUNTRACED | WNOHANG);
    if (r == pid && WIFSTOPPED(status)) return true;
    if (r == pid) return false;  // it exited or was killed instead
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

TEST_P(TxnRecoveryTest, CoordinatorStoppedAfterItsLogKeepsItsLocksUntilItResumes) {
  Table t = make_table("crash", 8, 64);
  ASSERT_NO_FATAL_FAILURE(load_keys(t));
  auto child = start_child(t, "after_log", /*stop=*/true);
  ASSERT_NE(child, nullptr);
  ASSERT_TRUE(wait_stopped(child->pid(), 60000)) << child->output();

  // While it is stopped, its session lives: every attempt meets its locks and aborts with a
  // lock conflict (well past recovery_check_ns, so liveness was asked), reads included.
  for (int attempt = 0; attempt < 40; ++attempt) {
    Transaction w = tc_->begin();
    std::string v;
    Status s = c_->run(w.read_for_update(t, attempt % kKeys, &v));
    ASSERT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
    EXPECT_EQ(w.reason(), txn::AbortReason::kLockConflict);
    Transaction r = tc_->begin_read_only();
    s = c_->run(r.read(t, attempt % kKeys, &v));
    ASSERT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  child->signal(SIGCONT);
  const int status = child->wait_exit(60000);  // hang guard
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "status " << status << ", output: " << child->output();
  EXPECT_NE(child->output().find("committed"), std::string::npos) << child->output();
  std::vector<uint64_t> values;
  Status s = read_all(c_, tc_.get(), t, &values);  // first attempt: nothing stays locked
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(values, (std::vector<uint64_t>{1000, 1001, 1002, 1003, ~0ull, 500}));
}

// `farmem txn locks [--recover]` against the test's nodes: (exit status, output).
std::pair<int, std::string> txn_locks(const std::string& servers, const std::string& tls,
                                      const std::string& table, bool recover) {
  std::vector<std::string> args = {FARMEM_CLI_BIN, "txn",       "locks", "--table",
                                   table,          "--servers", servers};
  if (recover) args.push_back("--recover");
  auto cli = ChildProcess::start(args, {"UCX_TLS=" + tls});
  if (cli == nullptr) return {-1, "cannot start farmem"};
  const int status = cli->wait_exit(60000);  // hang guard
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, cli->output()};
}

TEST_P(TxnRecoveryTest, TxnLocksShowsADeadCoordinatorsLocksUntilRecoveryMeetsThem) {
  Table t = make_table("crash", 8, 64);
  ASSERT_NO_FATAL_FAILURE(load_keys(t));
  const std::string servers = this->servers();
  auto [clean_rc, clean] = txn_locks(servers, GetParam().tls, t.name(), false);
  EXPECT_EQ(clean_rc, 0) << clean;
  EXPECT_NE(clean.find("0 held lock(s)"), std::string::npos) << clean;

  auto child = start_child(t, "after_log");
  ASSERT_NE(child, nullptr);
  const int status = child->wait_exit(60000);  // hang guard
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << child->output();

  auto [held_rc, held] = txn_locks(servers, GetParam().tls, t.name(), false);
  EXPECT_EQ(held_rc, 1) << held;
  EXPECT_EQ(held.find("0 held lock(s)"), std::string::npos) << held;
  EXPECT_NE(held.find("held by the log slot"), std::string::npos) << held;
  // Recovery acts once the node has seen the dead coordinator's session end (when its
  // connection closes): a few attempts (hang guard), then nothing may stay locked.
  std::pair<int, std::string> rec;
  for (int attempt = 0; attempt < 200; ++attempt) {
    rec = txn_locks(servers, GetParam().tls, t.name(), true);
    if (rec.first == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(rec.first, 0) << rec.second;
  EXPECT_NE(rec.second.find("recovery acted on"), std::string::npos) << rec.second;
  EXPECT_EQ(rec.second.find("recovery acted on 0 "), std::string::npos) << rec.second;
  EXPECT_NE(rec.second.find("0 held lock(s)"), std::string::npos) << rec.second;
  std::vector<uint64_t> values;
  Status s = read_all(c_, tc_.get(), t, &values);  // first attempt: nothing stays locked
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(values, (std::vector<uint64_t>{1000, 1001, 1002, 1003, ~0ull, 500}));
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnRecoveryTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
