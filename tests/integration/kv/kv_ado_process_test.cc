// The ADO process on its own: the node's side (kv::service::AdoProcess) spawns real farmem-ado
// processes with real plugins against a real farmem-server, whose region the ADO maps. The test
// plays the pool: it lays records out in memory it allocated on the node and answers the
// plugins' store callbacks (FakePool). Covers the launch, in-place work, callbacks, and every
// failure: crash (abort), hang past the deadline, kill -9 and SIGSTOP mid-invocation, a plugin
// that does not load or refuses to launch, a node without shared memory, and junk on the
// channel. Each ends with a clear error naming the pool, the process reaped, and a fresh
// process that works.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "farmem/common/clock.h"
#include "farmem/kv/wire.h"
#include "filter/filter_query.h"
#include "harness.h"
#include "kv/service/ado_process.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

using kv::service::AdoCallbacks;
using kv::service::AdoProcess;
using kv::service::AdoProcessOptions;
namespace ado = kv::ado;
namespace w = kv::wire;

// A pool laid out by hand in node memory: records as kv.md describes them, found by key.
class FakePool : public AdoCallbacks {
 public:
  FakePool(uint8_t* base, uint64_t offset, uint64_t bytes)
      : base_(base), start_(offset), end_(offset + bytes), next_(offset) {}

  // Writes a live record; returns its value's region offset.
  uint64_t put(const std::string& key, const std::string& value) {
    uint64_t rec = next_;
    uint64_t size = sizeof(w::KvRecordHeader) + key.size() + value.size();
    next_ += (size + w::kRecordAlign - 1) / w::kRecordAlign * w::kRecordAlign;
    EXPECT_LE(next_, end_);
    uint64_t version = ++version_;
    w::KvRecordHeader h{w::record_state(version, w::kRecordLive), version,
                        static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size()), 0};
    std::memcpy(base_ + rec, &h, sizeof(h));
    std::memcpy(base_ + rec + sizeof(h), key.data(), key.size());
    if (!value.empty())
      std::memcpy(base_ + rec + sizeof(h) + key.size(), value.data(), value.size());
    if (auto it = records_.find(key); it != records_.end()) kill_record(it->second);
    records_[key] = rec;
    return rec + sizeof(h) + key.size();
  }
  std::string value(const std::string& key) const {
    uint64_t rec = records_.at(key);
    w::KvRecordHeader h{};
    std::memcpy(&h, base_ + rec, sizeof(h));
    return std::string(reinterpret_cast<const char*>(base_ + rec + sizeof(h) + h.key_bytes),
                       h.value_bytes);
  }
  uint64_t record_of(const std::string& key) const { return records_.at(key); }
  void kill_record(uint64_t rec) {
    uint64_t dead = w::record_state(++version_, w::kRecordDead);
    __atomic_store_n(reinterpret_cast<uint64_t*>(base_ + rec), dead, __ATOMIC_RELEASE);
  }
  std::vector<ado::Callback> seen;
  std::string stale_key;  // iterate lists this key's record with an older version

  Result<std::string> on_callback(const ado::Callback& c) override {
    seen.push_back(c);
    switch (c.op) {
      case ado::CallbackOp::kPoolInfo: {
        farmem_ado_pool_info info{records_.size(), next_ - start_, end_ - start_};
        return std::string(reinterpret_cast<const char*>(&info), sizeof(info));
      }
      case ado::CallbackOp::kOpenKey: {
        if (!records_.contains(c.key)) return NotFound("no such key");
        return range_of(c.key);
      }
      case ado::CallbackOp::kCreateKey: {
        if (records_.contains(c.key)) return AlreadyExists("key exists");
        put(c.key, std::string(c.arg0, '\0'));
        return range_of(c.key);
      }
      case ado::CallbackOp::kResize: {
        if (!records_.contains(c.key)) return NotFound("no such key");
        std::string v = value(c.key);
        v.resize(c.arg0, '\0');
        put(c.key, v);
        return range_of(c.key);
      }
      case ado::CallbackOp::kUnlock:
        return std::string();
      case ado::CallbackOp::kIterate: {
        std::vector<std::pair<std::string, uint64_t>> all(records_.begin(), records_.end());
        ado::IterateReply r{};
        std::string refs;
        uint64_t i = c.arg0;
        for (; i < all.size() && r.count < c.arg1; ++i, ++r.count) {
          w::KvRecordHeader h{};
          std::memcpy(&h, base_ + all[i].second, sizeof(h));
          ado::RecordRef ref{all[i].second, h.version - (all[i].first == stale_key ? 1 : 0)};
          refs.append(reinterpret_cast<const char*>(&ref), sizeof(ref));
        }
        r.next_cursor = i >= all.size() ? UINT64_MAX : i;
        return std::string(reinterpret_cast<const char*>(&r), sizeof(r)) + refs;
      }
      default:
        return InvalidArgument("the fake pool does not do that");
    }
  }

 private:
  std::string range_of(const std::string& key) const {
    uint64_t rec = records_.at(key);
    w::KvRecordHeader h{};
    std::memcpy(&h, base_ + rec, sizeof(h));
    ado::ValueRange v{rec + sizeof(h) + h.key_bytes, h.value_bytes};
    return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
  }

  uint8_t* base_;
  uint64_t start_, end_, next_;
  uint64_t version_ = 0;
  std::map<std::string, uint64_t> records_;
};

