// A durable memory node (--data-dir): after kill -9 and a restart on the same directory, what was
// acknowledged is back (objects, their allocations, roots, persisted bytes), what sessions owned
// is reclaimed, and the directory refuses a second node, another format version and bad flags.
// Every wait is a hang guard, never a measurement.
#include "durable_node.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "farmem/client/batch.h"
#include "farmem/client/cluster.h"
#include "farmem/client/thread_client.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/when_all.h"
#include "harness.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

constexpr uint64_t kCapacity = 64ull << 20;

class DurableNodeTest : public ::testing::TestWithParam<Transport> {
 public:
  void start(const std::string& durability = "power", const std::string& checkpoint_log = "") {
    std::string why;
    ASSERT_TRUE(node_.start(&why, durability, checkpoint_log)) << why;
    client_ = &node_.client();
    server_ = &node_.server();
  }
  void kill_node() { node_.kill(); }
  client::NodeStats stats() {
    auto s = client_->run(client_->stats(0));
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? *s : client::NodeStats{};
  }

  DurableNode node_{GetParam().tls, kCapacity};
  const std::string& dir_ = node_.dir();
  client::ThreadClient* client_ = nullptr;
  ServerProcess* server_ = nullptr;
};

TEST_P(DurableNodeTest, KillNineKeepsObjectsRootsAndPersistedBytesAndReclaimsSessions) {
  ASSERT_NO_FATAL_FAILURE(start());
  client::ThreadClient& c = *client_;
  const uint64_t before_used = stats().used_bytes;
  EXPECT_EQ(stats().durability, "power");
  EXPECT_EQ(c.session_id(0) >> 32, 1u);  // the directory's first start
  auto id = c.run(c.object_create(0, "table", /*ephemeral=*/false));
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  auto addr = c.run(c.allocate_on(0, 8192, 64, *id));
  ASSERT_TRUE(addr.ok()) << addr.status().to_string();
  std::string data(8192, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 3);
  ASSERT_TRUE(runtime::sync_wait(c.write(*addr, data.data(), data.size())).ok());
  ASSERT_TRUE(c.run(c.persist(*addr, data.size())).ok());
  ASSERT_TRUE(c.run(c.publish_root("table.root", *addr, false, *id)).ok());
  ASSERT_TRUE(c.run(c.object_create(0, "scratch", /*ephemeral=*/true)).ok());
  auto session_block = c.run(c.allocate_on(0, 1 << 20));  // this session's: reclaimed
  ASSERT_TRUE(session_block.ok());
  EXPECT_EQ(stats().objects, 2u);

  kill_node();
  ASSERT_NO_FATAL_FAILURE(start());
  client::ThreadClient& d = *client_;
  EXPECT_EQ(d.session_id(0) >> 32, 2u);  // no session id of the first life comes back
  auto root = d.run(d.lookup_root("table.root"));
  ASSERT_TRUE(root.ok()) << root.status().to_string();
  EXPECT_EQ(*root, *addr);
  std::string back(data.size(), '\0');
  ASSERT_TRUE(runtime::sync_wait(d.read(*root, back.data(), back.size())).ok());
  EXPECT_EQ(back, data);
  auto reopened = d.run(d.object_open(0, "table"));
  ASSERT_TRUE(reopened.ok()) << reopened.status().to_string();
  EXPECT_EQ(*reopened, *id);
  EXPECT_EQ(d.run(d.object_open(0, "scratch")).status().code(), StatusCode::kNotFound);
  const client::NodeStats s = stats();
  EXPECT_EQ(s.objects, 1u);
  EXPECT_EQ(s.allocations, 1u);  // the object's block; the session's went back
  EXPECT_EQ(s.used_bytes, before_used + 8192);
  EXPECT_GT(s.recovery_records, 0u);

  // Destroying the object is durable too: after another kill the node is as it began.
  ASSERT_TRUE(d.run(d.object_destroy(0, *id)).ok());
  kill_node();
  ASSERT_NO_FATAL_FAILURE(start("process"));
  EXPECT_EQ(client_->run(client_->lookup_root("table.root")).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(stats().used_bytes, before_used);
  EXPECT_EQ(stats().objects, 0u);
  // New objects never reuse an id the directory has seen.
  auto fresh = client_->run(client_->object_create(0, "table", false));
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(*fresh, *id);
}

// Writes and persists numbered slots from many coroutines, kills the node at a seeded moment
// and checks that every acknowledged persist is there after the restart. `batched`: each write
// and its persist go in one Batch (one message over TCP); `power_loss`: the node's files take
// writes only at sync, so the kill takes what a power loss could.
void persists_survive_a_kill(DurableNodeTest* t, bool batched, bool power_loss) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  if (power_loss) t->node_.extra_args = {"--simulate-power-loss"};
  ASSERT_NO_FATAL_FAILURE(t->start("power", "64KiB"));
  client::ThreadClient& c = *t->client_;
  auto id = c.run(c.object_create(0, "slots", false));
  ASSERT_TRUE(id.ok());
  constexpr uint64_t kSlots = 4096;
  auto base = c.run(c.allocate_on(0, kSlots * 8, 64, *id));
  ASSERT_TRUE(base.ok());
  ASSERT_TRUE(c.run(c.publish_root("slots", *base, false, *id)).ok());
  // A watcher thread kills the node once kill_after persists were acknowledged, while the
  // writers go on (they then fail: the node is gone).
  const uint64_t kill_after = 500 + rng() % 3000;  // a 48-byte record each: 0..2 checkpoints
  std::vector<uint64_t> acked(kSlots, 0);
  std::atomic<uint64_t> done{0};
  std::thread killer = t->node_.kill_when(done, kill_after);
  auto writer = [&](uint64_t first) -> runtime::Task<Status> {
    for (uint64_t v = first;; v += 16) {
      const uint64_t slot = v % kSlots;
      const GlobalAddress a = *base + slot * 8;
      if (batched) {
        client::Batch b(c);
        FARMEM_CO_TRY(b.write(a, &v, 8));
        FARMEM_CO_TRY(b.persist(a, 8));
        FARMEM_CO_TRY(co_await b.wait());
      } else {
        FARMEM_CO_TRY(co_await c.write(a, &v, 8));
        FARMEM_CO_TRY(co_await c.persist(a, 8));
      }
      acked[slot] = std::max(acked[slot], v);
      done.fetch_add(1);
    }
  };
  std::vector<runtime::Task<Status>> tasks;
  for (uint64_t i = 1; i <= 16; ++i) tasks.push_back(writer(i));
  const std::vector<Status> ended = c.run(runtime::when_all(std::move(tasks)));
  killer.join();
  for (const Status& e : ended) EXPECT_FALSE(e.ok());  // they stop only when the node dies
  EXPECT_GE(done.load(), kill_after);
  t->kill_node();
  ASSERT_NO_FATAL_FAILURE(t->start("power", "64KiB"));
  std::vector<uint64_t> back(kSlots);
  auto root = t->client_->run(t->client_->lookup_root("slots"));
  ASSERT_TRUE(root.ok());
  ASSERT_TRUE(runtime::sync_wait(t->client_->read(*root, back.data(), kSlots * 8)).ok());
  for (uint64_t s = 0; s < kSlots; ++s) {
    // A slot holds its last acknowledged value or a later one that was in flight.
    ASSERT_GE(back[s], acked[s]) << "seed " << seed << " slot " << s;
    ASSERT_EQ(back[s] % kSlots, back[s] == 0 ? 0 : s) << "seed " << seed << " slot " << s;
  }
}

