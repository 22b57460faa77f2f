// A durable pool's recovery (ServerPool::recover) after the node lost what it had not logged:
// a seeded run of puts, erases and in-place writes records every region range the pool marked
// and every heap block it took or gave back, in log order; recovery then runs on the region as
// a log cut at an operation's boundary or inside it would leave it. Every operation finished
// before the cut must be there, the one cut through is either whole or absent, and the
// recovered pool keeps working without overwriting anything.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kv/service/record.h"
#include "kv/service/server_pool.h"
#include "kv_test_region.h"
#include "test_knob.h"
#include "test_seed.h"

namespace farmem::kv::service {
namespace {

namespace w = farmem::kv::wire;
using testing::TestRegion;

constexpr uint64_t kRegionBytes = 8 << 20;
constexpr uint64_t kCapacity = 4 << 20;  // 256 KiB chunks: values past 64 KiB are large blocks
constexpr uint64_t kObject = w::kPoolSlotMask + 1;  // any id: the header just has to match

// One entry of the pool's log: region bytes, or a heap block taken (+) or given back (-).
struct Entry {
  enum Kind { kRange, kTake, kGiveBack } kind;
  uint64_t offset;
  uint64_t bytes;
  std::string data;  // kRange: the bytes as logged
};

// Heap blocks of a TestRegion, logged as they come and go; a block goes back only after what
// was marked before it is logged (the shard's before_free).
class LoggedSource final : public MemorySource {
 public:
  LoggedSource(TestRegion& region, std::function<void()> before_free, std::vector<Entry>* log)
      : inner_(region), before_free_(std::move(before_free)), log_(log) {}
  Result<Block> take(uint64_t bytes) override {
    auto b = inner_.take(bytes);
    if (b.ok() && log_ != nullptr) log_->push_back({Entry::kTake, b->offset, b->bytes, {}});
    return b;
  }
  void give_back(uint64_t offset) override {
    if (before_free_) before_free_();
    if (log_ != nullptr) log_->push_back({Entry::kGiveBack, offset, 0, {}});
    inner_.give_back(offset);
  }

 private:
  TestRegion::Source inner_;
  std::function<void()> before_free_;
  std::vector<Entry>* log_;
};

using Model = std::map<std::string, std::string>;

// The keys on which two models differ (for failure messages).
std::string diff(const Model& a, const Model& b) {
  std::string out;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end())
      out += " -" + k;
    else if (it->second != v)
      out +=
          " ~" + k + "(" + std::to_string(v.size()) + "/" + std::to_string(it->second.size()) + ")";
  }
  for (const auto& [k, v] : b) {
    if (a.count(k) == 0) out += " +" + k;
  }
  return out;
}