// The responses of a reply (KvAdoReply + responses), as (layer, bytes).
std::vector<std::pair<uint32_t, std::string>> responses_of(const std::string& reply) {
  std::vector<std::pair<uint32_t, std::string>> out;
  w::KvAdoReply head{};
  std::memcpy(&head, reply.data(), sizeof(head));
  size_t at = sizeof(head);
  for (uint32_t i = 0; i < head.responses; ++i) {
    w::KvAdoResponse r{};
    std::memcpy(&r, reply.data() + at, sizeof(r));
    at += sizeof(r);
    out.emplace_back(r.layer, reply.substr(at, r.bytes));
    at += (r.bytes + 7) / 8 * 8;
  }
  return out;
}

int32_t plugin_status_of(const std::string& reply) {
  w::KvAdoReply head{};
  std::memcpy(&head, reply.data(), sizeof(head));
  return head.plugin_status;
}

class AdoProcessTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kPoolBytes = 4 << 20;

  void SetUp() override { start_node("sm,tcp"); }
  void TearDown() override {
    for (auto& p : processes_) p.reset();
    cluster_.reset();
    server_.reset();
  }

  void start_node(const std::string& tls) {
    ServerOptions o;
    o.tls = tls;
    server_ = ServerProcess::start(o);
    ASSERT_NE(server_, nullptr);
    auto c = client::Cluster::connect(config_for({server_.get()}, "sm,tcp"));
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cluster_ = std::move(*c);
    client_ = *cluster_->thread_client();
    node_ = cluster_->nodes().front().node_id;
    if (tls != "sm,tcp") return;
    auto a = client_->run(client_->allocate_on(node_, kPoolBytes, 4096));
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    uint8_t* base = client_->endpoint(node_)->direct_base();
    ASSERT_NE(base, nullptr) << "the test needs shared memory with its node";
    pool_ = std::make_unique<FakePool>(base, a->offset(), kPoolBytes);
  }

  AdoProcessOptions settings(uint32_t timeout_ms = 5000) const {
    AdoProcessOptions s;
    s.program = FARMEM_ADO_BIN;
    s.plugin_dir = FARMEM_ADO_PLUGIN_DIR;
    s.node_address = server_->address();
    s.timeout_ms = timeout_ms;
    s.launch_timeout_ms = 20000;
    s.stop_grace_ms = 1000;
    return s;
  }

  ado::Launch launch(std::vector<std::string> plugins,
                     std::vector<std::pair<std::string, std::string>> params = {}) const {
    ado::Launch l;
    l.pool_name = "pool1";
    l.pool_capacity_bytes = kPoolBytes;
    l.region_bytes = cluster_->nodes().front().region_bytes;
    l.node_id = node_;
    l.plugin_paths = std::move(plugins);
    l.params = std::move(params);
    return l;
  }

  // Drives p (as a pool's worker would) until `done` or a hang guard of real time passes.
  bool drive(AdoProcess* p, const std::function<bool()>& done, int limit_ms = 30000) {
    auto stop = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
    while (!done()) {
      if (std::chrono::steady_clock::now() > stop) return false;
      pollfd f{p->fd(), POLLIN, 0};
      ::poll(&f, 1, 5);
      if (f.revents != 0) p->on_readable(now_ns());
      p->poll(now_ns());
    }
    return true;
  }

  // Spawns and waits for the launch; returns the launch status.
  Status start(AdoProcess** out, const AdoProcessOptions& s, const ado::Launch& l) {
    auto p = AdoProcess::spawn(s, l, pool_.get(), now_ns());
    if (!p.ok()) return p.status();
    std::optional<Status> launched;
    (*p)->on_launched([&launched](const Status& st) { launched = st; });
    processes_.push_back(std::move(*p));
    *out = processes_.back().get();
    if (!drive(*out, [&] { return launched.has_value(); })) return Internal("launch hung");
    return *launched;
  }

  // One work, driven to its end.
  Result<ado::Done> work(AdoProcess* p, const std::string& request, const std::string& key = {},
                         uint32_t flags = 0) {
    ado::Work wk;
    wk.work_id = ++work_id_;
    wk.flags = flags;
    wk.key = key;
    wk.request = request;
    if (!key.empty()) {
      wk.value_count = 1;
      std::string v = pool_->value(key);
      uint64_t rec = pool_->record_of(key);
      wk.values[0] = {rec + sizeof(w::KvRecordHeader) + key.size(), v.size()};
    }
    std::optional<Result<ado::Done>> out;
    p->start_work(wk, now_ns(), [&out](Result<ado::Done> r) { out.emplace(std::move(r)); });
    if (!drive(p, [&] { return out.has_value(); })) return Internal("work hung");
    return std::move(*out);
  }

  // Waits until the process is reaped.
  void expect_reaped(AdoProcess* p) {
    EXPECT_TRUE(drive(
        p, [p] { return p->reaped(); }, 10000))
        << "ADO process not reaped";
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Cluster> cluster_;
  client::ThreadClient* client_ = nullptr;
  uint16_t node_ = 0;
  std::unique_ptr<FakePool> pool_;
  std::vector<std::unique_ptr<AdoProcess>> processes_;
  uint64_t work_id_ = 0;
};

