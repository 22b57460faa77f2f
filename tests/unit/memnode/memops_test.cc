// Unit tests for execute_memops' persist operation: its copy is the range as it was at its place
// in the message, a volatile node (no copy list) checks and ignores it, and a malformed persist
// changes nothing.
#include "farmem/memnode/memops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "farmem/fabric/wire.h"
#include "memops_request.h"

namespace farmem::memnode {
namespace {

namespace w = farmem::wire;

constexpr uint64_t kRegionBytes = 4 << 20;

using Request = MemopsRequest;

class MemOpsPersistTest : public ::testing::Test {
 protected:
  Status run(const Request& r, std::vector<PersistCopy>* copies) {
    std::string reply;
    return execute_memops(region_.data(), kRegionBytes,
                          reinterpret_cast<const uint8_t*>(r.bytes.data()), r.bytes.size(), &reply,
                          copies);
  }
  std::string at(uint64_t offset, size_t n) const {
    return std::string(reinterpret_cast<const char*>(region_.data()) + offset, n);
  }
  std::vector<uint8_t> region_ = std::vector<uint8_t>(kRegionBytes, 0);
};

TEST_F(MemOpsPersistTest, ACopyIsTheRangeAtItsPlaceInTheMessage) {
  Request r;
  r.op(w::MemOpKind::kWrite, 8192, 8, "aaaaaaaa")
      .op(w::MemOpKind::kPersist, 8192, 8)
      .op(w::MemOpKind::kWrite, 8192, 8, "bbbbbbbb")
      .op(w::MemOpKind::kPersist, 8188, 16);
  std::vector<PersistCopy> copies;
  ASSERT_TRUE(run(r, &copies).ok());
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].offset, 8192u);
  EXPECT_EQ(copies[0].bytes, "aaaaaaaa");
  EXPECT_EQ(copies[1].offset, 8188u);
  EXPECT_EQ(copies[1].bytes, std::string(4, '\0') + "bbbbbbbb" + std::string(4, '\0'));
  EXPECT_EQ(at(8192, 8), "bbbbbbbb");
}

TEST_F(MemOpsPersistTest, AVolatileNodeChecksPersistsAndKeepsNothing) {
  Request r;
  r.op(w::MemOpKind::kWrite, 8192, 8, "cccccccc").op(w::MemOpKind::kPersist, 8192, 8);
  ASSERT_TRUE(run(r, nullptr).ok());
  EXPECT_EQ(at(8192, 8), "cccccccc");
  Request bad;
  bad.op(w::MemOpKind::kPersist, 0, 8);
  EXPECT_EQ(run(bad, nullptr).code(), StatusCode::kOutOfRange);
}

TEST_F(MemOpsPersistTest, AMalformedPersistChangesNothing) {
  const struct {
    uint64_t offset;
    uint32_t bytes;
    StatusCode code;
  } cases[] = {
      {8192, 0, StatusCode::kInvalidArgument},                             // empty
      {8192, w::kMaxMemOpPersistBytes + 1, StatusCode::kInvalidArgument},  // too long
      {100, 8, StatusCode::kOutOfRange},                                   // the reserved header
      {kRegionBytes - 4, 8, StatusCode::kOutOfRange},                      // past the region
  };
  for (const auto& c : cases) {
    Request r;
    r.op(w::MemOpKind::kWrite, 8192, 8, "dddddddd").op(w::MemOpKind::kPersist, c.offset, c.bytes);
    std::vector<PersistCopy> copies;
    EXPECT_EQ(run(r, &copies).code(), c.code) << c.offset << " " << c.bytes;
    EXPECT_TRUE(copies.empty());
    EXPECT_EQ(at(8192, 8), std::string(8, '\0')) << "the write ran";
  }
  // Operands on a persist, and persists adding up to more than a message may name.
  Request operands;
  operands.op(w::MemOpKind::kPersist, 8192, 8);
  operands.bytes[sizeof(w::MemOpsHeader) + 16] = 1;
  EXPECT_EQ(run(operands, nullptr).code(), StatusCode::kProtocolError);
  Request sum;
  sum.op(w::MemOpKind::kPersist, 8192, w::kMaxMemOpPersistBytes)
      .op(w::MemOpKind::kPersist, 8192, 8);
  EXPECT_EQ(run(sum, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farmem::memnode
