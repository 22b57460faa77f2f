// The paged service's file preload without a server: path checks, geometry and bounds,
// malformed requests.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "farmem/fabric/wire.h"
#include "farmem/memnode/config.h"
#include "farmem/paged/service.h"
#include "farmem/paged/wire.h"

namespace farmem::paged {
namespace {

namespace fs = std::filesystem;

class PagedServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("farmem-paged-unit-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "dir" / "sub");
    dir_ = (root_ / "dir").string();
    data_.resize(3 * 4096 + 100);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<char>(i * 7 + 1);
    std::ofstream(root_ / "dir" / "data.bin", std::ios::binary).write(data_.data(), data_.size());
    std::ofstream(root_ / "outside.bin") << "secret";
    fs::create_symlink(root_ / "outside.bin", root_ / "dir" / "escape");
    fs::create_symlink("data.bin", root_ / "dir" / "inside");
    mkfifo((root_ / "dir" / "fifo").c_str(), 0600);
    region_.assign(1 << 20, 0xAA);
  }
  void TearDown() override { fs::remove_all(root_); }

  Status stat(const std::string& dir, const std::string& name, wire::StatReply* reply) {
    std::string req(sizeof(wire::StatRequest), '\0');
    wire::StatRequest q{static_cast<uint32_t>(name.size()), 0};
    std::memcpy(req.data(), &q, sizeof q);
    req.append(name);
    std::string out;
    Status st = handle_paged_request(
        dir, region_.data(), region_.size(), static_cast<uint16_t>(wire::Op::kStat),
        reinterpret_cast<const uint8_t*>(req.data()), req.size(), &out);
    if (st.ok()) {
      EXPECT_EQ(out.size(), sizeof *reply);
      std::memcpy(reply, out.data(), sizeof *reply);
    }
    return st;
  }
  Status load(const std::string& name, wire::LoadRequest q) {
    q.name_bytes = static_cast<uint32_t>(name.size());
    std::string req(sizeof q, '\0');
    std::memcpy(req.data(), &q, sizeof q);
    req.append(name);
    std::string out;
    return handle_paged_request(dir_, region_.data(), region_.size(),
                                static_cast<uint16_t>(wire::Op::kLoad),
                                reinterpret_cast<const uint8_t*>(req.data()), req.size(), &out);
  }
  wire::LoadRequest good_request() {
    wire::StatReply s{};
    EXPECT_TRUE(stat(dir_, "data.bin", &s).ok());
    wire::LoadRequest q{};
    q.dst_offset = 8192;
    q.first_page = 1;
    q.expect_file_bytes = s.file_bytes;
    q.expect_mtime_ns = s.mtime_ns;
    q.page_stride = 2;
    q.page_count = 2;
    q.page_bytes = 4096;
    return q;
  }

