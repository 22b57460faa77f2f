// File-preloaded regions (contents, striping, sharing one remote copy, refused paths) and the
// failure of a memory node under a faulting process (the documented exit, no hang).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "paged/fault_exit.h"
#include "paged_fixture.h"
#include "test_seed.h"

namespace farmem::testing {
namespace {

namespace fs = std::filesystem;
using paged::PageManagerOptions;
using paged::Region;
using paged::RegionOptions;

class PagedPreloadTest : public PagedTest {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("farmem-paged-it-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "pre");
    std::mt19937_64 rng(test_seed());
    data_.resize((3 << 20) + 12345);
    for (auto& b : data_) b = static_cast<char>(rng());
    std::ofstream(root_ / "pre" / "input.bin", std::ios::binary).write(data_.data(), data_.size());
    std::ofstream(root_ / "secret.bin") << "secret";
    fs::create_symlink(root_ / "secret.bin", root_ / "pre" / "escape");
  }
  void TearDown() override {
    PagedTest::TearDown();
    fs::remove_all(root_);
  }
  std::vector<std::string> preload_args() { return {"--preload-dir", (root_ / "pre").string()}; }

  fs::path root_;
  std::vector<char> data_;
};

TEST_P(PagedPreloadTest, PreloadedRegionHoldsTheFileStripedOverNodes) {
  PageManagerOptions mo;
  mo.local_bytes = 512 << 10;
  start(mo, 2, preload_args());
  RegionOptions o;
  o.share_file = false;
  auto r = manager_->allocate_from_file("input.bin", o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  Region* region = *r;
  EXPECT_EQ(region->size(), (data_.size() + 65535) / 65536 * 65536);
  ASSERT_EQ(region->layout().stripes.size(), 2u);
  auto* mem = static_cast<const char*>(region->data());
  ASSERT_EQ(std::memcmp(mem, data_.data(), data_.size()), 0);
  for (size_t i = data_.size(); i < region->size(); ++i) ASSERT_EQ(mem[i], 0) << i;
  EXPECT_GE(region->stats().bytes_fetched, data_.size());
  // Writable like any region: a write survives eviction.
  static_cast<char*>(region->data())[100] = 'x';
  for (size_t i = 0; i < data_.size(); i += 4096) ASSERT_EQ(mem[i], i == 0 ? data_[0] : data_[i]);
  EXPECT_EQ(mem[100], 'x');
  EXPECT_TRUE(manager_->free(region).ok());
}

TEST_P(PagedPreloadTest, TwoManagersShareOneRemoteCopy) {
  PageManagerOptions mo;
  mo.local_bytes = 512 << 10;
  start(mo, 2, preload_args());
  auto a = manager_->allocate_from_file("input.bin");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  // A second process's view: its own cluster connection and manager.
  std::vector<const ServerProcess*> list{servers_[0].get(), servers_[1].get()};
  auto c2 = client::Cluster::connect(config_for(list, GetParam().tls));
  ASSERT_TRUE(c2.ok());
  auto m2 = paged::PageManager::create(**c2, mo);
  ASSERT_TRUE(m2.ok());
  auto b = (*m2)->allocate_from_file("input.bin");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  ASSERT_EQ((*a)->layout().stripes, (*b)->layout().stripes);  // the same remote memory
  EXPECT_TRUE((*b)->layout().shared);
  ASSERT_EQ(std::memcmp((*b)->data(), data_.data(), data_.size()), 0);
  ASSERT_EQ(std::memcmp((*a)->data(), data_.data(), data_.size()), 0);
  m2->reset();
  c2->reset();
}

TEST_P(PagedPreloadTest, RefusedPreloadPaths) {
  PageManagerOptions mo;
  mo.local_bytes = 512 << 10;
  start(mo, 1, preload_args());
  const std::string abs = (root_ / "pre" / "input.bin").string();
  EXPECT_EQ(manager_->allocate_from_file(abs).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(manager_->allocate_from_file("../secret.bin").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(manager_->allocate_from_file("escape").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(manager_->allocate_from_file("nothing.bin").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(manager_->stats().regions.size(), 0u);
}

TEST_P(PagedPreloadTest, NodeWithoutPreloadDirRefuses) {
  PageManagerOptions mo;
  mo.local_bytes = 512 << 10;
  start(mo, 1);
  auto r = manager_->allocate_from_file("input.bin");
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status().to_string();
}

// Random advice, then sequential (installer threads mapping read-ahead when the node dies).
TEST_P(PagedPreloadTest, KilledNodeEndsAFaultingProcessWithTheDocumentedStatus) {
  for (const char* advice : {"random", "sequential"}) {
    SCOPED_TRACE(advice);
    ServerOptions o;
    o.tls = GetParam().tls;
    auto server = ServerProcess::start(o);
    ASSERT_NE(server, nullptr);
    std::vector<std::string> env = {"UCX_TLS=" + GetParam().tls};
    if (std::string(advice) == "sequential") env.push_back("FARMEM_CHILD_ADVICE=sequential");
    auto child =
        ChildProcess::start({FARMEM_PAGED_CHILD_BIN, server->address(), GetParam().tls}, env);
    ASSERT_NE(child, nullptr);
    ASSERT_EQ(child->wait_for_line("ready", 60'000), "ready") << child->output();
    server->signal(SIGKILL);
    const int status = child->wait_exit(60'000);  // a hang guard, not a measurement
    std::string out;
    ASSERT_NO_FATAL_FAILURE(expect_fault_exit(*child, status, &out));
    EXPECT_NE(out.find("region child-region"), std::string::npos) << out;
    EXPECT_NE(out.find("node 0"), std::string::npos) << out;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, PagedPreloadTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
