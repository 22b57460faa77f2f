// Unit tests for kCall operations of execute_memops: a procedure runs at its place in the
// message, an unknown or failing procedure is the call's own result (the rest of the message
// runs), a malformed call rejects the whole message before anything changes, and a procedure
// that overruns its slot is reported, not trusted.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "farmem/fabric/wire.h"
#include "farmem/memnode/memops.h"
#include "farmem/memnode/procedure.h"
#include "memops_request.h"

namespace farmem::memnode {
namespace {

namespace w = farmem::wire;

constexpr uint64_t kRegionBytes = 1 << 20;
constexpr uint16_t kCopy = 7;     // copies 8 region bytes at the offset its argument names
constexpr uint16_t kFail = 8;     // fails with kBusy
constexpr uint16_t kOverrun = 9;  // claims more result bytes than its slot holds

Result<size_t> copy_proc(const ProcedureCall& c) {
  uint64_t offset = 0;
  if (c.args_bytes != 8) return InvalidArgument("copy takes an offset");
  std::memcpy(&offset, c.args, 8);
  if (offset > c.region_bytes - 8 || c.out_capacity < 8) return OutOfRange("copy offset");
  std::memcpy(c.out, c.region + offset, 8);
  return size_t{8};
}
Result<size_t> fail_proc(const ProcedureCall&) { return Busy("procedure says no"); }
Result<size_t> overrun_proc(const ProcedureCall& c) { return c.out_capacity + 1; }

// MemopsRequest with a write and a call of one 8-byte argument.
struct Request : MemopsRequest {
  Request& write(uint64_t offset, std::string_view data) {
    op(w::MemOpKind::kWrite, offset, static_cast<uint32_t>(data.size()), data);
    return *this;
  }
  Request& call(uint64_t id, uint64_t arg, uint64_t reply_bytes = 24, uint64_t offset = 0) {
    std::string a(8, '\0');
    std::memcpy(a.data(), &arg, 8);
    add({static_cast<uint8_t>(w::MemOpKind::kCall), 0, 0, 8, offset, id, reply_bytes}, a);
    return *this;
  }
};

class MemOpsCallTest : public ::testing::Test {
 protected:
  MemOpsCallTest() {
    EXPECT_TRUE(table_.add({kCopy, "copy", &copy_proc}).ok());
    EXPECT_TRUE(table_.add({kFail, "fail", &fail_proc}).ok());
    EXPECT_TRUE(table_.add({kOverrun, "overrun", &overrun_proc}).ok());
  }
  Status run(const Request& r, std::string* reply) {
    const MemopsTarget t{region_.data(), kRegionBytes, &table_};
    return execute_memops(t, reinterpret_cast<const uint8_t*>(r.bytes.data()), r.bytes.size(),
                          reply);
  }
  // The reply slot at `at`: its header and body.
  static w::CallReplyHeader header_at(const std::string& reply, size_t at, std::string* body) {
    w::CallReplyHeader h;
    std::memcpy(&h, reply.data() + at, sizeof(h));
    *body = reply.substr(at + sizeof(h), h.bytes);
    return h;
  }
  std::vector<uint8_t> region_ = std::vector<uint8_t>(kRegionBytes, 0);
  ProcedureTable table_;
};

TEST(ProcedureTableTest, RefusesIdZeroNullFunctionsAndTakenIds) {
  ProcedureTable t;
  EXPECT_EQ(t.add({0, "zero", &fail_proc}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.add({3, "null", nullptr}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(t.add({5, "five", &fail_proc}).ok());
  ASSERT_TRUE(t.add({2, "two", &copy_proc}).ok());
  EXPECT_EQ(t.add({5, "again", &copy_proc}).code(), StatusCode::kInvalidArgument);
  ASSERT_NE(t.find(2), nullptr);
  EXPECT_EQ(t.find(2)->name, "two");
  EXPECT_EQ(t.find(5)->name, "five");
  EXPECT_EQ(t.find(4), nullptr);
  EXPECT_EQ(t.find(70000), nullptr);
}

TEST_F(MemOpsCallTest, ACallSeesTheWritesBeforeItAndNotThoseAfter) {
  Request r;
  r.write(4096, "firstval").call(kCopy, 4096).write(4096, "secondvl").call(kCopy, 4096);
  std::string reply;
  ASSERT_TRUE(run(r, &reply).ok());
  ASSERT_EQ(reply.size(), 48u);
  std::string body;
  EXPECT_EQ(header_at(reply, 0, &body).code, 0);
  EXPECT_EQ(body, "firstval");
  EXPECT_EQ(header_at(reply, 24, &body).code, 0);
  EXPECT_EQ(body, "secondvl");
}

TEST_F(MemOpsCallTest, UnknownAndFailingProceduresAnswerInTheirSlotAndTheRestRuns) {
  Request r;
  r.call(42, 0).call(kFail, 0).write(4096, "afterall").call(kOverrun, 0);
  std::string reply;
  ASSERT_TRUE(run(r, &reply).ok());
  std::string body;
  EXPECT_EQ(header_at(reply, 0, &body).code, static_cast<uint16_t>(StatusCode::kNotFound));
  EXPECT_NE(body.find("no procedure 42"), std::string::npos) << body;
  EXPECT_EQ(header_at(reply, 24, &body).code, static_cast<uint16_t>(StatusCode::kBusy));
  EXPECT_EQ(body, "procedure says n");  // the message, cut to the 16 bytes of the slot
  EXPECT_EQ(header_at(reply, 48, &body).code, static_cast<uint16_t>(StatusCode::kInternal));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(region_.data()) + 4096, 8), "afterall");
}

TEST_F(MemOpsCallTest, AMalformedCallRejectsTheWholeMessageFirst) {
  const struct {
    uint64_t id, reply_bytes, offset;
    StatusCode code;
  } cases[] = {
      {0, 24, 0, StatusCode::kInvalidArgument},           // no procedure id
      {70000, 24, 0, StatusCode::kInvalidArgument},       // id out of range
      {kCopy, 20, 0, StatusCode::kInvalidArgument},       // slot not a multiple of 8
      {kCopy, 0, 0, StatusCode::kInvalidArgument},        // no room for the header
      {kCopy, 1 << 20, 0, StatusCode::kInvalidArgument},  // slot too large
      {kCopy, 24, 4096, StatusCode::kProtocolError},      // calls carry no offset
  };
  for (const auto& c : cases) {
    Request r;
    r.write(8192, "untouchd").call(c.id, 0, c.reply_bytes, c.offset);
    std::string reply;
    EXPECT_EQ(run(r, &reply).code(), c.code) << c.id << " " << c.reply_bytes << " " << c.offset;
    EXPECT_EQ(region_[8192], 0) << "nothing ran";
  }
}

TEST_F(MemOpsCallTest, WithoutAProcedureTableEveryCallIsUnknown) {
  Request r;
  r.call(kCopy, 0);
  std::string reply;
  const MemopsTarget t{region_.data(), kRegionBytes, nullptr};
  ASSERT_TRUE(
      execute_memops(t, reinterpret_cast<const uint8_t*>(r.bytes.data()), r.bytes.size(), &reply)
          .ok());
  std::string body;
  EXPECT_EQ(header_at(reply, 0, &body).code, static_cast<uint16_t>(StatusCode::kNotFound));
}

}  // namespace
}  // namespace farmem::memnode