TEST_F(AdoProcessTest, CounterWorksInPlaceAndThroughCallbacks) {
  uint64_t zero = 0;
  pool_->put("ctr", std::string(reinterpret_cast<const char*>(&zero), 8));
  pool_->put("log", "ab");
  AdoProcess* p = nullptr;
  ASSERT_TRUE(start(&p, settings(), launch({"libfarmem_ado_counter.so"})).ok());
  for (int i = 1; i <= 3; ++i) {
    auto d = work(p, "add:" + std::to_string(10 * i), "ctr");
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ(plugin_status_of(d->reply), 0);
    EXPECT_EQ(responses_of(d->reply).at(0).second, std::to_string(5 * i * (i + 1)));
  }
  int64_t count = 0;
  std::memcpy(&count, pool_->value("ctr").data(), 8);
  EXPECT_EQ(count, 60) << "the plugin wrote the node's memory in place";
  auto d = work(p, "append:cdef", "log");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(pool_->value("log"), "abcdef") << "resize through a callback, then in place";
  d = work(p, "keys", "");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(responses_of(d->reply).at(0).second, "2");
  d = work(p, "no such request");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->flags & ado::kDoneNotHandled, ado::kDoneNotHandled);
  p->stop(now_ns());
  EXPECT_TRUE(drive(p, [p] { return p->dead(); }));
  EXPECT_TRUE(p->failure().ok()) << "a clean stop: " << p->failure().to_string();
  EXPECT_TRUE(p->reaped());
}

