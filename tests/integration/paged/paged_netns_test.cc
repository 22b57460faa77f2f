// A paged region whose memory node is on another "host" (a network namespace over a veth pair,
// UCX forced to TCP): writes survive eviction, the traffic counters see the pages.
#include <gtest/gtest.h>

#include <cstdint>

#include "farmem/paged/page_manager.h"
#include "two_hosts.h"

namespace farmem::testing {
namespace {

class PagedNetnsTest : public TwoHostTest {};

TEST_F(PagedNetnsTest, RegionOverAnotherHostKeepsEveryWrite) {
  auto cluster = client::Cluster::connect(config());
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  paged::PageManagerOptions mo;
  mo.local_bytes = 256 << 10;
  auto m = paged::PageManager::create(**cluster, mo);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  paged::RegionOptions ro;
  ro.advice = paged::Advice::kSequential;
  auto r = (*m)->allocate(2 << 20, ro);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto* w = static_cast<uint64_t*>((*r)->data());
  const uint64_t n = (*r)->size() / 8;
  for (uint64_t i = 0; i < n; ++i) w[i] = i * 3 + 1;
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(w[i], i * 3 + 1) << i;
  const paged::ManagerStats s = (*m)->stats();
  EXPECT_GT(s.total.evictions, 0u);
  ASSERT_FALSE(s.traffic.empty());
  EXPECT_EQ(s.traffic[0].path, "host->memnode");
  EXPECT_GE(s.traffic[0].bytes, s.total.bytes_fetched + s.total.bytes_written_back);
  EXPECT_GT(s.traffic[0].messages, 0u);
  m->reset();
}

}  // namespace
}  // namespace farmem::testing
