// Unit tests for fabric::validate_request_header (wire format: farmem/fabric/wire.h).
#include "farmem/fabric/rpc.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace farmem::fabric {
namespace {

wire::RpcHeader GoodHeader(uint32_t payload_bytes) {
  wire::RpcHeader h{};
  h.magic = wire::kRpcMagic;
  h.version = wire::kProtocolVersion;
  h.opcode = static_cast<uint16_t>(wire::Opcode::kEcho);
  h.request_id = 0x1122334455667788ull;
  h.payload_bytes = payload_bytes;
  h.status = 0;
  h.reserved = 0;
  return h;
}

TEST(ValidateRequestHeaderTest, AcceptsAWellFormedHeader) {
  wire::RpcHeader h = GoodHeader(24);
  wire::RpcHeader out;
  Status s = validate_request_header(&h, sizeof(h), 24, &out);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(out.magic, wire::kRpcMagic);
  EXPECT_EQ(out.version, wire::kProtocolVersion);
  EXPECT_EQ(out.opcode, static_cast<uint16_t>(wire::Opcode::kEcho));
  EXPECT_EQ(out.request_id, 0x1122334455667788ull);
  EXPECT_EQ(out.payload_bytes, 24u);
}

TEST(ValidateRequestHeaderTest, AcceptsEmptyAndMaximalPayloads) {
  wire::RpcHeader out;
  wire::RpcHeader empty = GoodHeader(0);
  EXPECT_TRUE(validate_request_header(&empty, sizeof(empty), 0, &out).ok());
  wire::RpcHeader max = GoodHeader(wire::kMaxRpcPayloadBytes);
  EXPECT_TRUE(validate_request_header(&max, sizeof(max), wire::kMaxRpcPayloadBytes, &out).ok());
}

TEST(ValidateRequestHeaderTest, ReadsAnUnalignedHeader) {
  wire::RpcHeader h = GoodHeader(8);
  std::vector<unsigned char> buffer(sizeof(h) + 1);
  std::memcpy(buffer.data() + 1, &h, sizeof(h));
  wire::RpcHeader out;
  EXPECT_TRUE(validate_request_header(buffer.data() + 1, sizeof(h), 8, &out).ok());
  EXPECT_EQ(out.request_id, h.request_id);
}

TEST(ValidateRequestHeaderTest, ShortHeaderIsAProtocolError) {
  wire::RpcHeader h = GoodHeader(0);
  wire::RpcHeader out;
  std::memset(&out, 0xFF, sizeof(out));
  Status s = validate_request_header(&h, sizeof(h) - 1, 0, &out);
  EXPECT_EQ(s.code(), StatusCode::kProtocolError);
  EXPECT_NE(s.message().find("31"), std::string_view::npos) << s.message();
  EXPECT_NE(s.message().find("32"), std::string_view::npos) << s.message();
  // The bytes that did arrive are copied; the rest is zeroed.
  EXPECT_EQ(out.magic, wire::kRpcMagic);
  EXPECT_EQ(out.reserved & 0xFF00000000000000ull, 0u);
}

TEST(ValidateRequestHeaderTest, LongHeaderIsAProtocolError) {
  std::vector<unsigned char> buffer(sizeof(wire::RpcHeader) + 8, 0);
  wire::RpcHeader h = GoodHeader(0);
  std::memcpy(buffer.data(), &h, sizeof(h));
  wire::RpcHeader out;
  Status s = validate_request_header(buffer.data(), buffer.size(), 0, &out);
  EXPECT_EQ(s.code(), StatusCode::kProtocolError);
  EXPECT_EQ(out.request_id, h.request_id);  // only the first 32 bytes are read
}

TEST(ValidateRequestHeaderTest, EmptyHeaderIsAProtocolErrorAndZeroesTheOutput) {
  wire::RpcHeader out;
  std::memset(&out, 0xFF, sizeof(out));
  unsigned char dummy = 0;
  Status s = validate_request_header(&dummy, 0, 0, &out);
  EXPECT_EQ(s.code(), StatusCode::kProtocolError);
  EXPECT_EQ(out.magic, 0u);
  EXPECT_EQ(out.request_id, 0u);
}

TEST(ValidateRequestHeaderTest, BadMagicIsAProtocolError) {
  wire::RpcHeader h = GoodHeader(0);
  h.magic = 0xDEADBEEF;
  wire::RpcHeader out;
  Status s = validate_request_header(&h, sizeof(h), 0, &out);
  EXPECT_EQ(s.code(), StatusCode::kProtocolError);
  EXPECT_NE(s.message().find("0xdeadbeef"), std::string_view::npos) << s.message();
  EXPECT_EQ(out.request_id, h.request_id);  // still filled for the error reply
}

TEST(ValidateRequestHeaderTest, ByteSwappedMagicIsRejected) {
  wire::RpcHeader h = GoodHeader(0);
  h.magic = __builtin_bswap32(wire::kRpcMagic);
  wire::RpcHeader out;
  EXPECT_EQ(validate_request_header(&h, sizeof(h), 0, &out).code(), StatusCode::kProtocolError);
}

TEST(ValidateRequestHeaderTest, OtherProtocolVersionIsAVersionMismatch) {
  for (uint16_t version : {uint16_t{0}, uint16_t{wire::kProtocolVersion + 1}, uint16_t{0xFFFF}}) {
    SCOPED_TRACE(version);
    wire::RpcHeader h = GoodHeader(0);
    h.version = version;
    wire::RpcHeader out;
    Status s = validate_request_header(&h, sizeof(h), 0, &out);
    EXPECT_EQ(s.code(), StatusCode::kVersionMismatch);
    EXPECT_NE(s.message().find("v" + std::to_string(version)), std::string_view::npos)
        << s.message();
    EXPECT_EQ(out.request_id, h.request_id);
    EXPECT_EQ(out.version, version);
  }
}

TEST(ValidateRequestHeaderTest, PayloadSizeMismatchIsAProtocolError) {
  wire::RpcHeader out;
  wire::RpcHeader h = GoodHeader(100);
  Status fewer = validate_request_header(&h, sizeof(h), 99, &out);
  EXPECT_EQ(fewer.code(), StatusCode::kProtocolError);
  EXPECT_NE(fewer.message().find("100"), std::string_view::npos) << fewer.message();
  EXPECT_NE(fewer.message().find("99"), std::string_view::npos) << fewer.message();
  EXPECT_EQ(validate_request_header(&h, sizeof(h), 101, &out).code(), StatusCode::kProtocolError);
  EXPECT_EQ(validate_request_header(&h, sizeof(h), 0, &out).code(), StatusCode::kProtocolError);
}

TEST(ValidateRequestHeaderTest, OversizePayloadIsRejected) {
  const uint32_t too_big = wire::kMaxRpcPayloadBytes + 1;
  wire::RpcHeader h = GoodHeader(too_big);
  wire::RpcHeader out;
  Status s = validate_request_header(&h, sizeof(h), too_big, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(std::to_string(too_big)), std::string_view::npos) << s.message();
  EXPECT_EQ(out.request_id, h.request_id);
}

TEST(ValidateRequestHeaderTest, ChecksRunInOrderSizeMagicVersionPayload) {
  wire::RpcHeader out;
  // Bad magic and bad version: the magic is reported.
  wire::RpcHeader h = GoodHeader(5);
  h.magic = 0;
  h.version = 99;
  EXPECT_EQ(validate_request_header(&h, sizeof(h), 6, &out).code(), StatusCode::kProtocolError);
  // Bad version and payload mismatch: the version is reported.
  h = GoodHeader(5);
  h.version = 99;
  EXPECT_EQ(validate_request_header(&h, sizeof(h), 6, &out).code(), StatusCode::kVersionMismatch);
}

}  // namespace
}  // namespace farmem::fabric

namespace farmem::fabric {
namespace {

TEST(ValidateRequestHeaderTest, NonZeroStatusOrReservedFieldsAreProtocolErrors) {
  wire::RpcHeader h{};
  h.magic = wire::kRpcMagic;
  h.version = wire::kProtocolVersion;
  h.opcode = static_cast<uint16_t>(wire::Opcode::kEcho);
  wire::RpcHeader out;
  wire::RpcHeader with_status = h;
  with_status.status = 3;
  EXPECT_EQ(validate_request_header(&with_status, sizeof(h), 0, &out).code(),
            StatusCode::kProtocolError);
  wire::RpcHeader with_reserved = h;
  with_reserved.reserved = 1;
  EXPECT_EQ(validate_request_header(&with_reserved, sizeof(h), 0, &out).code(),
            StatusCode::kProtocolError);
  EXPECT_TRUE(validate_request_header(&h, sizeof(h), 0, &out).ok());
}

}  // namespace
}  // namespace farmem::fabric
