// Unit tests for farmem::Status and farmem::Result<T>.
#include "farmem/common/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "farmem/common/result.h"

namespace farmem {
namespace {

TEST(StatusTest, DefaultConstructedStatusIsOkWithNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_TRUE(s.message().empty());
  EXPECT_EQ(s.to_string(), "OK");
}

TEST(StatusTest, OkStatusHelpersAreOk) {
  EXPECT_TRUE(OkStatus().ok());
  EXPECT_TRUE(Status::ok_status().ok());
  EXPECT_EQ(Status::ok_status().code(), StatusCode::kOk);
}

TEST(StatusTest, OkCodeDropsAnyMessage) {
  Status s(StatusCode::kOk, "ignored");
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(s.message().empty());
  EXPECT_EQ(s.to_string(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s(StatusCode::kTimedOut, "read did not complete");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kTimedOut);
  EXPECT_EQ(s.message(), "read did not complete");
  EXPECT_EQ(s.to_string(), "TimedOut: read did not complete");
}

TEST(StatusTest, ErrorWithoutMessagePrintsOnlyTheCodeName) {
  Status s(StatusCode::kNotFound, "");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.message().empty());
  EXPECT_EQ(s.to_string(), "NotFound");
}

struct FactoryCase {
  Status (*factory)(std::string_view);
  StatusCode code;
  const char* name;
};

TEST(StatusTest, EveryFactoryProducesItsCodeAndName) {
  const std::vector<FactoryCase> cases = {
      {InvalidArgument, StatusCode::kInvalidArgument, "InvalidArgument"},
      {OutOfRange, StatusCode::kOutOfRange, "OutOfRange"},
      {NotFound, StatusCode::kNotFound, "NotFound"},
      {AlreadyExists, StatusCode::kAlreadyExists, "AlreadyExists"},
      {ResourceExhausted, StatusCode::kResourceExhausted, "ResourceExhausted"},
      {TimedOut, StatusCode::kTimedOut, "TimedOut"},
      {PeerFailed, StatusCode::kPeerFailed, "PeerFailed"},
      {ProtocolError, StatusCode::kProtocolError, "ProtocolError"},
      {VersionMismatch, StatusCode::kVersionMismatch, "VersionMismatch"},
      {Unavailable, StatusCode::kUnavailable, "Unavailable"},
      {Internal, StatusCode::kInternal, "Internal"},
      {Cancelled, StatusCode::kCancelled, "Cancelled"},
  };
  for (const FactoryCase& c : cases) {
    SCOPED_TRACE(c.name);
    Status s = c.factory("msg");
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.message(), "msg");
    EXPECT_EQ(status_code_name(c.code), c.name);
    EXPECT_EQ(s.to_string(), std::string(c.name) + ": msg");
  }
}

TEST(StatusTest, CodeNamesCoverOkAndUnknownValues) {
  EXPECT_EQ(status_code_name(StatusCode::kOk), "OK");
  EXPECT_EQ(status_code_name(static_cast<StatusCode>(200)), "Unknown");
}

TEST(StatusTest, CodesHaveTheirDocumentedNumericValues) {
  // The numeric values travel on the wire (RpcHeader::status) and must not change.
  EXPECT_EQ(static_cast<int>(StatusCode::kOk), 0);
  EXPECT_EQ(static_cast<int>(StatusCode::kInvalidArgument), 1);
  EXPECT_EQ(static_cast<int>(StatusCode::kOutOfRange), 2);
  EXPECT_EQ(static_cast<int>(StatusCode::kNotFound), 3);
  EXPECT_EQ(static_cast<int>(StatusCode::kAlreadyExists), 4);
  EXPECT_EQ(static_cast<int>(StatusCode::kResourceExhausted), 5);
  EXPECT_EQ(static_cast<int>(StatusCode::kTimedOut), 6);
  EXPECT_EQ(static_cast<int>(StatusCode::kPeerFailed), 7);
  EXPECT_EQ(static_cast<int>(StatusCode::kProtocolError), 8);
  EXPECT_EQ(static_cast<int>(StatusCode::kVersionMismatch), 9);
  EXPECT_EQ(static_cast<int>(StatusCode::kUnavailable), 10);
  EXPECT_EQ(static_cast<int>(StatusCode::kInternal), 11);
  EXPECT_EQ(static_cast<int>(StatusCode::kCancelled), 12);
}

TEST(StatusTest, CopyConstructionDeepCopiesTheMessage) {
  Status original = NotFound("no root named 'x'");
  Status copy(original);
  EXPECT_EQ(copy.code(), StatusCode::kNotFound);
  EXPECT_EQ(copy.message(), "no root named 'x'");
  // The copy owns its own storage: it survives the original.
  const char* copy_data = copy.message().data();
  EXPECT_NE(copy_data, original.message().data());
  original = OkStatus();
  EXPECT_TRUE(original.ok());
  EXPECT_EQ(copy.message(), "no root named 'x'");
}

TEST(StatusTest, CopyAssignmentReplacesCodeAndMessage) {
  Status a = TimedOut("slow");
  Status b = PeerFailed("dead");
  a = b;
  EXPECT_EQ(a.code(), StatusCode::kPeerFailed);
  EXPECT_EQ(a.message(), "dead");
  EXPECT_EQ(b.message(), "dead");
  // Assigning a message-less status clears the message.
  a = Status(StatusCode::kInternal, "");
  EXPECT_EQ(a.code(), StatusCode::kInternal);
  EXPECT_TRUE(a.message().empty());
}

TEST(StatusTest, SelfCopyAssignmentKeepsTheStatus) {
  Status a = Internal("boom");
  Status& alias = a;
  a = alias;
  EXPECT_EQ(a.code(), StatusCode::kInternal);
  EXPECT_EQ(a.message(), "boom");
}

TEST(StatusTest, MoveTransfersCodeAndMessage) {
  Status a = ResourceExhausted("queue full");
  Status b(std::move(a));
  EXPECT_EQ(b.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(b.message(), "queue full");
  Status c;
  c = std::move(b);
  EXPECT_EQ(c.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.message(), "queue full");
}

TEST(StatusTest, OkStatusIsSmall) {
  // One byte of code plus one pointer (padded).
  EXPECT_LE(sizeof(Status), 2 * sizeof(void*));
}

Status FailIfNegative(int v) {
  if (v < 0) return InvalidArgument("negative");
  return OkStatus();
}

Status ChainWithReturnIfError(int v, bool* reached_end) {
  FARMEM_TRY(FailIfNegative(v));
  *reached_end = true;
  return OkStatus();
}

TEST(StatusTest, ReturnIfErrorReturnsEarlyOnlyOnFailure) {
  bool reached = false;
  Status bad = ChainWithReturnIfError(-1, &reached);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(reached);
  Status good = ChainWithReturnIfError(1, &reached);
  EXPECT_TRUE(good.ok());
  EXPECT_TRUE(reached);
}

// ---- Result<T> ----

TEST(ResultTest, HoldsAValue) {
  Result<int> r = 42;
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.status().ok());
  EXPECT_EQ(r.value(), 42);
  EXPECT_EQ(*r, 42);
}

TEST(ResultTest, HoldsAnErrorStatus) {
  Result<int> r = NotFound("nothing here");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "nothing here");
}