  fs::path root_;
  std::string dir_;
  std::vector<char> data_;
  std::vector<uint8_t> region_;
};

TEST_F(PagedServiceTest, StatsAFileInThePreloadDir) {
  wire::StatReply s{};
  ASSERT_TRUE(stat(dir_, "data.bin", &s).ok());
  EXPECT_EQ(s.file_bytes, data_.size());
  EXPECT_NE(s.mtime_ns, 0u);
  ASSERT_TRUE(stat(dir_, "inside", &s).ok());  // a symlink that stays inside is followed
  EXPECT_EQ(s.file_bytes, data_.size());
}

TEST_F(PagedServiceTest, RefusesPathsOutsideTheDirectory) {
  wire::StatReply s{};
  const std::string abs = (root_ / "dir" / "data.bin").string();
  EXPECT_EQ(stat(dir_, abs, &s).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(stat(dir_, "../outside.bin", &s).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(stat(dir_, "sub/../../outside.bin", &s).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(stat(dir_, "escape", &s).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(stat(dir_, "sub", &s).code(), StatusCode::kPermissionDenied);   // a directory
  EXPECT_EQ(stat(dir_, "fifo", &s).code(), StatusCode::kPermissionDenied);  // not regular
  EXPECT_EQ(stat(dir_, "missing.bin", &s).code(), StatusCode::kNotFound);
  EXPECT_EQ(stat("", "data.bin", &s).code(), StatusCode::kPermissionDenied);  // no preload_dir
  EXPECT_EQ(stat(dir_, "", &s).code(), StatusCode::kInvalidArgument);
}

TEST_F(PagedServiceTest, LoadsStridedPagesAndZeroFillsPastTheEnd) {
  wire::LoadRequest q = good_request();
  ASSERT_TRUE(load("data.bin", q).ok());
  // Destination page 0 = file page 1; destination page 1 = file page 3 (100 bytes, then 0).
  EXPECT_EQ(std::memcmp(region_.data() + 8192, data_.data() + 4096, 4096), 0);
  EXPECT_EQ(std::memcmp(region_.data() + 12288, data_.data() + 3 * 4096, 100), 0);
  for (size_t i = 100; i < 4096; ++i) ASSERT_EQ(region_[12288 + i], 0) << i;
  EXPECT_EQ(region_[8191], 0xAA);  // nothing outside the destination was touched
  EXPECT_EQ(region_[16384], 0xAA);
}

TEST_F(PagedServiceTest, RejectsBadGeometryBoundsAndChangedFiles) {
  wire::LoadRequest q = good_request();
  q.dst_offset = 0;  // the region's reserved header
  EXPECT_EQ(load("data.bin", q).code(), StatusCode::kOutOfRange);
  q = good_request();
  q.dst_offset = region_.size() - 4096;  // runs past the end
  EXPECT_EQ(load("data.bin", q).code(), StatusCode::kOutOfRange);
  q = good_request();
  q.page_bytes = 3000;
  EXPECT_EQ(load("data.bin", q).code(), StatusCode::kInvalidArgument);
  q = good_request();
  q.page_count = static_cast<uint32_t>(wire::kMaxLoadBytes / 4096 + 1);
  EXPECT_EQ(load("data.bin", q).code(), StatusCode::kInvalidArgument);
  q = good_request();
  q.page_stride = 0;
  EXPECT_EQ(load("data.bin", q).code(), StatusCode::kInvalidArgument);
  q = good_request();
  q.expect_file_bytes += 1;
  EXPECT_EQ(load("data.bin", q).code(), StatusCode::kAborted);
  q = good_request();
  EXPECT_EQ(load("../outside.bin", q).code(), StatusCode::kPermissionDenied);
  // Malformed: short, name length disagreeing with the payload, unknown opcode.
  std::string out;
  const uint8_t junk[4] = {1, 2, 3, 4};
  EXPECT_FALSE(handle_paged_request(dir_, region_.data(), region_.size(),
                                    static_cast<uint16_t>(wire::Op::kLoad), junk, sizeof junk, &out)
                   .ok());
  EXPECT_FALSE(handle_paged_request(dir_, region_.data(), region_.size(), wire::kLastOpcode, junk,
                                    sizeof junk, &out)
                   .ok());
  wire::StatRequest sq{100, 0};
  EXPECT_FALSE(handle_paged_request(dir_, region_.data(), region_.size(),
                                    static_cast<uint16_t>(wire::Op::kStat),
                                    reinterpret_cast<const uint8_t*>(&sq), sizeof sq, &out)
                   .ok());
}

}  // namespace
}  // namespace farmem::paged

namespace farmem::paged {
namespace {

TEST(PreloadConfigTest, PreloadDirIsAnAbsolutePathOrUnset) {
  auto none = memnode::ServerConfig::from_toml_string("[memnode]\nnode_id = 1\n");
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(none->preload_dir, "");
  auto good = memnode::ServerConfig::from_toml_string(
      "[memnode]\nnode_id = 1\npreload_dir = \"/srv/preload\"\n");
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  EXPECT_EQ(good->preload_dir, "/srv/preload");
  auto relative = memnode::ServerConfig::from_toml_string(
      "[memnode]\nnode_id = 1\npreload_dir = \"srv/preload\"\n");
  EXPECT_FALSE(relative.ok() && relative->validate().ok());
}

}  // namespace
}  // namespace farmem::paged
