// The far service's handlers fed well-formed and malformed requests (far/service.h), the
// stride prefetcher and the manager's thresholds. No memory node: the handlers run on a local
// buffer standing in for a node's region.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "farmem/fabric/wire.h"
#include "farmem/far/object_manager.h"
#include "farmem/far/prefetcher.h"
#include "farmem/far/service.h"
#include "farmem/far/wire.h"
#include "test_seed.h"

namespace farmem::far {
namespace {

namespace w = far::wire;
constexpr uint64_t kRegion = 1 << 20;
constexpr uint64_t kBase = farmem::wire::kRegionHeaderBytes;

template <typename T>
void put(std::string* s, const T& v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

class FarServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_.assign(kRegion, 0);
    for (uint64_t i = 0; i < 1000; ++i) {
      const uint64_t v = i * 3 % 1000;
      std::memcpy(region_.data() + kBase + 8 * i, &v, 8);
    }
  }
  Status call(w::Op op, const std::string& req, std::string* out) {
    out->clear();
    return handle_far_request(region_.data(), kRegion, static_cast<uint16_t>(op),
                              reinterpret_cast<const uint8_t*>(req.data()), req.size(), out);
  }
  std::vector<uint8_t> region_;
};

std::string aggregate_request(uint64_t offset, uint32_t count) {
  std::string r;
  put(&r, w::AggregateRequest{static_cast<uint8_t>(w::ElemType::kU64), 0, 0, 0, 1, 0, 0});
  put(&r, w::Range{offset, count, 0});
  return r;
}

TEST_F(FarServiceTest, AggregateAndFilterAnswerWellFormedRequests) {
  std::string out;
  ASSERT_TRUE(call(w::Op::kAggregate, aggregate_request(kBase, 1000), &out).ok());
  ASSERT_EQ(out.size(), sizeof(w::AggregateCell));
  w::AggregateCell c;
  std::memcpy(&c, out.data(), sizeof(c));
  EXPECT_EQ(c.count, 1000u);
  EXPECT_EQ(c.sum, 499500u);  // i * 3 % 1000 is a permutation of 0..999
  EXPECT_EQ(c.min, 0u);
  EXPECT_EQ(c.max, 999u);

  std::string f;
  put(&f, w::FilterRequest{static_cast<uint8_t>(w::ElemType::kU64),
                           static_cast<uint8_t>(w::Pred::kLt), 0, 1, 10, 0});
  put(&f, w::Range{kBase, 1000, 0});
  ASSERT_TRUE(call(w::Op::kFilter, f, &out).ok());
  w::FilterReply fr;
  std::memcpy(&fr, out.data(), sizeof(fr));
  EXPECT_EQ(fr.total, 1000u);
  EXPECT_EQ(fr.matched, 10u);
}

TEST_F(FarServiceTest, MalformedRequestsGetErrors) {
  std::string out;
  // Ranges outside the region, in its header, empty, unaligned, reserved bits, too long.
  EXPECT_EQ(call(w::Op::kAggregate, aggregate_request(kRegion - 8, 2), &out).code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(call(w::Op::kAggregate, aggregate_request(0, 1), &out).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(call(w::Op::kAggregate, aggregate_request(UINT64_MAX - 7, 1), &out).code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(call(w::Op::kAggregate, aggregate_request(kBase, 0), &out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(call(w::Op::kAggregate, aggregate_request(kBase + 3, 1), &out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(call(w::Op::kAggregate, aggregate_request(kBase, w::kMaxScanElements + 1), &out).code(),
            StatusCode::kOutOfRange);  // longer than the region
  std::string r = aggregate_request(kBase, 1);
  r += "x";
  EXPECT_EQ(call(w::Op::kAggregate, r, &out).code(), StatusCode::kInvalidArgument);
  r = aggregate_request(kBase, 1);
  r.resize(r.size() - 1);
  EXPECT_EQ(call(w::Op::kAggregate, r, &out).code(), StatusCode::kInvalidArgument);
  r = aggregate_request(kBase, 1);
  r[0] = 9;  // element type
  EXPECT_EQ(call(w::Op::kAggregate, r, &out).code(), StatusCode::kInvalidArgument);
  r = aggregate_request(kBase, 1);
  r[sizeof(w::AggregateRequest) + 12] = 1;  // Range::reserved
  EXPECT_EQ(call(w::Op::kAggregate, r, &out).code(), StatusCode::kProtocolError);
  // Unknown opcode in the service's range; empty payloads.
  EXPECT_EQ(call(static_cast<w::Op>(383), "", &out).code(), StatusCode::kInvalidArgument);
  for (auto op :
       {w::Op::kAggregate, w::Op::kFilter, w::Op::kGather, w::Op::kHashLookup, w::Op::kTopK}) {
    EXPECT_FALSE(call(op, "", &out).ok());
  }
  // A gather index past the source; destination in the header.
  std::string g;
  put(&g, w::GatherRequest{8, 1, 1, 1});
  put(&g, w::Range{kBase, 10, 0});
  put(&g, uint32_t{10});
  put(&g, w::Range{kBase + 4096, 1, 0});
  EXPECT_EQ(call(w::Op::kGather, g, &out).code(), StatusCode::kOutOfRange);
  std::string g2;
  put(&g2, w::GatherRequest{8, 1, 1, 1});
  put(&g2, w::Range{kBase, 10, 0});
  put(&g2, uint32_t{1});
  put(&g2, w::Range{8, 1, 0});
  EXPECT_EQ(call(w::Op::kGather, g2, &out).code(), StatusCode::kOutOfRange);
  // Hash lookups with nonsense sizes.
  std::string h;
  put(&h, w::HashLookupRequest{0, 8, 8, 1});
  EXPECT_EQ(call(w::Op::kHashLookup, h, &out).code(), StatusCode::kInvalidArgument);
  std::string h2;
  put(&h2, w::HashLookupRequest{8, 8, 8, 1});
  put(&h2, uint64_t{1});
  put(&h2, uint64_t{kRegion});
  EXPECT_EQ(call(w::Op::kHashLookup, h2, &out).code(), StatusCode::kOutOfRange);
  // A predicate over columns of different lengths.
  std::string p;
  put(&p, w::AggregateRequest{1, static_cast<uint8_t>(w::Pred::kLt), 1, 0, 1, 5, 0});
  put(&p, w::Range{kBase, 10, 0});
  put(&p, w::Range{kBase, 11, 0});
  EXPECT_EQ(call(w::Op::kAggregate, p, &out).code(), StatusCode::kInvalidArgument);
}

// Random corruptions of valid requests: every answer is OK or an error, never a crash or a
// read outside the buffer (ASan checks the latter).
TEST_F(FarServiceTest, MutatedRequestsNeverCrash) {
  const uint64_t seed = farmem::testing::test_seed();
  std::mt19937_64 rng(seed);
  std::vector<std::pair<w::Op, std::string>> valid;
  valid.emplace_back(w::Op::kAggregate, aggregate_request(kBase, 100));
  std::string f;
  put(&f, w::FilterRequest{1, static_cast<uint8_t>(w::Pred::kIn), 0, 1, 5, 50});
  put(&f, w::Range{kBase, 100, 0});
  valid.emplace_back(w::Op::kFilter, f);
  std::string g;
  put(&g, w::GatherRequest{8, 1, 2, 1});
  put(&g, w::Range{kBase, 10, 0});
  put(&g, uint32_t{1});
  put(&g, uint32_t{2});
  put(&g, w::Range{kBase + 8192, 2, 0});
  valid.emplace_back(w::Op::kGather, g);
  std::string h;
  put(&h, w::HashLookupRequest{8, 8, 4, 2});
  put(&h, uint64_t{7});
  put(&h, uint64_t{kBase});
  put(&h, uint64_t{kBase + 128});
  valid.emplace_back(w::Op::kHashLookup, h);
  std::string t;
  put(&t, w::TopKRequest{3, 0, 4, 1});
  put(&t, w::Range{kBase, 100, 0});
  valid.emplace_back(w::Op::kTopK, t);
  std::string out;
  for (const auto& [op, req] : valid) ASSERT_TRUE(call(op, req, &out).ok());
  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto& [op, base] = valid[rng() % valid.size()];
    std::string req = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 3) {
        case 0:
          if (!req.empty()) req[rng() % req.size()] = static_cast<char>(rng());
          break;
        case 1:
          req.resize(rng() % (req.size() + 1));
          break;
        case 2:
          req.push_back(static_cast<char>(rng()));
          break;
      }
    }
    errors += !call(op, req, &out).ok();
  }
  EXPECT_GT(errors, 1000);
}

TEST(StridePrefetcherTest, StableStridesPrefetchAheadAndABreakStops) {
  StridePrefetcher p;
  int64_t first = 0, stride = 0;
  EXPECT_EQ(p.record(10, 4, &first, &stride), 0u);
  EXPECT_EQ(p.record(12, 4, &first, &stride), 0u);
  EXPECT_EQ(p.record(14, 4, &first, &stride), 0u);
  EXPECT_EQ(p.record(16, 4, &first, &stride), 4u);  // third equal stride
  EXPECT_EQ(first, 18);
  EXPECT_EQ(stride, 2);
  EXPECT_EQ(p.record(18, 4, &first, &stride), 1u);  // only the new chunk at the window's end
  EXPECT_EQ(first, 26);
  EXPECT_EQ(p.record(5, 4, &first, &stride), 0u);  // broken
  EXPECT_EQ(p.record(6, 4, &first, &stride), 0u);
  p.set_enabled(false);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(p.record(100 + i, 4, &first, &stride), 0u);
  EXPECT_EQ(StridePrefetcher::window_for(50'000, 1.0, 4096), 13u);
  EXPECT_EQ(StridePrefetcher::window_for(100, 8.0, 4096), 2u);
}

TEST(FarManagerTest, BudgetIsCutIntoSegmentsWithThresholds) {
  ObjectManagerOptions o;
  o.local_bytes = 16 << 20;
  auto m = ObjectManager::create(o);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->pool().segment_bytes(), 1u << 20);
  EXPECT_EQ((*m)->pool().total(), 16u);
  EXPECT_LT((*m)->admit_segments(), (*m)->low_segments());
  EXPECT_LT((*m)->low_segments(), (*m)->high_segments());
  EXPECT_EQ((*m)->max_object_bytes(), 512u << 10);
  o.local_bytes = 32 << 10;  // fewer than 4 segments
  EXPECT_EQ(ObjectManager::create(o).status().code(), StatusCode::kInvalidArgument);
  o.local_bytes = 1 << 20;
  o.segment_bytes = 3000;
  EXPECT_EQ(ObjectManager::create(o).status().code(), StatusCode::kInvalidArgument);
  uint8_t* s = (*m)->pool().take();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ((*m)->pool().free_segments(), 15u);
  (*m)->pool().give(s);
  EXPECT_EQ((*m)->pool().free_segments(), 16u);
}

}  // namespace
}  // namespace farmem::far