TEST_F(AdoProcessTest, FilterAggregatesRecordsInPlace) {
  std::mt19937_64 rng(test_seed());
  ado_filter::Query q;
  std::string error;
  const std::string query = "top5 0 where 1 ge 500 prefix rec";
  ASSERT_TRUE(ado_filter::parse_query(query, &q, &error)) << error;
  ado_filter::Accumulator expect(q);
  for (int i = 0; i < 3000; ++i) {
    std::string key = fmt::format("{}{:06}", i % 10 == 0 ? "other" : "rec", i);
    int64_t fields[8];
    for (auto& f : fields) f = static_cast<int64_t>(rng() % 1000) - 100;
    std::string value(reinterpret_cast<const char*>(fields), i % 97 == 0 ? 8 : sizeof(fields));
    pool_->put(key, value);
    if (expect.key_matches(key)) {
      expect.add(key, reinterpret_cast<const uint8_t*>(value.data()), value.size());
    }
  }
  AdoProcess* p = nullptr;
  ASSERT_TRUE(
      start(&p, settings(), launch({"libfarmem_ado_counter.so", "libfarmem_ado_filter.so"})).ok());
  auto d = work(p, query);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  auto rs = responses_of(d->reply);
  ASSERT_GE(rs.size(), 2u);
  EXPECT_EQ(rs[0].second, expect.summary());
  ado_filter::FilterResult got{};
  ASSERT_EQ(rs[1].second.size(), sizeof(got));
  std::memcpy(&got, rs[1].second.data(), sizeof(got));
  EXPECT_EQ(got.scanned, expect.result().scanned);
  EXPECT_EQ(got.matched, expect.result().matched);
  EXPECT_EQ(got.skipped, expect.result().skipped);
  EXPECT_EQ(got.sum, expect.result().sum);
  auto top = expect.top();
  ASSERT_EQ(rs.size(), 2 + top.size());
  for (size_t i = 0; i < top.size(); ++i) {
    int64_t v = 0;
    std::memcpy(&v, rs[2 + i].second.data(), 8);
    EXPECT_EQ(v, top[i].first);
    EXPECT_EQ(rs[2 + i].second.substr(8), top[i].second);
  }
  // A record that changed after it was listed (the listing names an older version) is read
  // again under a lock: the answer follows the store.
  int64_t big[2] = {1'000'000, 900};
  pool_->put("rec000001", std::string(reinterpret_cast<const char*>(big), sizeof(big)));
  pool_->stale_key = "rec000001";
  pool_->seen.clear();
  d = work(p, "max 0 prefix rec");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  rs = responses_of(d->reply);
  EXPECT_NE(rs.at(0).second.find("max=1000000"), std::string::npos) << rs.at(0).second;
  std::memcpy(&got, rs.at(1).second.data(), sizeof(got));
  EXPECT_EQ(got.rechecked, 1u);
  bool opened = false;
  for (const auto& c : pool_->seen) opened |= c.op == ado::CallbackOp::kOpenKey;
  EXPECT_TRUE(opened);
}

TEST_F(AdoProcessTest, ResponsesAreBounded) {
  AdoProcess* p = nullptr;
  ASSERT_TRUE(start(&p, settings(), launch({"libfarmem_ado_testing.so"})).ok());
  auto d = work(p, "respond:10");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(responses_of(d->reply).size(), 10u);
  d = work(p, "respond:80");  // 80 KiB: the plugin gets kResourceExhausted and returns it
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(plugin_status_of(d->reply), FARMEM_ADO_E_EXHAUSTED);
  EXPECT_LE(d->reply.size(), ado::kMaxReplyBytes);
  d = work(p, "status:-42");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(plugin_status_of(d->reply), -42);
  d = work(p, "erase-me");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->flags, ado::kDoneEraseTarget);
  d = work(p, "echo:still here");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(responses_of(d->reply).at(0).second, "still here");
}

TEST_F(AdoProcessTest, CrashGivesUnavailableAndTheNextProcessWorks) {
  AdoProcess* p = nullptr;
  ASSERT_TRUE(start(&p, settings(), launch({"libfarmem_ado_testing.so"})).ok());
  auto d = work(p, "abort");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("pool 'pool1'"), std::string::npos) << d.status().to_string();
  EXPECT_NE(d.status().message().find("libfarmem_ado_testing.so"), std::string::npos);
  EXPECT_NE(d.status().message().find("signal 6"), std::string::npos) << d.status().to_string();
  EXPECT_TRUE(p->dead());
  expect_reaped(p);
  AdoProcess* fresh = nullptr;
  ASSERT_TRUE(start(&fresh, settings(), launch({"libfarmem_ado_testing.so"})).ok());
  d = work(fresh, "echo:again");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(responses_of(d->reply).at(0).second, "again");
}