TEST_P(DurableNodeTest, EveryAcknowledgedPersistSurvivesAKillAtARandomMoment) {
  persists_survive_a_kill(this, /*batched=*/false, /*power_loss=*/false);
}

// Batch::persist: on TCP the write and its persist are one message, which the node answers
// only once the range is stable; on shm the persist follows the batch's direct write.
TEST_P(DurableNodeTest, EveryAcknowledgedBatchPersistSurvivesAPowerLoss) {
  persists_survive_a_kill(this, /*batched=*/true, /*power_loss=*/true);
}

// Runs farmem-server with `args` (expected to refuse at once); returns its exit code and
// standard error in *out.
int run_server(const std::string& args, std::string* out) {
  return run_command(fmt::format("{} --port 0 --capacity 1MiB {} 2>&1", FARMEM_SERVER_BIN, args),
                     out);
}

TEST_P(DurableNodeTest, ADirectoryRefusesASecondNodeAnotherVersionAndBadFlags) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string out;
  EXPECT_NE(run_server(fmt::format("--data-dir {}/data", dir_), &out), 0);
  EXPECT_NE(out.find(fmt::format("in use by another memory node (pid {})", server_->pid())),
            std::string::npos)
      << out;

  const std::string other = dir_ + "/other";
  std::filesystem::create_directories(other);
  std::ofstream(other + "/FORMAT") << "farmem-data-dir 99\n";
  out.clear();
  EXPECT_NE(run_server(fmt::format("--data-dir {}", other), &out), 0);
  EXPECT_NE(out.find("version"), std::string::npos) << out;

  out.clear();
  EXPECT_NE(run_server("--durability power", &out), 0);
  EXPECT_NE(out.find("needs a data directory"), std::string::npos) << out;
  out.clear();
  EXPECT_NE(run_server(fmt::format("--data-dir {}/x --durability disk", dir_), &out), 0);
  EXPECT_NE(out.find("power"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Transports, DurableNodeTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
