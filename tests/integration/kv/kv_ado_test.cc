// Active Data Objects end to end: a farmem-server with the kv service and ADO plugins
// ([kv] ado_plugin_dir), clients over shared memory and over TCP (the node keeps its default
// transports: an ADO maps the region through shared memory). Covers invoke_ado /
// invoke_put_ado and their flags, in-place work and the store callbacks, the filter plugin
// against a client-side answer, signals, the process's life (started on open, stopped at close
// and delete, gone at node shutdown), isolation (a crash, a hang, kill -9 and SIGSTOP
// mid-invocation, a plugin that does not load: a clear error, the node and other pools keep
// serving, the next invocation works with a fresh process) and malformed ADO requests at the
// wire level.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "farmem/kv/ado_plugin.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/store.h"
#include "farmem/runtime/scheduler.h"
#include "farmem/runtime/when_all.h"
#include "filter/filter_query.h"
#include "harness.h"
#include "test_seed.h"

using farmem::runtime::sync_wait;

namespace farmem::testing {
namespace {

using kv::Pool;
using kv::Store;
namespace w = kv::wire;

constexpr uint64_t kPoolBytes = 32ull << 20;
constexpr const char* kCounter = "libfarmem_ado_counter.so";
constexpr const char* kFilter = "libfarmem_ado_filter.so";
constexpr const char* kTesting = "libfarmem_ado_testing.so";

std::string text_of(const kv::AdoResult& r, size_t i = 0) {
  return i < r.responses.size() ? r.responses[i].data : std::string("<no response>");
}

// Whether a process id names a live (not reaped) process.
bool process_exists(pid_t pid) {
  struct stat st {};
  return pid > 0 && ::stat(fmt::format("/proc/{}", pid).c_str(), &st) == 0;
}

// Polls `cond` for up to limit_ms of real time (a hang guard, not a measurement).
template <typename F>
bool eventually(F cond, int limit_ms = 10000) {
  auto stop = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > stop) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class KvAdoTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("kv-ado-{}", getpid());
    std::filesystem::create_directories(dir_);
    std::string config = dir_ + "/node.toml";
    std::ofstream(config) << fmt::format(
        "[memnode]\n[kv]\nado_plugin_dir = \"{}\"\nado_binary = \"{}\"\nado_timeout_ms = {}\n"
        "ado_launch_retry_ms = {}\n",
        FARMEM_ADO_PLUGIN_DIR, FARMEM_ADO_BIN, kTimeoutMs, kLaunchRetryMs);
    ServerOptions o;  // default transports: the ADO needs shared memory with its node
    o.capacity_bytes = 256ull << 20;
    o.extra_args = {"--config", config, "--workers", "2"};
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    auto c = client::Cluster::connect(config_for({server_.get()}, GetParam().tls));
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cluster_ = std::move(*c);
    client_ = *cluster_->thread_client();
    auto s = Store::open(client_);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    store_ = std::move(*s);
  }
  void TearDown() override {
    pools_.clear();
    store_.reset();
    cluster_.reset();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  Pool* pool(const std::string& name, const std::string& plugins) {
    auto p = sync_wait(store_->create_pool(name, kPoolBytes, 1000, w::kPoolCreateOnly));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    if (!p.ok()) return nullptr;
    if (!plugins.empty()) {
      Status s = sync_wait((*p)->configure("AdoPlugins::" + plugins));
      EXPECT_TRUE(s.ok()) << s.to_string();
    }
    pools_.push_back(std::move(*p));
    return pools_.back().get();
  }

  pid_t ado_pid(Pool* p) {
    auto r = sync_wait(p->invoke_ado("", "pid"));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::stoi(text_of(*r)) : -1;
  }

  static constexpr uint32_t kTimeoutMs = 1500;
  // Longer than any test: a failed launch is not retried within one (see APluginThatDoesNotLoad).
  static constexpr uint32_t kLaunchRetryMs = 600'000;
  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Cluster> cluster_;
  client::ThreadClient* client_ = nullptr;
  std::unique_ptr<Store> store_;
  std::vector<std::unique_ptr<Pool>> pools_;
};

TEST_P(KvAdoTest, CounterInvocationsAndFlags) {
  Pool* p = pool("counters", kCounter);
  ASSERT_NE(p, nullptr);
  // Absent key: kNotFound, unless created on demand (zeroed, value_size bytes).
  auto r = sync_wait(p->invoke_ado("c", "add:5"));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().to_string();
  r = sync_wait(p->invoke_ado("c", "add:5", w::kAdoCreateOnDemand | w::kAdoZeroNewValue, 8));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(text_of(*r), "5");
  r = sync_wait(p->invoke_ado("c", "add:-2", w::kAdoCreateOnDemand | w::kAdoZeroNewValue, 8));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(text_of(*r), "3");
  std::string v;
  ASSERT_TRUE(sync_wait(p->get("c", &v)).ok());
  int64_t n = 0;
  ASSERT_EQ(v.size(), 8u);
  std::memcpy(&n, v.data(), 8);
  EXPECT_EQ(n, 3) << "the plugin's in-place write is the stored value";
  // Read-only: the plugin refuses to write; the value is unchanged.
  r = sync_wait(p->invoke_ado("c", "add:1", w::kAdoReadOnly));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->plugin_status, FARMEM_ADO_E_INVALID);
  r = sync_wait(p->invoke_ado("c", "read", w::kAdoReadOnly));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(text_of(*r), v);
  // invoke_put_ado: put, then the plugin appends in place (resize through a callback).
  r = sync_wait(p->invoke_put_ado("log", "ab", "append:cd"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(text_of(*r), "4");
  ASSERT_TRUE(sync_wait(p->get("log", &v)).ok());
  EXPECT_EQ(v, "abcd");
  r = sync_wait(
      p->invoke_ado("fresh", "append:xy", w::kAdoCreateOnDemand, 0));  // resize a new value
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(sync_wait(p->get("fresh", &v)).ok());
  EXPECT_EQ(v, "xy");
  r = sync_wait(p->invoke_put_ado("log", "zz", "append:e", w::kAdoNoOverwrite));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(sync_wait(p->get("log", &v)).ok());
  EXPECT_EQ(v, "abcde") << "kAdoNoOverwrite keeps the existing value";
  // Create only: the value exists afterwards and the plugin was not called.
  r = sync_wait(p->invoke_ado("new", "add:7", w::kAdoCreateOnly | w::kAdoZeroNewValue, 8));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->responses.empty());
  ASSERT_TRUE(sync_wait(p->get("new", &v)).ok());
  EXPECT_EQ(v, std::string(8, '\0'));
  EXPECT_EQ(sync_wait(p->invoke_ado("new", "add:7", w::kAdoCreateOnly, 8)).status().code(),
            StatusCode::kAlreadyExists);
  // Key-less, through a callback.
  r = sync_wait(p->invoke_ado("", "keys"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(text_of(*r), "4");
  // Asynchronous: answered at once, applied in order before the next invocation.
  r = sync_wait(p->invoke_ado("c", "add:100", w::kAdoAsync));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->responses.empty());
  r = sync_wait(p->invoke_ado("c", "add:0"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(text_of(*r), "103");
  // Nobody takes the request.
  EXPECT_EQ(sync_wait(p->invoke_ado("c", "no such command")).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(KvAdoTest, LocksAreRespected) {
  Pool* p = pool("locks", kCounter);
  ASSERT_NE(p, nullptr);
  std::string zero(8, '\0');
  ASSERT_TRUE(sync_wait(p->put("k", zero)).ok());
  auto lock = sync_wait(p->lock("k", kv::LockMode::kWrite));
  ASSERT_TRUE(lock.ok()) << lock.status().to_string();
  EXPECT_EQ(sync_wait(p->invoke_ado("k", "add:1")).status().code(), StatusCode::kBusy);
  ASSERT_TRUE(sync_wait(p->unlock(*lock)).ok());
  auto r = sync_wait(p->invoke_ado("k", "add:1"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(text_of(*r), "1");
  // After the invocation the key is unlocked and its record valid again (get checks it).
  std::string v;
  ASSERT_TRUE(sync_wait(p->get("k", &v)).ok());
  EXPECT_EQ(v[0], 1);
}

TEST_P(KvAdoTest, FilterAgreesWithTheClient) {
  Pool* p = pool("records", kFilter);
  ASSERT_NE(p, nullptr);
  std::mt19937_64 rng(test_seed());
  const std::string query = "top3 2 where 0 lt 300 prefix r";
  ado_filter::Query q;
  std::string error;
  ASSERT_TRUE(ado_filter::parse_query(query, &q, &error)) << error;
  ado_filter::Accumulator expect(q);
  std::vector<std::pair<std::string, std::string>> records;
  for (int i = 0; i < 2000; ++i) {
    int64_t f[4];
    for (auto& x : f) x = static_cast<int64_t>(rng() % 1000);
    std::string key = fmt::format("{}{:05}", i % 7 == 0 ? "x" : "r", i);
    records.emplace_back(key, std::string(reinterpret_cast<const char*>(f), sizeof(f)));
    if (expect.key_matches(key)) {
      const std::string& value = records.back().second;
      expect.add(key, reinterpret_cast<const uint8_t*>(value.data()), value.size());
    }
  }
  std::vector<runtime::Task<Status>> puts;
  for (const auto& [key, value] : records) puts.push_back(p->put(key, value));
  for (const Status& s : client_->run(runtime::when_all(std::move(puts)))) {
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  auto r = sync_wait(p->invoke_ado("", query, w::kAdoReadOnly));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_GE(r->responses.size(), 2u);
  EXPECT_EQ(text_of(*r), expect.summary());
  ado_filter::FilterResult got{};
  ASSERT_EQ(r->responses[1].data.size(), sizeof(got));
  std::memcpy(&got, r->responses[1].data.data(), sizeof(got));
  EXPECT_EQ(got.matched, expect.result().matched);
  EXPECT_EQ(got.sum, expect.result().sum);
  auto top = expect.top();
  ASSERT_EQ(r->responses.size(), 2 + top.size());
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(r->responses[2 + i].data.substr(8), top[i].second);
  }
}

TEST_P(KvAdoTest, SignalsAndEventsReachThePlugin) {
  Pool* p = pool("signals", kTesting);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(sync_wait(p->configure("AdoSignals::post-put,post-erase")).ok());
  auto second = sync_wait(store_->open_pool("signals"));  // an open event
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  pools_.push_back(std::move(*second));
  ASSERT_TRUE(sync_wait(p->put("a", "1")).ok());
  ASSERT_TRUE(sync_wait(p->erase("a")).ok());
  auto r = sync_wait(p->invoke_ado("", "events"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // Signals queue ahead of the later invocation, in order.
  EXPECT_EQ(text_of(*r), "launch new\nevent 1\nevent 2\nsignal 1 a\nsignal 3 a\n");
}

TEST_P(KvAdoTest, TheProcessLivesWhileThePoolIsOpen) {
  Pool* p = pool("life", kTesting);
  ASSERT_NE(p, nullptr);
  pid_t pid = ado_pid(p);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ado_pid(p), pid) << "one process serves the pool";
  ASSERT_TRUE(sync_wait(store_->close_pool(*p)).ok());
  EXPECT_TRUE(eventually([pid] { return !process_exists(pid); })) << "stopped and reaped";
  auto reopened = sync_wait(store_->open_pool("life"));
  ASSERT_TRUE(reopened.ok()) << reopened.status().to_string();
  pid_t again = ado_pid(reopened->get());
  EXPECT_GT(again, 0);
  EXPECT_NE(again, pid);
  pools_.push_back(std::move(*reopened));
  ASSERT_TRUE(sync_wait(store_->delete_pool("life")).ok());
  EXPECT_TRUE(eventually([again] { return !process_exists(again); })) << "deleted: stopped";
  // Node shutdown takes the ADO processes with it.
  Pool* q = pool("last", kTesting);
  ASSERT_NE(q, nullptr);
  pid_t last = ado_pid(q);
  pools_.clear();
  store_.reset();
  cluster_.reset();
  EXPECT_EQ(server_->stop(), 0);
  EXPECT_TRUE(eventually([last] { return !process_exists(last); }));
  server_.reset();
}

TEST_P(KvAdoTest, CrashHangKillAndStopAreIsolated) {
  Pool* p = pool("fragile", kTesting);
  Pool* other = pool("other", kCounter);
  Pool* plain = pool("plain", "");
  ASSERT_TRUE(p && other && plain);
  ASSERT_TRUE(sync_wait(plain->put("k", "v")).ok());
  auto others_fine = [&] {
    std::string v;
    EXPECT_TRUE(sync_wait(plain->get("k", &v)).ok());
    auto r =
        sync_wait(other->invoke_ado("n", "add:1", w::kAdoCreateOnDemand | w::kAdoZeroNewValue, 8));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
  };
  pid_t first = ado_pid(p);
  // A crash: kUnavailable naming the pool and plugin, the node and other pools keep serving.
  auto r = sync_wait(p->invoke_ado("", "abort"));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("pool 'fragile'"), std::string::npos)
      << r.status().to_string();
  EXPECT_NE(r.status().message().find(kTesting), std::string::npos) << r.status().to_string();
  others_fine();
  pid_t second = ado_pid(p);
  EXPECT_NE(second, first) << "a fresh process";
  EXPECT_TRUE(eventually([first] { return !process_exists(first); })) << "the crashed one reaped";
  // A hang past ado_timeout_ms: kTimedOut; killed and reaped.
  r = sync_wait(p->invoke_ado("", "hang"));
  EXPECT_EQ(r.status().code(), StatusCode::kTimedOut) << r.status().to_string();
  EXPECT_TRUE(eventually([second] { return !process_exists(second); }));
  others_fine();
  // kill -9 and SIGSTOP in the middle of an invocation.
  for (int sig : {SIGKILL, SIGSTOP}) {
    pid_t pid = ado_pid(p);
    ASSERT_GT(pid, 0);
    std::thread killer([pid, sig] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::kill(pid, sig);
    });
    r = sync_wait(p->invoke_ado("", fmt::format("sleep:{}", 2 * kTimeoutMs + 1000)));
    killer.join();
    EXPECT_EQ(r.status().code(), sig == SIGKILL ? StatusCode::kUnavailable : StatusCode::kTimedOut)
        << strsignal(sig) << ": " << r.status().to_string();
    EXPECT_TRUE(eventually([pid] { return !process_exists(pid); })) << "reaped after " << sig;
    others_fine();
  }
  r = sync_wait(p->invoke_ado("", "echo:alive"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(text_of(*r), "alive");
}

// A plugin that dies half-way through an update of its target leaves the old value: the node
// puts back the copy it took when it locked the target (an undo log of one value).
TEST_P(KvAdoTest, ACrashInTheMiddleOfAnUpdateLeavesTheOldValue) {
  Pool* p = pool("undo", kTesting);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(sync_wait(p->put("t", "old-value-123")).ok());
  auto r = sync_wait(p->invoke_ado("t", "write-abort:NEW"));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().to_string();
  std::string v;
  ASSERT_TRUE(*sync_wait(p->get("t", &v)));
  EXPECT_EQ(v, "old-value-123");
  r = sync_wait(p->invoke_ado("t", "write:NEW"));  // a fresh process; a whole update stays
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(*sync_wait(p->get("t", &v)));
  EXPECT_EQ(v, "NEW-value-123");
}

// tx_add: a plugin that changes two values (its target and a key it opened) and dies before the
// invocation ends leaves both as they were; one whose invocation ends keeps both changes; tx_abort
// puts the old bytes back at once; values with added ranges may not move or unlock, and bytes
// outside the call's values may not be added.
TEST_P(KvAdoTest, ATransactionIsWholeOrAbsent) {
  Pool* p = pool("tx", kTesting);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(sync_wait(p->put("t", "old-target")).ok());
  ASSERT_TRUE(sync_wait(p->put("o", "old-other")).ok());
  auto values = [&] {
    std::string t, o;
    EXPECT_TRUE(*sync_wait(p->get("t", &t)));
    EXPECT_TRUE(*sync_wait(p->get("o", &o)));
    return t + "|" + o;
  };
  auto r = sync_wait(p->invoke_ado("t", "tx-write:crash:o:NEW"));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().to_string();
  EXPECT_EQ(values(), "old-target|old-other") << "the process died mid-invocation";
  r = sync_wait(p->invoke_ado("t", "tx-write:undo:o:XYZ"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(values(), "old-target|old-other") << "tx_abort";
  r = sync_wait(p->invoke_ado("t", "tx-write:resize:o:ab"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(text_of(*r), fmt::format("status={}", FARMEM_ADO_E_INVALID));
  r = sync_wait(p->invoke_ado("t", "tx-write:outside:o:cd"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(text_of(*r), fmt::format("status={}", FARMEM_ADO_E_INVALID));
  EXPECT_EQ(values(), "cdd-target|cdd-other") << "the calls that returned kept their changes";
  r = sync_wait(p->invoke_ado("t", "tx-write:commit:o:NEW"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(values(), "NEW-target|NEW-other");
}

// The counter's transfers keep the pool's total while its ADO process is killed at seeded moments
// in the middle of them.
TEST_P(KvAdoTest, CounterTransfersSurviveKillsOfTheAdo) {
  Pool* p = pool("bank", std::string(kCounter) + "," + kTesting);
  ASSERT_NE(p, nullptr);
  constexpr int kCounters = 4;
  constexpr int64_t kStart = 1000;
  auto name = [](int i) { return fmt::format("c{}", i); };
  for (int i = 0; i < kCounters; ++i) {
    auto r = sync_wait(p->invoke_ado(name(i), fmt::format("add:{}", kStart),
                                     w::kAdoCreateOnDemand | w::kAdoZeroNewValue, 8));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  int kills = 0;
  for (int round = 0; round < 3; ++round) {
    pid_t pid = ado_pid(p);
    ASSERT_GT(pid, 0);
    std::atomic<int> done{0};
    std::atomic<bool> killed{false};
    const int kill_after = 20 + static_cast<int>(rng() % 60);
    std::thread killer([&done, &killed, pid, kill_after] {
      eventually([&] { return done.load() >= kill_after; });
      ::kill(pid, SIGKILL);
      killed = true;
    });
    // Transfers go on until one fails, or until the process is surely gone (it died between
    // two of them, and a fresh one serves): the kill was sent, and two more were answered.
    bool failed = false;
    for (int after_kill = 0; !failed && after_kill < 2 && done.load() < 100'000;) {
      if (killed.load()) ++after_kill;
      const int from = static_cast<int>(rng() % kCounters);
      const int to = (from + 1 + static_cast<int>(rng() % (kCounters - 1))) % kCounters;
      auto r =
          sync_wait(p->invoke_ado(name(from), fmt::format("transfer:{}:{}", rng() % 50, name(to))));
      failed = !r.ok();
      if (failed) {
        EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().to_string();
      }
      done.fetch_add(1);
    }
    killer.join();
    kills += failed ? 1 : 0;
    int64_t total = 0;
    for (int i = 0; i < kCounters; ++i) {
      auto r = sync_wait(p->invoke_ado(name(i), "read", w::kAdoReadOnly));
      if (!failed && r.status().code() == StatusCode::kUnavailable) {
        r = sync_wait(p->invoke_ado(name(i), "read", w::kAdoReadOnly));  // it died only now
      }
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      int64_t v = 0;
      ASSERT_EQ(text_of(*r).size(), sizeof(v));
      std::memcpy(&v, text_of(*r).data(), sizeof(v));
      total += v;
    }
    EXPECT_EQ(total, kCounters * kStart) << "seed " << seed << " round " << round;
  }
  std::printf("seed %llu: %d of 3 rounds' kills landed in an invocation\n",
              static_cast<unsigned long long>(seed), kills);
}

TEST_P(KvAdoTest, APluginThatDoesNotLoad) {
  Pool* p = pool("broken", "libno_such_plugin.so");
  ASSERT_NE(p, nullptr);
  // The failed launch (at the configure) is not retried within ado_launch_retry_ms: each
  // invocation gets its error at once, saying so (the refusal comes before any new process).
  for (int i = 0; i < 3; ++i) {
    auto r = sync_wait(p->invoke_ado("", "anything"));
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(r.status().message().find("libno_such_plugin.so"), std::string::npos)
        << r.status().to_string();
    EXPECT_NE(r.status().message().find("no new ADO process is tried"), std::string::npos)
        << r.status().to_string();
  }
  // Configuring a working plugin fixes the pool.
  ASSERT_TRUE(sync_wait(p->configure(std::string("AdoPlugins::") + kTesting)).ok());
  auto r = sync_wait(p->invoke_ado("", "echo:ok"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
}

// Malformed ADO requests at the wire level: an error reply each, and the node keeps serving.
TEST_P(KvAdoTest, MalformedRequestsGetErrors) {
  Pool* p = pool("wire", kTesting);
  ASSERT_NE(p, nullptr);
  const uint16_t node = p->node();
  auto send = [&](uint16_t opcode, const std::string& payload) {
    std::vector<uint8_t> reply(70000);
    uint32_t got = 0;
    return client_->run(client_->rpc(node, opcode, payload.data(), payload.size(), reply.data(),
                                     static_cast<uint32_t>(reply.size()), &got));
  };
  auto request = [&](w::KvAdoRequest r, const std::string& tail) {
    return std::string(reinterpret_cast<const char*>(&r), sizeof(r)) + tail;
  };
  const uint16_t invoke = static_cast<uint16_t>(w::KvOpcode::kInvokeAdo);
  const uint16_t invoke_put = static_cast<uint16_t>(w::KvOpcode::kInvokePutAdo);
  w::KvAdoRequest good{p->handle(), 0, 0, 0, 0, 3};
  Status ok = send(invoke, request(good, "pid"));
  EXPECT_TRUE(ok.ok()) << ok.to_string();
  EXPECT_FALSE(send(invoke, "short").ok());
  w::KvAdoRequest lengths = good;
  lengths.request_bytes = 100;
  EXPECT_FALSE(send(invoke, request(lengths, "pid")).ok());
  w::KvAdoRequest flags = good;
  flags.flags = 1u << 20;
  EXPECT_FALSE(send(invoke, request(flags, "pid")).ok());
  w::KvAdoRequest value = good;
  value.value_bytes = 2;
  EXPECT_FALSE(send(invoke, request(value, "vvpid")).ok()) << "a value needs invoke_put";
  w::KvAdoRequest huge = good;
  huge.request_bytes = w::kMaxAdoRequestBytes + 1;
  EXPECT_FALSE(send(invoke, request(huge, "")).ok());
  w::KvAdoRequest keyless_put{p->handle(), 0, 0, 0, 1, 0};
  EXPECT_FALSE(send(invoke_put, request(keyless_put, "v")).ok());
  w::KvAdoRequest bogus = good;
  bogus.pool = 0xdead;
  Status s = send(invoke, request(bogus, "pid"));
  EXPECT_FALSE(s.ok());
  w::KvAdoRequest big_value{p->handle(), 1ull << 40, w::kAdoCreateOnDemand, 1, 0, 0};
  EXPECT_EQ(send(invoke, request(big_value, "k")).code(), StatusCode::kInvalidArgument);
  auto r = sync_wait(p->invoke_ado("", "echo:still serving"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(text_of(*r), "still serving");
}

INSTANTIATE_TEST_SUITE_P(Transports, KvAdoTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
