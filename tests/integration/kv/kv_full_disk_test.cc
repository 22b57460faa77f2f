// A durable node whose disk fills up under kv puts, on a real (small) tmpfs: the put that
// cannot be logged fails with kResourceExhausted naming the data directory, so do the shard's
// later requests, the node stays up, and after the disk has room again a restart brings back
// every acknowledged put. Needs root (mount); the test runs as root in CI and says so otherwise.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "durable_node.h"
#include "farmem/kv/pool.h"
#include "farmem/kv/store.h"
#include "harness.h"

namespace farmem::testing {
namespace {

using kv::Pool;
using kv::Store;
namespace w = kv::wire;

// A tmpfs of `size` mounted at `path` for the test's lifetime.
class Tmpfs {
 public:
  Tmpfs(std::string path, const std::string& size) : path_(std::move(path)) {
    std::filesystem::create_directories(path_);
    const std::string options = "size=" + size;
    if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      error_ = fmt::format("mount tmpfs at {}: {}", path_, std::strerror(errno));
    }
  }
  ~Tmpfs() {
    if (error_.empty()) ::umount2(path_.c_str(), MNT_DETACH);
  }
  const std::string& error() const { return error_; }
  bool resize(const std::string& size) {
    const std::string options = "size=" + size;
    return ::mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT, options.c_str()) == 0;
  }

 private:
  std::string path_;
  std::string error_;
};

class KvFullDiskTest : public ::testing::TestWithParam<Transport> {};

TEST_P(KvFullDiskTest, AFullDiskFailsPutsClearlyAndLosesNothingAcknowledged) {
  DurableNode node(GetParam().tls, 64ull << 20);
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  Tmpfs disk(node.dir() + "/data", "4m");
  ASSERT_TRUE(disk.error().empty()) << disk.error();
  std::string why;
  ASSERT_TRUE(node.start(&why, "power", "64MiB")) << why;  // no checkpoint: the log fills it
  auto store = Store::open(&node.client(), kv::StoreOptions{});
  ASSERT_TRUE(store.ok());
  auto pool = node.client().run((*store)->create_pool("full", 32ull << 20, 0, 0));
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  const std::string value(1000, 'v');
  uint64_t acked = 0;
  Status failed;
  for (; acked < 100'000; ++acked) {
    failed = node.client().run((*pool)->put(fmt::format("k{:06}", acked), value));
    if (!failed.ok()) break;
  }
  ASSERT_FALSE(failed.ok()) << "4 MiB of log never filled up";
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted) << failed.to_string();
  EXPECT_NE(failed.to_string().find(node.dir() + "/data"), std::string::npos) << failed.to_string();
  // The shard takes nothing more; the node itself still answers.
  const Status again = node.client().run((*pool)->put("after", "x"));
  EXPECT_EQ(again.code(), StatusCode::kResourceExhausted) << again.to_string();
  EXPECT_TRUE(node.client().run(node.client().stats(0)).ok());
  pool->reset();
  store->reset();
  node.kill();

  ASSERT_TRUE(disk.resize("64m"));
  ASSERT_TRUE(node.start(&why, "power", "64MiB")) << why;
  auto store2 = Store::open(&node.client(), kv::StoreOptions{});
  ASSERT_TRUE(store2.ok());
  auto reopened = node.client().run((*store2)->open_pool("full"));
  ASSERT_TRUE(reopened.ok()) << reopened.status().to_string();
  for (uint64_t k = 0; k < acked; ++k) {
    std::string v;
    auto got = node.client().run((*reopened)->get(fmt::format("k{:06}", k), &v));
    ASSERT_TRUE(got.ok() && *got) << "acknowledged key " << k << " of " << acked << " is gone";
    ASSERT_EQ(v, value);
  }
  ASSERT_TRUE(node.client().run((*reopened)->put("after", "x")).ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, KvFullDiskTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