TEST_F(AdoProcessTest, HangPastTheDeadlineIsKilled) {
  AdoProcess* p = nullptr;
  ASSERT_TRUE(start(&p, settings(300), launch({"libfarmem_ado_testing.so"})).ok());
  auto d = work(p, "hang");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kTimedOut);
  EXPECT_NE(d.status().message().find("pool 'pool1'"), std::string::npos);
  EXPECT_NE(d.status().message().find("300 ms"), std::string::npos) << d.status().to_string();
  expect_reaped(p);
}

TEST_F(AdoProcessTest, KillNineAndSigstopMidInvocation) {
  AdoProcess* p = nullptr;
  ASSERT_TRUE(start(&p, settings(1000), launch({"libfarmem_ado_testing.so"})).ok());
  auto pid = work(p, "pid");
  ASSERT_TRUE(pid.ok());
  pid_t ado_pid = std::stoi(responses_of(pid->reply).at(0).second);
  EXPECT_EQ(ado_pid, p->pid());
  ado::Work wk;
  wk.work_id = ++work_id_;
  wk.request = "sleep:5000";
  std::optional<Result<ado::Done>> out;
  p->start_work(wk, now_ns(), [&out](Result<ado::Done> r) { out.emplace(std::move(r)); });
  drive(
      p, [] { return false; }, 50);  // the work is on its way
  ::kill(ado_pid, SIGKILL);
  ASSERT_TRUE(drive(p, [&] { return out.has_value(); }));
  ASSERT_FALSE(out->ok());
  EXPECT_EQ(out->status().code(), StatusCode::kUnavailable);
  EXPECT_NE(out->status().message().find("signal 9"), std::string::npos)
      << out->status().to_string();
  expect_reaped(p);

  AdoProcess* q = nullptr;
  ASSERT_TRUE(start(&q, settings(1000), launch({"libfarmem_ado_testing.so"})).ok());
  wk.work_id = ++work_id_;
  out.reset();
  q->start_work(wk, now_ns(), [&out](Result<ado::Done> r) { out.emplace(std::move(r)); });
  ::kill(q->pid(), SIGSTOP);
  ASSERT_TRUE(drive(q, [&] { return out.has_value(); }));
  ASSERT_FALSE(out->ok());
  EXPECT_EQ(out->status().code(), StatusCode::kTimedOut) << out->status().to_string();
  expect_reaped(q);  // SIGKILL ends a stopped process too

  AdoProcess* r = nullptr;
  ASSERT_TRUE(start(&r, settings(1000), launch({"libfarmem_ado_testing.so"})).ok());
  auto d = work(r, "echo:fine");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
}

TEST_F(AdoProcessTest, PluginsThatDoNotLoadOrRefuseToLaunch) {
  AdoProcess* p = nullptr;
  Status s = start(&p, settings(), launch({"libnot_there.so"}));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("libnot_there.so"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("pool 'pool1'"), std::string::npos) << s.to_string();
  expect_reaped(p);

  // A file that is not a shared library.
  std::string dir = std::filesystem::temp_directory_path() / fmt::format("ado-{}", getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/libjunk.so") << "not an ELF file";
  AdoProcessOptions junk = settings();
  junk.plugin_dir = dir;
  s = start(&p, junk, launch({"libjunk.so"}));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("cannot load ADO plugin"), std::string::npos) << s.to_string();
  std::filesystem::remove_all(dir);

  s = start(&p, settings(), launch({"libfarmem_ado_testing.so"}, {{"refuse_launch", "no way"}}));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("no way"), std::string::npos) << s.to_string();

  // Names are file names: no paths.
  EXPECT_EQ(start(&p, settings(), launch({"../libfarmem_ado_testing.so"})).code(),
            StatusCode::kInvalidArgument);
  AdoProcessOptions missing = settings();
  missing.program = "/nonexistent/farmem-ado";
  EXPECT_EQ(start(&p, missing, launch({"libfarmem_ado_testing.so"})).code(),
            StatusCode::kUnavailable);

  s = start(&p, settings(), launch({"libfarmem_ado_testing.so"}, {{"a", "1"}}));
  ASSERT_TRUE(s.ok()) << s.to_string();
  auto d = work(p, "params");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(responses_of(d->reply).at(0).second, "a=1\n");
}