std::string value_of(uint64_t n, size_t bytes) {
  std::string v(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<char>((n * 131 + i * 7) & 0xFF);
  return v;
}

// The pool's keys and values as the region holds them.
Model read_all(const ServerPool& pool, RegionView region) {
  Model m;
  pool.for_each_key([&](std::string_view key, const KeyInfo& k) {
    m[std::string(key)] =
        std::string(reinterpret_cast<const char*>(region.at(k.value)), k.value_bytes);
  });
  return m;
}

class PoolLog {
 public:
  explicit PoolLog(uint64_t seed) : rng_(seed) {
    auto source = std::make_unique<LoggedSource>(
        region_, [this] { flush(); }, &log_);
    pool_ = std::make_unique<ServerPool>("p", 1, kObject, kCapacity, region_.view(),
                                         std::move(source), versions_, 0, summary_);
    pool_->make_durable(&dirty_, false);
    EXPECT_TRUE(pool_->init(0, 0).ok());
    flush();
    models_.push_back(Model{});
    ends_.push_back(log_.size());
  }

  // One seeded operation and what it logged.
  void step(int i) {
    Model next = models_.back();
    const std::string key = "key" + std::to_string(rng_() % 200);
    const uint64_t dice = rng_() % 100;
    const uint64_t now = static_cast<uint64_t>(i) * 1000;
    if (dice < 60) {
      const size_t bytes = dice < 2 ? 70'000 + rng_() % 1000 : rng_() % 300;
      const std::string v = value_of(rng_(), bytes);
      KeyInfo out;
      bool existed;
      ASSERT_TRUE(
          pool_->put(key, v.data(), static_cast<uint32_t>(v.size()), 0, now, &out, &existed).ok());
      next[key] = v;
    } else if (dice < 80) {
      if (pool_->erase(key, now).ok()) next.erase(key);
    } else if (next.count(key) != 0) {
      // A locked in-place write of the value's first bytes, then release.
      auto g = pool_->lock(7, key, w::LocateMode::kWrite, 0, 0, 0, now);
      ASSERT_TRUE(g.ok()) << g.status().to_string();
      const std::string patch = value_of(rng_(), std::min<size_t>(g->length, 16));
      std::memcpy(region_.view().at(g->address), patch.data(), patch.size());
      ASSERT_TRUE(pool_->release(7, g->token, 0, now).ok());
      next[key].replace(0, patch.size(), patch);
    }
    flush();
    models_.push_back(std::move(next));
    ends_.push_back(log_.size());
  }

  // Recovers from the log cut after `cut` entries on a fresh region; checks it against the
  // models: `op` is the operation the cut falls in (its end is at or after the cut).
  void check_cut(size_t cut, bool keep_working) {
    size_t op = 0;
    while (ends_[op] < cut) ++op;
    TestRegion image(kRegionBytes);
    std::vector<MemorySource::Block> blocks;
    for (size_t e = 0; e < cut; ++e) apply(image, log_[e], &blocks);
    const std::optional<PoolMeta> meta = find_header(image, blocks);
    if (!meta) {
      ASSERT_LE(cut, ends_[0]) << "only a cut before the pool's creation loses its header";
      return;
    }
    std::atomic<uint64_t> versions{1};
    Versions v(versions);
    DirtyRanges dirty;
    auto pool =
        std::make_unique<ServerPool>("p", 1, kObject, meta->capacity_bytes, image.view(),
                                     std::make_unique<LoggedSource>(image, nullptr, nullptr), v, 0,
                                     std::make_shared<PoolSummary>());
    pool->make_durable(&dirty, false);
    auto r = pool->recover(*meta, header_at_, {}, blocks);
    ASSERT_TRUE(r.ok()) << r.status().to_string() << " cut " << cut;
    const Model got = read_all(*pool, image.view());
    const bool whole = ends_[op] == cut;
    if (got != models_[op]) {
      ASSERT_FALSE(whole) << "cut " << cut << " at the end of op " << op << " lost a change";
      ASSERT_GT(op, 0u);
      ASSERT_TRUE(got == models_[op - 1])
          << "cut " << cut << " inside op " << op << ": against the op's start"
          << diff(models_[op - 1], got) << "; against its end" << diff(models_[op], got);
    }
    if (keep_working) check_keeps_working(*pool, image, got, &versions);
  }

  size_t log_size() const { return log_.size(); }
  const std::vector<size_t>& ends() const { return ends_; }

 private:
  void flush() {
    for (const DirtyRanges::Range& r : dirty_.take()) {
      log_.push_back(
          {Entry::kRange, r.offset, r.bytes,
           std::string(reinterpret_cast<const char*>(region_.view().at(r.offset)), r.bytes)});
    }
  }
  static void apply(TestRegion& image, const Entry& e, std::vector<MemorySource::Block>* blocks) {
    switch (e.kind) {
      case Entry::kRange:
        std::memcpy(image.view().at(e.offset), e.data.data(), e.bytes);
        break;
      case Entry::kTake:
        ASSERT_TRUE(image.heap().allocate_at(e.offset, e.bytes).ok());
        blocks->push_back({e.offset, e.bytes});
        break;
      case Entry::kGiveBack:
        ASSERT_TRUE(image.heap().free(e.offset).ok());
        std::erase_if(*blocks, [&](const auto& b) { return b.offset == e.offset; });
        break;
    }
  }
  std::optional<PoolMeta> find_header(TestRegion& image,
                                      const std::vector<MemorySource::Block>& blocks) {
    std::optional<PoolMeta> best;
    for (const auto& b : blocks) {
      if (b.bytes < kPoolHeaderBlockBytes) continue;
      auto m = read_pool_header(image.view().at(b.offset), kObject);
      if (m.ok() && (!best || m->sequence > best->sequence)) {
        best = std::move(*m);
        header_at_ = b.offset;
      }
    }
    return best;
  }
  // More puts on the recovered pool: nothing it held is overwritten.
  void check_keeps_working(ServerPool& pool, TestRegion& image, Model model,
                           std::atomic<uint64_t>* versions) {
    for (int i = 0; i < 300; ++i) {
      const std::string key = "new" + std::to_string(i);
      const std::string v = value_of(i, i % 250);
      KeyInfo out;
      bool existed;
      ASSERT_TRUE(
          pool.put(key, v.data(), static_cast<uint32_t>(v.size()), 0, 1, &out, &existed).ok());
      model[key] = v;
    }
    ASSERT_EQ(read_all(pool, image.view()), model);
    (void)versions;
  }

  std::mt19937_64 rng_;
  TestRegion region_{kRegionBytes};
  std::atomic<uint64_t> shared_versions_{1};
  Versions versions_{shared_versions_};
  std::shared_ptr<PoolSummary> summary_ = std::make_shared<PoolSummary>();
  DirtyRanges dirty_;
  std::unique_ptr<ServerPool> pool_;
  std::vector<Entry> log_;
  std::vector<Model> models_;  // after each operation (0: the empty pool)
  std::vector<size_t> ends_;   // log size after each operation
  uint64_t header_at_ = 0;
};

// FARMEM_KV_CUT_OPS operations (default 1500), cut at every FARMEM_KV_CUT_STRIDE-th operation
// boundary (default 7; 1 = every one) and at 150 random points.
TEST(KvPoolRecoveryTest, EveryCutOfTheLogRecoversTheAcknowledgedPool) {
  const uint64_t seed = farmem::testing::test_seed();
  const uint64_t ops = farmem::testing::test_knob("FARMEM_KV_CUT_OPS", 1500);
  const uint64_t stride = farmem::testing::test_knob("FARMEM_KV_CUT_STRIDE", 7);
  PoolLog run(seed);
  for (uint64_t i = 0; i < ops; ++i) {
    ASSERT_NO_FATAL_FAILURE(run.step(static_cast<int>(i))) << "seed " << seed;
  }
  std::mt19937_64 rng(seed ^ 0x5eed);
  std::vector<size_t> cuts;
  for (size_t op = 0; op < run.ends().size(); op += stride) cuts.push_back(run.ends()[op]);
  for (int i = 0; i < 150; ++i) cuts.push_back(rng() % (run.log_size() + 1));
  cuts.push_back(run.log_size());
  for (size_t k = 0; k < cuts.size(); ++k) {
    ASSERT_NO_FATAL_FAILURE(run.check_cut(cuts[k], k % 25 == 0))
        << "seed " << seed << " cut " << cuts[k];
  }
}

}  // namespace
}  // namespace farmem::kv::service