TEST(ResultTest, ValueIsMutableThroughReferenceAndArrow) {
  Result<std::string> r = std::string("abc");
  r.value() += "d";
  EXPECT_EQ(*r, "abcd");
  EXPECT_EQ(r->size(), 4u);
  const Result<std::string>& cr = r;
  EXPECT_EQ(cr.value(), "abcd");
  EXPECT_EQ(cr->front(), 'a');
}

TEST(ResultTest, RvalueValueMovesOutMoveOnlyTypes) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
}

TEST(ResultTest, CopiesKeepValueOrError) {
  Result<std::string> good = std::string("x");
  Result<std::string> good_copy = good;
  EXPECT_TRUE(good_copy.ok());
  EXPECT_EQ(*good_copy, "x");
  Result<std::string> bad = TimedOut("late");
  Result<std::string> bad_copy = bad;
  EXPECT_FALSE(bad_copy.ok());
  EXPECT_EQ(bad_copy.status().code(), StatusCode::kTimedOut);
  EXPECT_EQ(bad_copy.status().message(), "late");
}

Result<int> HalfOfEven(int v) {
  if (v % 2 != 0) return InvalidArgument("odd");
  return v / 2;
}

Status UseReturnIfErrorWithResultStatus(int v, int* out) {
  Result<int> r = HalfOfEven(v);
  FARMEM_TRY(r.status());
  *out = *r;
  return OkStatus();
}

TEST(ResultTest, StatusOfResultPropagatesThroughReturnIfError) {
  int out = 0;
  EXPECT_TRUE(UseReturnIfErrorWithResultStatus(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = UseReturnIfErrorWithResultStatus(3, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out, 4);
}

}  // namespace
}  // namespace farmem