TEST_F(AdoProcessTest, JunkOnTheChannelKillsTheProcess) {
  // A "farmem-ado" that writes junk to its channel: the node's side refuses it.
  std::string dir = std::filesystem::temp_directory_path() / fmt::format("ado-junk-{}", getpid());
  std::filesystem::create_directories(dir);
  std::string script = dir + "/fake-ado";
  std::ofstream(script) << "#!/bin/sh\nprintf 'junk!' >&3\nexec sleep 30\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  AdoProcessOptions s = settings();
  s.program = script;
  AdoProcess* p = nullptr;
  Status st = start(&p, s, launch({"libfarmem_ado_testing.so"}));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("malformed"), std::string::npos) << st.to_string();
  expect_reaped(p);
  std::filesystem::remove_all(dir);
}

TEST_F(AdoProcessTest, StopLetsTheWorkFinishKillNowDoesNot) {
  AdoProcess* p = nullptr;
  ASSERT_TRUE(start(&p, settings(), launch({"libfarmem_ado_testing.so"})).ok());
  ado::Work wk;
  wk.work_id = ++work_id_;
  wk.request = "sleep:200";
  std::optional<Result<ado::Done>> out;
  p->start_work(wk, now_ns(), [&out](Result<ado::Done> r) { out.emplace(std::move(r)); });
  p->stop(now_ns());  // a pool closed while an invocation runs: it is answered first
  ASSERT_TRUE(drive(p, [&] { return out.has_value(); }));
  ASSERT_TRUE(out->ok()) << out->status().to_string();
  ASSERT_TRUE(drive(p, [p] { return p->dead() && p->reaped(); }));
  EXPECT_TRUE(p->failure().ok()) << p->failure().to_string();

  AdoProcess* q = nullptr;
  ASSERT_TRUE(start(&q, settings(), launch({"libfarmem_ado_testing.so"})).ok());
  wk.work_id = ++work_id_;
  wk.request = "sleep:10000";
  out.reset();
  q->start_work(wk, now_ns(), [&out](Result<ado::Done> r) { out.emplace(std::move(r)); });
  q->kill_now(Unavailable("pool deleted"));  // the pool's memory is about to go
  EXPECT_TRUE(q->reaped()) << "nothing can write the pool's memory any more";
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status().message(), "pool deleted");
}

TEST_F(AdoProcessTest, EventsReachThePlugins) {
  AdoProcess* p = nullptr;
  ASSERT_TRUE(start(&p, settings(), launch({"libfarmem_ado_testing.so"})).ok());
  p->send_event(FARMEM_ADO_EVENT_OPEN, {});
  p->send_event(FARMEM_ADO_EVENT_ERASE, "gone");
  auto d = work(p, "events");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(responses_of(d->reply).at(0).second, "event 2\nevent 4 gone\n");
}

// A node whose UCX context has no shared memory cannot be mapped: the launch says so.
TEST(AdoProcessNoShm, RefusesToLaunchWithoutAMapping) {
  ServerOptions o;
  o.tls = "tcp";
  auto server = ServerProcess::start(o);
  ASSERT_NE(server, nullptr);
  AdoProcessOptions s;
  s.program = FARMEM_ADO_BIN;
  s.plugin_dir = FARMEM_ADO_PLUGIN_DIR;
  s.node_address = server->address();
  ado::Launch l;
  l.pool_name = "p";
  l.plugin_paths = {"libfarmem_ado_testing.so"};
  struct NoCallbacks : AdoCallbacks {
    Result<std::string> on_callback(const ado::Callback&) override { return Internal("none"); }
  } none;
  auto p = AdoProcess::spawn(s, l, &none, now_ns());
  ASSERT_TRUE(p.ok());
  std::optional<Status> launched;
  (*p)->on_launched([&launched](const Status& st) { launched = st; });
  auto stop = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!launched && std::chrono::steady_clock::now() < stop) {
    pollfd f{(*p)->fd(), POLLIN, 0};
    ::poll(&f, 1, 5);
    (*p)->on_readable(now_ns());
  }
  ASSERT_TRUE(launched.has_value());
  EXPECT_EQ(launched->code(), StatusCode::kUnavailable);
  EXPECT_NE(launched->message().find("shared memory"), std::string::npos) << launched->to_string();
}

}  // namespace
}  // namespace farmem::testing
